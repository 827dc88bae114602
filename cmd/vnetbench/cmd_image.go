package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vnetbench/vnetbench/vmimages"
)

// cmdImage dispatches "image build".
func cmdImage(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		// To stderr, as every flag set's usage: a script's stdout
		// gets nothing from a refused command.
		fmt.Fprintln(stderr, "usage: vnetbench image build [--kernel PATH|host|debian[:VERSION]] [--modules DIR] [-o DIR]")
		if len(args) == 0 {
			return usageErrorf("image: missing subcommand (build)")
		}
		return nil
	}
	if args[0] != "build" {
		return usageErrorf("image: unknown subcommand %q; use 'vnetbench image build'", args[0])
	}
	return cmdImageBuild(ctx, cl, args[1:], stdout, stderr)
}

func cmdImageBuild(ctx context.Context, cl *cli, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image build", "[--kernel PATH|host|debian[:VERSION]] [--modules DIR] [-o DIR]", stderr)
	kernel := fs.String("kernel", "", "kernel: a bzImage path, \"host\", \"debian\" or \"debian:VERSION\" (a series such as 6.12 or 6.1, or an ABI such as 6.12.117+deb12 or 6.1.0-50, optionally with a flavour: -amd64, -cloud-amd64); default: the host's /boot/vmlinuz-$(uname -r), else Debian's "+vmimages.DefaultDebianFlavour+" kernel")
	modules := pathFlag(fs, "modules", "the kernel's modules directory (/lib/modules/<release>) when --kernel is a path")
	out := pathFlag(fs, "o", "also copy vmlinuz, initramfs.cpio and image.json into this directory")
	extra := fs.String("extra-modules", "", "comma-separated modules to load at boot besides "+strings.Join(vmimages.BootModules, ",")+" (e.g. pktgen,vhost_net,tun)")
	iperf3 := fs.Bool("iperf3", true, "include the host's iperf3 and its libraries (for the guest's iperf3 server)")
	keepSigs := fs.Bool("keep-module-signatures", false, "keep the modules' signatures (default: stripped, which skips the guest's RSA check per module and taints it E; keep them for CONFIG_MODULE_SIG_FORCE kernels)")
	agent := pathFlag(fs, "agent-binary", "vnetbench binary to install as /init, with its libraries if dynamically linked (default: this executable)")
	cache := pathFlag(fs, "cache", "cache directory (default $VNETBENCH_CACHE, else $XDG_CACHE_HOME/vnetbench, else ~/.cache/vnetbench)")
	asJSON := fs.Bool("json", false, "print the image description as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("image build: unexpected argument %q", pos[0])
	}
	if err := checkImageFlags(*kernel, *modules, *out); err != nil {
		return err
	}
	var extras []string
	for _, m := range strings.Split(*extra, ",") {
		if m = strings.TrimSpace(m); m != "" {
			extras = append(extras, m)
		}
	}
	img, err := vmimages.Build(ctx, vmimages.BuildOptions{
		Kernel: *kernel, Modules: *modules, ExtraModules: extras, Agent: *agent,
		Iperf3: *iperf3, CacheDir: *cache, OutDir: *out, KeepModuleSignatures: *keepSigs,
	})
	if err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(img, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	}
	state := "built"
	if img.Cached {
		state = "cached"
	}
	fmt.Fprintf(stdout, "kernel     %s (%s, %s)\n", img.Kernel, img.KernelRelease, img.KernelSource)
	fmt.Fprintf(stdout, "initramfs  %s (%s)\n", img.Initramfs, state)
	fmt.Fprintf(stdout, "sha256     %s\n", img.Hash)
	fmt.Fprintf(stdout, "modules    %s\n", strings.Join(img.Modules, " "))
	fmt.Fprintf(stdout, "iperf3     %v\n", img.Iperf3)
	return nil
}

// checkImageFlags refuses what the build would ignore or fail on late:
// --modules beside a kernel that brings its own (host, Debian's, the
// default), which was dropped in silence, and an -o that is a file,
// which failed after the build as a harness error (exit 1).
func checkImageFlags(kernel, modules, out string) error {
	if modules != "" && (kernel == "" || kernel == "host" || kernel == "debian" || strings.HasPrefix(kernel, "debian:")) {
		return usageErrorf("image build: --modules %s goes with --kernel PATH (a bzImage); the host's and Debian's kernels bring their own modules: drop --modules or give the kernel's image", modules)
	}
	if fi, err := os.Stat(out); out != "" && err == nil && !fi.IsDir() {
		return usageErrorf("image build: -o %s is a file; give a directory (made when missing)", out)
	}
	return nil
}
