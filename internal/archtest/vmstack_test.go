package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// qemuOptions are QEMU command line options: a literal of one outside
// runner/qemu is a QEMU argv built beside the devices (qemu.Device).
var qemuOptions = map[string]bool{
	"-device": true, "-netdev": true, "-chardev": true, "-fsdev": true, "-serial": true, "-mon": true,
	"-kernel": true, "-initrd": true, "-append": true, "-accel": true, "-smp": true,
}

// vmNames are the names host and guest share, each written in one file
// only: the agent's virtio-serial port, the console events' prefix and
// the image's module list.
var vmNames = map[string]string{
	"vnb.agent":        "vmimages/protocol.go",
	"VNBLAB ":          "vmimages/protocol.go",
	"/etc/vnb/modules": "vmimages/vminit/vminit.go",
}

// Host guests and lab VMs boot through one stack: QEMU's argv is built by
// runner/qemu's devices (fakeqemu, the tests' QEMU, reads it), every VM
// starts through qemu.Start (Launch is its inside), kernel modules load
// through vmimages/vminit's loader in both /init programs, and the names
// both sides must agree on are written once.
func TestOneVMStack(t *testing.T) {
	seen := map[string]bool{}
	moduleFiles(t, parser.SkipObjectResolution, nil, func(rel string, fset *token.FileSet, f *ast.File) {
		dir := rel[:max(strings.LastIndex(rel, "/"), 0)]
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				s, err := strconv.Unquote(n.Value)
				if n.Kind != token.STRING || err != nil {
					return true
				}
				if qemuOptions[s] && dir != "runner/qemu" && dir != "runner/internal/fakeqemu" {
					t.Errorf("%s: QEMU option %q outside runner/qemu: make it a qemu.Device", fset.Position(n.Pos()), s)
				}
				if home, ok := vmNames[s]; ok && rel == home {
					seen[s] = true
				} else if ok {
					t.Errorf("%s: %q is defined in %s: use its constant", fset.Position(n.Pos()), s, home)
				}
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				if !ok {
					return true
				}
				switch {
				case x.Name == "qemu" && n.Sel.Name == "Launch":
					t.Errorf("%s: qemu.Launch: start VMs with qemu.Start (host guests and lab VMs alike)", fset.Position(n.Pos()))
				case x.Name == "unix" && (n.Sel.Name == "FinitModule" || n.Sel.Name == "InitModule") && dir != "vmimages/vminit":
					t.Errorf("%s: unix.%s: load modules with vmimages/vminit (LoadModules, LoadModuleList)", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	})
	for s, home := range vmNames {
		if !seen[s] {
			t.Errorf("%s no longer defines %q: say in vmNames where it moved", home, s)
		}
	}
}
