# vnetbench: see README.md. `make demo` runs the quickstart scenario; `make test` runs the tests.
GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# -trimpath for every go command of build, check and test but the
# race-detector lane's: Go keys its build cache by the compile flags, so
# the standard library and every dependency (modernc.org/sqlite and libc
# the largest) compiled once, by make build, serve go vet, staticcheck's
# own build, and the tests, in any clone (the clone's path is not part
# of the key either). Before, make build alone trimmed, and a fresh
# machine compiled all of it twice.
TRIM := -trimpath
# A static binary: the same executable runs as the guest's /init (agent mode)
# and inside a lab VM, whatever libc is there. (A dynamically linked one, as
# go install makes with cgo on, works too: the images carry its libraries.)
GOFLAGS_BUILD := $(TRIM) -ldflags "-s -w -X main.version=$(VERSION)"
export CGO_ENABLED := 0

# Programs the harness drives at run time, from Debian packages.
# gcc and libc6-dev: go test -race needs cgo (make test). dpdk-dev has
# dpdk-testpmd, librte-net-af-xdp23 its AF_XDP driver; socat the vsock
# workload's baseline; irtt the latency probe's cross-check; sockperf the
# tcp_rr workload's cross-check.
# cmd/vnetbench's TestMakeDepsInstallsDeclaredTools checks that every tool
# a workload declares is listed here.
DEB_PACKAGES := qemu-system-x86 iperf3 linux-perf netsniff-ng iproute2 busybox-static socat gcc libc6-dev dpdk-dev librte-net-af-xdp23 irtt sockperf
# Building kernels from source (kernels: tree; runner/kbuild's Deps), and
# from Debian's linux-source with its headers (SourceDeps, ModuleDeps:
# gcc-12 is the compiler Debian 12's 6.1 kernels and their modules are
# built with; xz-utils unpacks linux-source).
KBUILD_PACKAGES := gcc make libc6-dev binutils flex bison bc perl gzip libelf-dev libssl-dev git cpio ccache gcc-12 xz-utils tar bash apt dpkg coreutils
# The GitLab recipe's test (cmd/vnetbench's TestGitLabRecipeRuns) runs
# docs/ci/gitlab-ci.yml under gitlab-ci-local, an npm package: pinned with
# all its dependencies by docs/ci/gitlab-ci-local/package-lock.json and
# installed there by npm ci into GITLAB_CI_LOCAL_DIR, outside the clone so
# that a new clone (CI's) finds it. It wants Node.js 20.19 or later (its
# yargs; 4.73.0 runs on 20, 4.74 wants 22), rsync, and sudo for the
# recipe's 'sudo vnetbench run'. All of it is JavaScript, no install
# script (rules: regexes go through re2js; 4.56.2, pinned before, had the
# native re2, compiled from source: 150-330 CPU-s on a fresh machine):
# npm ci only downloads and unpacks, in seconds.
# Debian's nodejs and npm are installed only when node or npm is not on
# PATH (Debian 12's nodejs is 18, too old: this machine's Node.js 20 is
# NodeSource's, which includes npm). make deps installs all of it:
# deps-ci-packages the Debian packages, deps-gitlab-ci-local the npm
# package. make test's test-gitlab lane installs the npm package too when
# it is missing: .ci/run installs only the Debian packages first.
CI_PACKAGES := rsync sudo make
GITLAB_CI_LOCAL_SRC := docs/ci/gitlab-ci-local
GITLAB_CI_LOCAL_DIR ?= $(or $(VNETBENCH_CACHE),$(HOME)/.cache/vnetbench)/tools/gitlab-ci-local
GITLAB_CI_LOCAL_BIN := $(GITLAB_CI_LOCAL_DIR)/node_modules/.bin/gitlab-ci-local

.PHONY: all deps deps-run deps-ci deps-ci-packages deps-gitlab-ci-local build check test test-gitlab e2e demo fuzz bench clean
all: build

# Idempotent: installs only what is missing, running apt-get update once
# first. make deps installs all of it; make demo what a run needs.
apt_install = missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: all present ($(1))"; fi

deps: deps-run deps-ci

deps-run:
	@$(call apt_install,$(DEB_PACKAGES) $(KBUILD_PACKAGES))

deps-ci: deps-ci-packages deps-gitlab-ci-local

deps-ci-packages:
	@node=$$(command -v node >/dev/null || echo nodejs; command -v npm >/dev/null || echo npm); \
	$(call apt_install,$(CI_PACKAGES) $$node)

deps-gitlab-ci-local:
	@$(install_gitlab_ci_local)

# Idempotent: skips npm ci (in seconds) when the installed copy matches
# the lockfile and runs. One shell command, for deps-gitlab-ci-local and
# test-gitlab alike.
install_gitlab_ci_local = v=$$(node -p 'const [a, b] = process.versions.node.split("."); a * 1000 + +b' 2>/dev/null || echo 0); \
	if [ "$$v" -lt 20019 ]; then \
	  echo "deps: gitlab-ci-local needs Node.js 20.19 or later, node is $$(node --version 2>/dev/null || echo missing): install a newer nodejs (make deps-ci-packages installs Debian's when there is none), then make deps again"; exit 2; fi; \
	dir="$(GITLAB_CI_LOCAL_DIR)"; \
	if cmp -s $(GITLAB_CI_LOCAL_SRC)/package-lock.json "$$dir/installed.json" && "$(GITLAB_CI_LOCAL_BIN)" --version >/dev/null 2>&1; then \
	  echo "deps: gitlab-ci-local $$("$(GITLAB_CI_LOCAL_BIN)" --version) present in $$dir"; exit 0; fi; \
	echo "installing gitlab-ci-local into $$dir (npm ci)"; \
	mkdir -p "$$dir" && rm -f "$$dir/installed.json" && cp $(GITLAB_CI_LOCAL_SRC)/package.json $(GITLAB_CI_LOCAL_SRC)/package-lock.json "$$dir/" || exit 1; \
	start=$$(date +%s); \
	if ! (cd "$$dir" && npm ci --no-audit --no-fund --ignore-scripts >npm-ci.log 2>&1); then \
	  tail -30 "$$dir/npm-ci.log"; echo "deps: npm ci failed; its log: $$dir/npm-ci.log"; exit 1; fi; \
	cp $(GITLAB_CI_LOCAL_SRC)/package-lock.json "$$dir/installed.json"; \
	echo "deps: gitlab-ci-local $$("$(GITLAB_CI_LOCAL_BIN)" --version) installed in $$(( $$(date +%s) - start )) s"

build:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/vnetbench ./cmd/vnetbench

# Static checks, all of which fail on any finding: gofmt, go vet and
# staticcheck (the version go.mod's tool directive pins, built into
# $(BIN) with $(TRIM) like the rest; checks in staticcheck.conf). staticcheck
# reads every import from export data that its go list -export compiles:
# GOFLAGS gives that $(TRIM) too (after go env's own GOFLAGS). go vet
# runs every analyzer go test's own vet runs, and more, on the same
# packages and their tests: make test's go test commands leave theirs
# off (TESTFLAGS).
check:
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then \
	  echo "gofmt: these files are not gofmt'ed (run gofmt -w on them):"; echo "$$files"; exit 1; fi
	$(GO) vet $(TRIM) ./...
	@mkdir -p $(BIN)
	$(GO) build $(TRIM) -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck
	GOFLAGS="$$($(GO) env GOFLAGS) $(TRIM)" ./$(BIN)/staticcheck ./...
	$(GO) -C docs/ci/validate vet $(TRIM) ./...

# Packages whose tests boot VMs (QEMU guests, lab VMs with nested guests),
# and the one that builds kernels (runner/kbuild: TestModuleBuildLinuxSource
# fetches linux-source-6.1 and Debian's kernel and headers of its version
# and rebuilds tun.ko stock and patched, which runner/labvm's pktgen e2e
# and the built-in lab-pktgen load; the whole-kernel build is opt-in).
# make test runs every other package but NORACE_PKGS (below) under the
# race detector (which needs cgo: gcc), the VM packages without it, one
# at a time (-p 1): two VM packages side by side on a small machine only
# slow each other past their deadlines. The kernel package starts at
# once beside them, at nice 10: its fetches and compiles fill the CPU the
# VM tests' guests leave idle; runner/labvm's e2e, if it gets there
# first, waits for the fetch's and the build's locks and takes their
# results from the cache.
# NORACE_PKGS run in the kernel package's command, without the race
# detector, which found nothing there to watch: internal/history/store
# shares no memory between goroutines (its concurrency tests give each
# writer its own index: they test SQLite's locking between connections),
# so under -race it watched only modernc.org/sqlite's and libc's code,
# the C translated to Go that is the largest compile of all, and with
# -race a second compile of its own; internal/verdict and
# internal/latency (statistics, CPU-bound tests: the race lane's
# slowest) start no goroutine, nor does anything they import, and no
# test of theirs is parallel. Give a package here goroutines and it goes
# back to the race lane.
MODULE    := github.com/vnetbench/vnetbench
KBUILD_PKG := ./runner/kbuild
NORACE_PKGS := ./internal/history/store ./internal/verdict ./internal/latency
VM_PKGS   := ./cmd/vnetbench ./runner ./runner/labvm ./vmimages
BESIDE    := nice -n 10
TESTFLAGS := $(TRIM) -vet=off
RACE_PKGS  = $(filter-out $(foreach p,$(VM_PKGS) $(KBUILD_PKG) $(NORACE_PKGS),$(p:./%=$(MODULE)/%)),$(shell $(GO) list ./...))

# make check, unit tests and every end-to-end test this machine can run,
# all at once (testsummary -j): the static checks and the race-detector
# packages (a minute of CPU) overlap the VM packages, whose guests leave a
# core partly idle, instead of delaying them (~100 s of a CI run). The VM
# packages are the critical path (the others end in a third of their
# time), so everything beside them runs at nice 10 ($(BESIDE)): it takes
# the CPU their guests and waits leave instead of slowing their boots and
# windows in the first minutes. cmd/vnetbench's TestGitLabRecipeRuns
# and TestRunQuickstartE2E run in a lane of their own beside them, make
# test-gitlab (below), which installs gitlab-ci-local first when it is
# missing. A test
# that cannot get what it needs skips with the reason, or fails under
# CI=true (internal/testenv); testsummary prints go test's usual output
# and ends with each command's wall time, the slowest tests and the
# longest packages with their spans on the run's timeline, the list of
# every skipped test and its reason, and every failure (make check's
# findings included). VNETBENCH_BIN lets e2e tests use the built binary.
# The check and test-gitlab commands are a plain `make`, not $$(MAKE):
# make -n executes a recipe line that names $$(MAKE), and README's `make
# test`, dry-run by cmd/vnetbench's README test as `make -n test`, would
# run the whole suite inside itself.
# docs/ci/validate is a module of its own (the CI recipes' validators:
# actionlint, GitLab's CI schema, the Kubernetes API types), so its
# dependencies stay out of go.mod: vet and test run in it with go -C.
# One e2e test alone: make e2e RUN=TestLabPktgenE2E PKG=./runner/labvm
test: build
	$(GO) build $(TRIM) -o $(BIN)/testsummary ./internal/testsummary
	VNETBENCH_BIN=$(CURDIR)/$(BIN)/vnetbench ./$(BIN)/testsummary -j \
	  -- $(BESIDE) $(GO) test $(TESTFLAGS) -json -count=1 -timeout 60m $(KBUILD_PKG) $(NORACE_PKGS) \
	  -- $(BESIDE) make --no-print-directory check \
	  -- $(BESIDE) env CGO_ENABLED=1 $(GO) test -vet=off -json -race -count=1 -timeout 20m $(RACE_PKGS) \
	  -- $(GO) test $(TESTFLAGS) -json -p 1 -count=1 -timeout 60m -skip '^($(BESIDE_TESTS))$$' $(VM_PKGS) \
	  -- $(BESIDE) make --no-print-directory test-gitlab \
	  -- $(BESIDE) $(GO) -C docs/ci/validate test $(TESTFLAGS) -json -count=1 ./...

# make test's lane for the two tests that first install with a user's own
# tools (the VM packages' command skips them): the GitLab recipe's test,
# the one user of gitlab-ci-local, and README's first run, whose go
# install compiles the module with cgo and without -trimpath, a build of
# its own (77 s on the idle 2-core machine, with make's build cached): in
# the VM packages' command it sat on make test's critical path. The lane
# installs gitlab-ci-local when it is missing (as deps-gitlab-ci-local
# does), then runs the two tests. Its output is go test -json (the
# install's lines pass through testsummary). A failed install fails the
# lane under CI=true; elsewhere the GitLab test then skips and says what
# it needs. The tests' runs take the host's run lock (--lock-wait) like
# the VM packages' runs, so they measure one at a time.
BESIDE_TESTS := TestGitLabRecipeRuns|TestRunQuickstartE2E
test-gitlab:
	@($(install_gitlab_ci_local)) || case "$$CI" in 1|t|T|true|TRUE|True) exit 1;; esac
	VNETBENCH_GITLAB_CI_LOCAL=$(GITLAB_CI_LOCAL_BIN) $(GO) test $(TESTFLAGS) -json -count=1 -timeout 60m -run '^($(BESIDE_TESTS))$$' ./cmd/vnetbench

e2e: build
	VNETBENCH_BIN=$(CURDIR)/$(BIN)/vnetbench VNETBENCH_GITLAB_CI_LOCAL=$(GITLAB_CI_LOCAL_BIN) $(GO) test -count=1 -timeout 60m -v -run '$(RUN)' $(or $(PKG),./...)

demo: deps-run build
	./$(BIN)/vnetbench run quickstart -o runs/quickstart-$$(date +%Y%m%d-%H%M%S)

# A fuzz target minimizes each new interesting input for up to
# -fuzzminimizetime (60 s by default): with large seeds (perf report
# fixtures) that is the whole -fuzztime at 0 execs/s, not fuzzing.
FUZZTIME ?= 10s
FUZZMINIMIZETIME ?= 1s
fuzz:
	@for pkg in ./scenarios ./perfparse ./internal/results; do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
