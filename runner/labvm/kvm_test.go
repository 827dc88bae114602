package labvm

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vnetbench/vnetbench/internal/testenv"
	"github.com/vnetbench/vnetbench/vmimages"
	"github.com/vnetbench/vnetbench/vmimages/cpio"
)

// Excerpts of /proc/cpuinfo as x86 kernels print it (one processor each).
const (
	cpuinfoIntel = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\n" +
		"flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge vmx smx est tm2 ssse3 fma cx16 xtpr pdcm pcid\n" +
		"vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad ept_1gb flexpriority apicv tsc_offset vtpr mtf vapic ept vpid unrestricted_guest\n" +
		"bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs\n\n"
	cpuinfoAMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n" +
		"flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat svm extapic cr8_legacy abm sse4a misalignsse npt nrip_save\n" +
		"bugs\t\t: sysret_ss_attrs spectre_v1 spectre_v2\n\n"
	// A guest without nested virtualization: "hypervisor", no vmx/svm; the
	// "vmx flags" line alone (left by some kernels) does not count.
	cpuinfoNeither = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n" +
		"flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep hypervisor lahf_lm cmp_legacy\n" +
		"vmx flags\t: vnmi\nbugs\t\t: svm_bug_not_a_flag\n\n"
)

func TestKVMVendorModule(t *testing.T) {
	for name, c := range map[string]struct{ cpuinfo, want string }{
		"vmx":     {cpuinfoIntel, KVMIntelModule},
		"svm":     {cpuinfoAMD, KVMAMDModule},
		"neither": {cpuinfoNeither, ""},
		"empty":   {"", ""},
		"smp-vmx": {strings.Repeat(cpuinfoIntel, 64), KVMIntelModule},
	} {
		if got := KVMVendorModule(c.cpuinfo); got != c.want {
			t.Errorf("%s: KVMVendorModule = %q, want %q", name, got, c.want)
		}
	}
}

// kvmModulesDir is fakeModules plus the KVM modules as Debian has them
// (kvm-intel.ko, kvm-amd.ko, both needing kvm, which needs irqbypass),
// or only kvm and kvm-intel with intelOnly.
func kvmModulesDir(t *testing.T, intelOnly bool) string {
	dir := fakeModules(t)
	dep := "kernel/arch/x86/kvm/kvm.ko: kernel/virt/lib/irqbypass.ko\n" +
		"kernel/virt/lib/irqbypass.ko:\n" +
		"kernel/arch/x86/kvm/kvm-intel.ko: kernel/arch/x86/kvm/kvm.ko kernel/virt/lib/irqbypass.ko\n"
	if !intelOnly {
		dep += "kernel/arch/x86/kvm/kvm-amd.ko: kernel/arch/x86/kvm/kvm.ko kernel/virt/lib/irqbypass.ko\n"
	}
	f, err := os.OpenFile(filepath.Join(dir, "modules.dep"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(dep)
	f.Close()
	for _, l := range strings.Split(dep, "\n") {
		if m, _, ok := strings.Cut(l, ":"); ok {
			p := filepath.Join(dir, m)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("ko:"+filepath.Base(m)), 0o644)
		}
	}
	return dir
}

func readInitramfs(t *testing.T, path string) (map[string]cpio.Entry, InitConfig) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := cpio.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cpio.Entry{}
	for _, e := range ents {
		got[e.Name] = e
	}
	var cfg InitConfig
	if err := json.Unmarshal(got["lab.json"].Data, &cfg); err != nil {
		t.Fatal(err)
	}
	return got, cfg
}

// TestInitramfsKVM: a lab initramfs built for KVM carries kvm and both
// vendor modules, each vendor's load order in lab.json (kvm's dependency
// first, nothing of the main list repeated); without KVM it carries none.
func TestInitramfsKVM(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "vnetbench")
	os.WriteFile(bin, staticELF(t), 0o755)
	ir := Initramfs{Binary: bin, Modules: kvmModulesDir(t, false), Load: []string{"vhost_net"}, KVM: true, Config: InitConfig{Mode: "lab"}}
	out := filepath.Join(dir, "kvm.cpio")
	cfg, err := ir.Build(out)
	if err != nil {
		t.Fatal(err)
	}
	files, lj := readInitramfs(t, out)
	want := map[string][]string{
		KVMIntelModule: {"/lib/modules/irqbypass.ko", "/lib/modules/kvm.ko", "/lib/modules/kvm-intel.ko"},
		KVMAMDModule:   {"/lib/modules/irqbypass.ko", "/lib/modules/kvm.ko", "/lib/modules/kvm-amd.ko"},
	}
	if !reflect.DeepEqual(lj.KVM, want) || !reflect.DeepEqual(cfg.KVM, want) {
		t.Errorf("lab.json kvm %v, want %v", lj.KVM, want)
	}
	for _, p := range append(want[KVMIntelModule], want[KVMAMDModule]...) {
		if e, ok := files[strings.TrimPrefix(p, "/")]; !ok || !strings.HasPrefix(string(e.Data), "ko:") {
			t.Errorf("%s not in the initramfs", p)
		}
	}
	if len(lj.Missing) != 0 || slices.Contains(lj.Modules, "/lib/modules/kvm.ko") {
		t.Errorf("missing %v, main modules %v", lj.Missing, lj.Modules)
	}

	// Without KVM (a lab VM under TCG): no kvm files, no kvm map.
	ir.KVM = false
	if _, err := ir.Build(out); err != nil {
		t.Fatal(err)
	}
	files, lj = readInitramfs(t, out)
	if lj.KVM != nil || files["lib/modules/kvm.ko"].Name != "" {
		t.Errorf("TCG lab initramfs has kvm: %v", lj.KVM)
	}

	// A kernel without kvm_amd: the Intel set only, kvm_amd listed missing.
	ir.KVM, ir.Modules = true, kvmModulesDir(t, true)
	cfg, err = ir.Build(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.KVM[KVMAMDModule]; ok || len(cfg.KVM[KVMIntelModule]) != 3 || !slices.Contains(cfg.Missing, KVMAMDModule) {
		t.Errorf("intel-only kernel: kvm %v missing %v", cfg.KVM, cfg.Missing)
	}
}

func TestMissingKVMModules(t *testing.T) {
	for _, c := range []struct {
		intelOnly bool
		vendor    string
		want      []string
	}{
		{false, KVMIntelModule, nil},
		{false, KVMAMDModule, nil},
		{true, KVMAMDModule, []string{KVMAMDModule}},
	} {
		got, err := MissingKVMModules(kvmModulesDir(t, c.intelOnly), c.vendor)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("intelOnly=%v %s: %v, %v; want %v", c.intelOnly, c.vendor, got, err, c.want)
		}
	}
	got, err := MissingKVMModules(fakeModules(t), KVMIntelModule)
	if err != nil || !slices.Equal(got, []string{KVMModule, KVMIntelModule}) {
		t.Errorf("kernel without KVM: %v, %v", got, err)
	}
}

func TestParseDevNumber(t *testing.T) {
	dev, err := parseDevNumber("10:232\n")
	if err != nil || unix.Major(dev) != 10 || unix.Minor(dev) != 232 {
		t.Errorf("10:232 -> %d:%d, %v", unix.Major(dev), unix.Minor(dev), err)
	}
	for _, bad := range []string{"", "10", "10:x", "a:1", "10:232:1"} {
		if _, err := parseDevNumber(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestEnsureCharDev makes /dev/kvm from its sysfs dev file as lab init
// does when devtmpfs has not, and leaves an existing node alone.
func TestEnsureCharDev(t *testing.T) {
	dir := t.TempDir()
	sys := filepath.Join(dir, "dev-number")
	os.WriteFile(sys, []byte("10:232\n"), 0o644)
	node := filepath.Join(dir, "kvm")
	err := ensureCharDev(node, sys)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("mknod needs CAP_MKNOD: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 10 || unix.Minor(st.Rdev) != 232 {
		t.Errorf("node mode %o rdev %d:%d, %v", st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), err)
	}
	os.Remove(sys)
	if err := ensureCharDev(node, sys); err != nil {
		t.Errorf("existing node: %v", err)
	}
	if err := ensureCharDev(filepath.Join(dir, "other"), sys); err == nil {
		t.Error("no node and no sysfs file: no error")
	}
}

// TestLabInitramfsDebianKVM builds the lab initramfs for KVM from Debian's
// real generic kernels (6.1: plain .ko; 6.12: .ko.xz): DefaultModules and both
// KVM vendor sets must all be there, decompressed to ELF. It uses the
// unpacked packages in the cache; with none, CI fetches 6.12 and a
// developer machine skips.
func TestLabInitramfsDebianKVM(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(vmimages.CacheDir(), "kernels/debian/linux-image-*-amd64-unsigned/lib/modules/*"))
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		return !strings.HasSuffix(d, "-amd64") || strings.HasSuffix(d, "-cloud-amd64") || strings.HasSuffix(d, "-rt-amd64")
	})
	if len(dirs) == 0 {
		if !testenv.CI() {
			t.Skip("no unpacked Debian generic kernel in the cache (the lab e2e tests fetch one; under CI this test fetches 6.12)")
		}
		k, err := ResolveKernel(t.Context(), Kernel{Debian: "6.12"}, "")
		testenv.SkipUnavailable(t, err, "fetch Debian kernel 6.12")
		dirs = []string{k.Modules}
	}
	bin := filepath.Join(t.TempDir(), "vnetbench")
	os.WriteFile(bin, staticELF(t), 0o755)
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "lab.cpio")
			cfg, err := Initramfs{Binary: bin, Modules: d, Load: DefaultModules(), KVM: true, Config: InitConfig{Mode: "lab"}}.Build(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Missing) != 0 {
				t.Errorf("missing %v", cfg.Missing)
			}
			files, _ := readInitramfs(t, out)
			for _, v := range []string{KVMIntelModule, KVMAMDModule} {
				set := cfg.KVM[v]
				if len(set) < 2 || !strings.HasSuffix(set[len(set)-1], "/"+strings.ReplaceAll(v, "_", "-")+".ko") || !slices.ContainsFunc(set, func(p string) bool { return strings.HasSuffix(p, "/kvm.ko") }) {
					t.Errorf("%s set %v: want kvm.ko before %s.ko", v, set, v)
				}
			}
			all := append(slices.Clone(cfg.Modules), append(cfg.KVM[KVMIntelModule], cfg.KVM[KVMAMDModule]...)...)
			for _, p := range all {
				e, ok := files[strings.TrimPrefix(p, "/")]
				if !ok || !bytes.HasPrefix(e.Data, []byte("\x7fELF")) {
					t.Errorf("%s: not an uncompressed module in the initramfs", p)
				}
			}
			if !slices.ContainsFunc(cfg.Modules, func(p string) bool { return strings.HasSuffix(p, "/vhost_vsock.ko") }) {
				t.Errorf("modules %v lack vhost_vsock", cfg.Modules)
			}
		})
	}
}

// TestPickKVM: lab init loads the set of the CPU's vendor, says why when
// there is none, and does nothing for a lab without KVM.
func TestPickKVM(t *testing.T) {
	cfg := &InitConfig{KVM: map[string][]string{
		KVMIntelModule: {"/lib/modules/kvm.ko", "/lib/modules/kvm-intel.ko"},
		KVMAMDModule:   {"/lib/modules/kvm.ko", "/lib/modules/kvm-amd.ko"},
	}}
	for _, c := range []struct {
		cfg               *InitConfig
		cpuinfo, vendor   string
		last, whyContains string
	}{
		{cfg, cpuinfoIntel, KVMIntelModule, "/lib/modules/kvm-intel.ko", ""},
		{cfg, cpuinfoAMD, KVMAMDModule, "/lib/modules/kvm-amd.ko", ""},
		{cfg, cpuinfoNeither, "", "", "no vmx/svm"},
		{&InitConfig{KVM: map[string][]string{KVMIntelModule: {"/lib/modules/kvm-intel.ko"}}}, cpuinfoAMD, "", "", "has no kvm_amd"},
		{&InitConfig{}, cpuinfoIntel, "", "", ""},
	} {
		v, files, why := pickKVM(c.cfg, c.cpuinfo)
		last := ""
		if len(files) > 0 {
			last = files[len(files)-1]
		}
		if v != c.vendor || last != c.last || (c.whyContains == "") != (why == "") || !strings.Contains(why, c.whyContains) {
			t.Errorf("pickKVM(%v) = %q %v %q, want %q ...%q, why containing %q", c.cfg.KVM, v, files, why, c.vendor, c.last, c.whyContains)
		}
	}
}
