package lab

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLabExperiment runs VNB_LAB_ARGS (split on '|') inside a lab VM; a
// developer tool for measuring, skipped unless set.
func TestLabExperiment(t *testing.T) {
	a := os.Getenv("VNB_LAB_ARGS")
	if a == "" {
		t.Skip("set VNB_LAB_ARGS")
	}
	needLab(t)
	g := fetchKernel(t, e2eGuestKernel)
	run := os.Getenv("VNB_LAB_RUN")
	args := strings.Split(strings.NewReplacer("GK", g.Image, "GM", g.Modules, "RUN", run).Replace(a), "|")
	res, err := Run(t.Context(), Config{Label: "exp", Kernel: Kernel{Debian: e2eLabKernel}, RunDir: run,
		Binary: vnetbenchBinary(t), Args: args, Output: testLog{t}, Append: os.Getenv("VNB_LAB_APPEND"),
		Timeouts: Timeouts{Run: 25 * time.Minute}})
	if res != nil {
		t.Logf("lab boot %.1fs, setup %.1fs (modules %d ms), run %.1fs, total %.1fs", res.BootSeconds, res.SetupSeconds, res.ModulesMs, res.RunSeconds, res.TotalSeconds)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestNestedLocal(t *testing.T) {
	if os.Getenv("VNB_NESTED_LOCAL") == "" {
		t.Skip("set VNB_NESTED_LOCAL")
	}
	g := fetchKernel(t, e2eGuestKernel)
	dir := t.TempDir()
	ir := Initramfs{Binary: vnetbenchBinary(t), Modules: g.Modules, Load: GuestModules, Config: InitConfig{Mode: "guest", Links: []string{"eth0"}}}
	if _, err := ir.Build(dir + "/g.cpio"); err != nil {
		t.Fatal(err)
	}
	con := dir + "/con.log"
	cmd := exec.CommandContext(t.Context(), "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-accel", "tcg", "-cpu", "max", "-m", "256", "-kernel", g.Image, "-initrd", dir+"/g.cpio",
		"-append", os.Getenv("VNB_NESTED_LOCAL")+" -- lab-init", "-chardev", "file,id=c,path="+con, "-serial", "chardev:c")
	cmd.Start()
	time.Sleep(60 * time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	b, _ := os.ReadFile(con)
	t.Logf("%s", b)
}
