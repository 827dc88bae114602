package results

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vnetbench/vnetbench/internal/lazyre"
)

// Names inside a run directory (see the package doc for the layout).
const (
	ResultsFile   = "results.jsonl"
	EnvFile       = "env.json"
	ArtifactsDir  = "artifacts"
	ReproduceFile = "reproduce.sh"
	// WarmupDir is the subdirectory of a sample's artifact directory that
	// holds the warmup's raw outputs.
	WarmupDir = "warmup"
)

// ArtifactDir is the directory of one sample's raw outputs, relative to
// the run directory: artifacts/CELL/KERNEL/REP (PathElem of the cell and
// the kernel label, rep from 0). Sample.Artifacts entries start with it.
func ArtifactDir(cell, kernel string, rep int) string {
	return filepath.Join(ArtifactsDir, PathElem(cell), PathElem(kernel), strconv.Itoa(rep))
}

// ConsoleLog is the QEMU console log of the run's boot-th guest boot
// (from 0), relative to the run directory: artifacts/console-N.log.
func ConsoleLog(boot int) string {
	return filepath.Join(ArtifactsDir, fmt.Sprintf("console-%d.log", boot))
}

// FaultConsole is, relative to the run directory, the console log of a
// guest whose kernel faulted under TCG during sample rep of cell on
// kernel, kept when that sample ran again on a fresh guest:
// artifacts/CELL/KERNEL/REP-fault-console.log, beside the sample's
// directory (ArtifactDir), which the second attempt empties.
func FaultConsole(cell, kernel string, rep int) string {
	return ArtifactDir(cell, kernel, rep) + "-fault-console.log"
}

// LabVMDir holds, relative to the outer run, the files of kernel label's
// lab VM (lab mode): lab/LABEL.
func LabVMDir(label string) string { return filepath.Join("lab", PathElem(label)) }

// LabDir is the run directory, relative to the outer run, of the run made
// inside the lab VM of kernel label: lab/LABEL/run.
func LabDir(label string) string { return filepath.Join(LabVMDir(label), "run") }

// LabConsole is the console log of kernel label's lab VM, relative to the
// outer run: lab/LABEL/console.log.
func LabConsole(label string) string { return filepath.Join(LabVMDir(label), "console.log") }

// LabFirstConsole is the console log of kernel label's first lab VM when
// the lab was booted again (its kernel failed under TCG), relative to the
// outer run: lab/LABEL/console-1.log.
func LabFirstConsole(label string) string {
	return filepath.Join(LabVMDir(label), "console-1.log")
}

// LabScenario is the copy of the scenario file the lab VMs' runs read,
// relative to the outer run.
const LabScenario = "lab/scenario.yaml"

// ShardDir is where a merged run keeps an artifact of its shard-th input
// (from 1) whose path another input already used: artifacts/shard-N.
func ShardDir(shard int) string { return filepath.Join(ArtifactsDir, "shard-"+strconv.Itoa(shard)) }

var unsafeChars = lazyre.New(`[^A-Za-z0-9._+-]+`)

// PathElem turns a name into one safe path element: "/" becomes "__",
// other runs of characters outside [A-Za-z0-9._+-] become "_", and leading
// or trailing "_" are trimmed ("tap+vhost/pktgen-t4" ->
// "tap+vhost__pktgen-t4"). Kernel labels (letters, digits, "._-") are
// unchanged; a name with nothing left, or "." or "..", becomes "_".
func PathElem(name string) string {
	s := strings.Trim(unsafeChars().ReplaceAllString(strings.ReplaceAll(name, "/", "__"), "_"), "_")
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}
