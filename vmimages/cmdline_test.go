package vmimages

import "testing"

// Every VM's command line comes out of KernelCmdline in one order; the
// guest's and the lab's forms are the ones the plan goldens show.
func TestKernelCmdline(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    KernelCmdline
		want string
	}{
		{"guest under TCG", GuestCmdline(TCGTuning, "", "vnb.ip=10.0.0.2/24"),
			"console=ttyS0 quiet panic=-1 oops=panic mitigations=off tsc=reliable no_timer_check cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp audit=0 vnb.ip=10.0.0.2/24"},
		{"guest under KVM", GuestCmdline(Tuning(false)),
			"console=ttyS0 quiet panic=-1 oops=panic cryptomgr.notests i8042.noaux i8042.nokbd i8042.nopnp"},
		{"guest with its own tuning", GuestCmdline(" nokaslr  ", "image=1 "),
			"console=ttyS0 quiet panic=-1 oops=panic nokaslr image=1"},
		{"lab VM under KVM", KernelCmdline{Verbosity: LogWarnings, Init: "/init", Extra: []string{"nosmt"}, Args: []string{"lab-init"}},
			"console=ttyS0 loglevel=4 panic=-1 rdinit=/init nosmt -- lab-init"},
		{"lab VM under TCG", KernelCmdline{Verbosity: LogWarnings, Init: "/init", Tuning: TCGCmdline, Extra: []string{""}, Args: []string{"lab-init", "x"}},
			"console=ttyS0 loglevel=4 panic=-1 rdinit=/init mitigations=off tsc=reliable no_timer_check -- lab-init x"},
	} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
