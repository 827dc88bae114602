// Package kbuild builds the Linux kernels a scenario names by source tree
// (kernels: [{label, tree, ref, patches, config}]) for lab VMs: the step
// between "I have a series" and "here is the table". DebianSource fetches
// Debian's linux-source-VERSION into the harness cache for the kernels
// that name source: debian:VERSION instead of a tree.
//
// A kernel is built in a work tree: a git worktree of the tree at ref, or,
// for a tree that is not a git repository, a copy. Patches (files, globs,
// git format-patch mboxes) are applied with git apply, in order; every
// patch of every kernel is tried before anything is built, and one that
// does not apply is an input error naming the patch, the file and the
// hunk. The config is `make allnoconfig` with BaseConfig (what a lab VM
// needs, all built in: virtio, tun/tap, vhost-net, pktgen, fq_codel, 9p,
// AF_XDP, vsock, BPF, perf events, a serial console, KVM) plus the
// scenario's fragment, then `make olddefconfig`; an option of the fragment
// that the final .config lacks is an input error that names it. Kernels of
// the same tree and config (stock and patched, or any commits of one git
// tree) share one work tree: a git work tree is checked out at each
// build's commit (and configured again), patches are applied before a
// build and reverted after it, so a build recompiles only what changed
// since the last one in that work tree (bisect's incremental builds); ccache,
// when installed, serves compilations seen before in any work tree.
//
// Finished builds are cached under a key of (tree commit or a plain tree's
// fingerprint, the patches, the config fragment, the compiler), so a second
// run builds nothing. A build is written to a temporary directory and
// renamed into the cache only when complete. A directory of the cache at a
// computed name (a work tree, its state, unpacked headers) is removed only
// when its safefs.OwnFile proves vnetbench made it; anything else there is
// left and the build refused. Building logs progress with an
// ETA and keeps its log; a failed build is an error (input class: exit 2)
// showing the last compiler errors and the log's path.
//
// kbuild starts git, cp and make; it does not boot anything (runner/labvm
// does) and knows nothing of scenarios (runner/lab maps them to Specs).
package kbuild
