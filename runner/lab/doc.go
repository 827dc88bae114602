// Package lab runs the cells of kernels other than the running one ("lab
// mode"): Run builds the kernels that name a source tree, then boots one
// lab VM per kernel label (runner/labvm) that runs `vnetbench run
// --inside-lab LABEL` on that kernel's cells, and imports the inner
// samples into the outer run directory. SizeFor and VMArgs size a lab VM
// and give its QEMU command line; PlanCommands turns cells into the
// commands plan and run --dry-run print.
//
// lab is orchestration: it imports runner (Options, Summary, the run
// directory's environment) and runner/labvm; runner imports labvm (doctor's
// lab checks), never lab.
package lab
