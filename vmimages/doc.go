// Package vmimages builds reproducible, content-addressed guest images
// (kernel + initramfs with the vnetbench agent as /init) and holds the host
// side of the agent protocol.
//
// # Images
//
// Build resolves a kernel (FindKernel: an explicit bzImage and modules
// directory; the host's /boot/vmlinuz-$(uname -r) with /lib/modules; or
// Debian's linux-image-*-unsigned package, DefaultDebianFlavour "cloud-amd64"
// unless asked otherwise), then writes an uncompressed newc initramfs (package
// vmimages/cpio) holding:
//
//   - /init: the vnetbench binary, which runs the guest agent (package
//     vmimages/agent) when it is PID 1; a dynamically linked one (go build
//     or go install with cgo on) comes with its ELF interpreter and shared
//     libraries at the paths the loader opens (AddExecutable);
//   - the modules BootModules and BuildOptions.ExtraModules need, with their
//     dependencies resolved from modules.dep, or from each module's .modinfo
//     when the directory has no modules.dep (Debian's packages ship none), and
//     /etc/vnb/modules, the load order;
//   - optionally iperf3 and its shared libraries, found like ldd does (ELF
//     interpreter and DT_NEEDED, transitively).
//
// Entries are sorted, with mtime 0, uid/gid 0 and fixed inode numbers, so the
// same inputs give the same bytes; the file is named by its sha256 in the
// cache directory (CacheDir) and not rewritten when it exists.
//
// External programs: FetchDebianKernel runs `apt-get download` and
// `dpkg-deb -x` (and `apt-cache search` to find the newest ABI); nothing else
// in this package starts processes. Compressed modules (.ko.gz, .ko.xz as in
// Debian's 6.12 packages, .ko.zst) are decompressed in Go (Decompress) and
// go into the image as plain .ko files, so the guest kernel loads them with
// finit_module whether or not it was built with CONFIG_MODULE_DECOMPRESS.
//
// # Agent protocol
//
// JSON lines over the virtio-serial port AgentPortName, or over the serial
// console when the VM has no such port. The guest sends an unsolicited
// "ready" event; the host sends Requests (stats, sink, a workload's guest op such as iperf3 start/stop,
// poweroff, ping) with an id, and each gets exactly one Event with that id
// ("stats", "ok" or "error"). Unknown ops and malformed lines get an "error"
// event. Client is the host side; it tolerates kernel messages mixed into
// the stream and bounds every call by its context.
//
// The same Events travel a second transport: a lab VM's /init, which has
// no agent, prints them on the serial console behind ConsolePrefix
// (EncodeConsoleEvent, ParseConsoleEvent; runner/labvm is both sides).
//
// GuestConfig is what the agent reads from the kernel command line (vnb.ip,
// vnb.mac, ...); GuestCmdline composes the rest of the guest's command
// line, as KernelCmdline does for every VM vnetbench boots.
//
// # Boot time
//
// Measured with BenchmarkBoot on a loaded 2-core TCG-only machine (QEMU 7.2,
// q35, 1 vCPU, Debian 6.1.0-47): QEMU start to agent ready 4.9 s (median)
// against 4.2 s for a busybox /init that only prints a line on the same
// kernel (ratio 1.17); the agent itself (modules, virtio port, netlink)
// takes about 0.3 s of that, the rest is Go start-up and the larger
// initramfs. Debian's generic flavour (XZ-compressed) needs about 3x longer
// than the cloud flavour (LZ4), hence DefaultDebianFlavour. -machine microvm
// did not boot this kernel under TCG (no usable clock source).
//
// This package does not start QEMU (runner/qemu does; the tests here use a
// minimal QEMU command of their own) and does not configure the host's tap.
package vmimages
