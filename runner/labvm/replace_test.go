package labvm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/runner/kbuild"
	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
	"github.com/vnetbench/vnetbench/vmimages/vminit"
)

// fakeKO builds a relocatable ELF with a .modinfo section (name=NAME,
// srcversion, depends) and a GNU build ID, as a kernel module carries
// them: what replacement modules are read for.
func fakeKO(t *testing.T, dir, name, srcversion, depends string) string {
	t.Helper()
	testenv.NeedCommand(t, "gcc", "gcc")
	testenv.NeedCommand(t, "ld", "binutils")
	c := filepath.Join(dir, name+".c")
	src := "__attribute__((section(\".modinfo\"), used)) static const char mi[] = \"name=" + name +
		"\\0srcversion=" + srcversion + "\\0depends=" + depends + "\\0vermagic=6.1.0-57-amd64 SMP preempt mod_unload modversions \";\nint f(void) { return 1; }\n"
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	o, ko := filepath.Join(dir, name+".o"), filepath.Join(dir, name+".ko")
	for _, argv := range [][]string{{"gcc", "-c", "-o", o, c}, {"ld", "-r", "--build-id=sha1", "-o", ko, o}} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
	}
	return ko
}

// A replacement module goes into the initramfs in place of the kernel's
// module of its name (and is loaded whether or not the list names it),
// its dependencies first; lab.json asks init to check its srcversion and
// build ID once loaded. A replacement the kernel has no module for is
// refused.
func TestInitramfsReplace(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vnetbench")
	os.WriteFile(bin, staticELF(t), 0o755)
	tun := fakeKO(t, dir, "tun", "52EE83EA34CD940C73DA85F", "")
	vnet := fakeKO(t, dir, "vhost_net", "BB32447A6B59A0B878E5E6D", "vhost,tap,tun")
	tunID, err := vmimages.ReadModuleID(tun)
	if err != nil || tunID.BuildID == "" {
		t.Fatalf("fake tun.ko: %+v, %v", tunID, err)
	}
	ir := Initramfs{Binary: bin, Modules: fakeModules(t), Load: []string{"virtio_pci"}, Replace: []string{tun, vnet}, Config: InitConfig{Mode: "lab"}}
	out := filepath.Join(dir, "i.cpio")
	cfg, err := ir.Build(out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	ents, err := cpio.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, e := range ents {
		got[e.Name] = e.Data
	}
	tunData, _ := os.ReadFile(tun)
	if !bytes.Equal(got["lib/modules/tun.ko"], tunData) || string(got["lib/modules/tap.ko"]) != "ko:tap.ko" {
		t.Errorf("tun.ko in the initramfs is not the replacement, or tap.ko not the kernel's")
	}
	var lj InitConfig
	json.Unmarshal(got["lab.json"], &lj)
	wantMods := []string{"/lib/modules/tap.ko", "/lib/modules/tun.ko", "/lib/modules/vhost_iotlb.ko", "/lib/modules/vhost.ko", "/lib/modules/vhost_net.ko"}
	for _, m := range wantMods {
		if !strings.Contains(strings.Join(lj.Modules, " "), m) {
			t.Errorf("modules %v lack %s", lj.Modules, m)
		}
	}
	if len(cfg.Check) != 2 || cfg.Check[0] != (vminit.ModuleCheck{Name: "tun", SrcVersion: "52EE83EA34CD940C73DA85F", BuildID: tunID.BuildID}) || cfg.Check[1].Name != "vhost_net" {
		t.Errorf("checks %+v", cfg.Check)
	}
	if !reflect.DeepEqual(lj.Check, cfg.Check) {
		t.Errorf("lab.json checks %+v", lj.Check)
	}
	ir.Replace = []string{fakeKO(t, dir, "nosuch", "0", "")}
	if _, err := ir.Build(out); err == nil || !strings.Contains(err.Error(), "replaces none") {
		t.Errorf("a replacement of no module: %v", err)
	}
}

// writeNote writes a GNU build ID note as sysfs shows a module's.
func writeNote(t *testing.T, p string, id []byte) {
	t.Helper()
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, []uint32{4, uint32(len(id)), 3})
	b.WriteString("GNU\x00")
	b.Write(id)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
}

// Lab init accepts a loaded module only when sysfs shows the rebuilt
// one's srcversion and build ID: a packaged module that won the load is
// a failure.
func TestCheckModules(t *testing.T) {
	sys := t.TempDir()
	os.MkdirAll(filepath.Join(sys, "tun"), 0o755)
	os.WriteFile(filepath.Join(sys, "tun", "srcversion"), []byte("52EE83EA34CD940C73DA85F\n"), 0o444)
	writeNote(t, filepath.Join(sys, "tun", "notes", ".note.gnu.build-id"), []byte{0x13, 0x72, 0x15})
	want := vminit.ModuleCheck{Name: "tun", SrcVersion: "52EE83EA34CD940C73DA85F", BuildID: "137215"}
	if ok, err := vminit.CheckModules(sys, []vminit.ModuleCheck{want}); err != nil || len(ok) != 1 {
		t.Errorf("the rebuilt module running: %v, %v", ok, err)
	}
	for name, c := range map[string]vminit.ModuleCheck{
		"packaged build ID": {Name: "tun", SrcVersion: want.SrcVersion, BuildID: "8461d7"},
		"srcversion":        {Name: "tun", SrcVersion: "486DE09A5AA2988987AE862", BuildID: want.BuildID},
		"not loaded":        {Name: "tap", BuildID: want.BuildID},
	} {
		if _, err := vminit.CheckModules(sys, []vminit.ModuleCheck{c}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestLabReplacedModule boots Debian's 6.1 kernel of linux-source-6.1's
// version as a lab VM with tun.ko rebuilt from that source with the
// tun-backpressure series (runner/kbuild's module build, from the harness
// cache when TestModuleBuildLinuxSource or a run made it) loaded in place
// of Debian's, and requires lab init to find exactly that build running.
func TestLabReplacedModule(t *testing.T) {
	needLab(t)
	for _, d := range kbuild.ModuleDeps {
		testenv.NeedCommand(t, d.Name, d.Package)
	}
	bin := vnetbenchBinary(t)
	src := debianSource61(t)
	b := &kbuild.Builder{Dir: filepath.Join(vmimages.CacheDir(), "kbuild"), Log: testLog{t}}
	patches, err := kbuild.ReadPatches([]string{"../../scenarios/series/tun-backpressure/0001-tun-stop-the-tx-queue-on-a-full-ring-instead-of-dropping.patch"})
	if err != nil {
		t.Fatal(err)
	}
	mp, err := b.PlanModules(t.Context(), kbuild.ModGroup{Series: "6.1", Tree: src, Kernels: []kbuild.ModKernel{{Label: "patched", Patches: patches}}})
	if err != nil || mp.Full != "" {
		t.Fatalf("plan: %v, full %q", err, mp.Full)
	}
	mb, err := b.BuildModules(t.Context(), kbuild.ModSpec{Label: "patched", Tree: src, Series: "6.1", Version: mp.Version, Headers: mp.Headers, Modules: mp.Modules, Patches: patches})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), Config{
		Label: "patched", Kernel: Kernel{Image: mp.Image, Modules: mp.ModulesDir}, RunDir: t.TempDir(), Binary: bin,
		Args: []string{"lab-selftest", "-h"}, Output: testLog{t}, Replace: []string{mb.Modules[0].File},
		Timeouts: Timeouts{Boot: 5 * time.Minute, Setup: 2 * time.Minute, Run: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lab boot %.1fs, setup %.1fs, checked %v, kvm %q %q", res.BootSeconds, res.SetupSeconds, res.Checked, res.KVM, res.NoKVM)
	if !reflect.DeepEqual(res.Checked, []string{"tun"}) {
		t.Errorf("checked %v, want [tun]", res.Checked)
	}
}
