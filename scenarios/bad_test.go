package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/vnetbench/vnetbench/internal/fault"
	"github.com/vnetbench/vnetbench/internal/golden"
)

// badInputs is one scenario per class of bad input. Each must give one
// *Error line (exit code 2) that names the place and the fix; the lines
// are golden in testdata/bad-input.golden.
var badInputs = map[string]string{
	"syntax-unclosed":       "name: x\ngenerator: {iperf3: {}\n",
	"syntax-indent":         "backend: tap\n  qdisc: x: y\n",
	"syntax-tab":            "generator:\n\tiperf3: {}\n",
	"empty-file":            "",
	"empty-comment-only":    "# nothing\n",
	"not-a-mapping":         "- tap\n- tap+vhost\n",
	"second-document":       "generator: {iperf3: {}}\n---\ngenerator: {iperf3: {}}\n",
	"alias":                 "guest: &g {vcpus: 1}\ngenerator: {iperf3: {}}\nfoo: *g\n",
	"unknown-key":           "repetitons: 3\ngenerator: {iperf3: {}}\n",
	"latency-size-big":      "latency: {sizes: [64, 1500]}\ngenerator: {iperf3: {}}\n",
	"latency-size-twice":    "latency: {sizes: [64, 64]}\ngenerator: {iperf3: {}}\n",
	"latency-interval-tiny": "latency: {interval: 10us}\ngenerator: {iperf3: {}}\n",
	"latency-timeout-short": "latency: {interval: 10ms, timeout: 5ms}\ngenerator: {iperf3: {}}\n",
	"unknown-nested-key":    "generator:\n  pktgen:\n    pkt_sise: 60\n",
	"unknown-generator":     "generator: {netperf: {}}\n",
	"duplicate-key":         "backend: tap\nbackend: tap+vhost\ngenerator: {iperf3: {}}\n",
	"wrong-type-int":        "repetitions: five\ngenerator: {iperf3: {}}\n",
	"wrong-type-float":      "repetitions: 2.5\ngenerator: {iperf3: {}}\n",
	"wrong-type-list":       "tap_name: [a, b]\ngenerator: {iperf3: {}}\n",
	"wrong-type-map":        "backend: {a: b}\ngenerator: {iperf3: {}}\n",
	"wrong-type-bool":       "generator: {iperf3: {reverse: maybe}}\n",
	"wrong-type-section":    "guest: 4\ngenerator: {iperf3: {}}\n",
	"bad-enum":              "backend: tapp\ngenerator: {iperf3: {}}\n",
	"bad-enum-in-list":      "backend: [tap, vhost]\ngenerator: {iperf3: {}}\n",
	"bad-enum-pktgen-mode":  "generator: {pktgen: {mode: multi_queue}}\n",
	"bad-enum-target":       "generator: {iperf3: {}}\nperf: {stat: {targets: [qemu, vhots]}}\n",
	"duplicate-axis-value":  "backend: [tap, tap]\ngenerator: {iperf3: {}}\n",
	"empty-axis":            "backend: []\ngenerator: {iperf3: {}}\n",
	"ifname-too-long":       "tap_name: vnbtap-for-the-thread\ngenerator: {iperf3: {}}\n",
	"ifname-bad-char":       "tap_name: vnb/t0\ngenerator: {iperf3: {}}\n",
	"ifname-space":          "tap_name: \"vnb t0\"\ngenerator: {iperf3: {}}\n",
	"qdisc-typo":            "name: quick\ndescription: typo\nbackend: tap\nguest: {vcpus: 1}\nrepetitions: 1\nwarmup: 1s\nqdisc: fq_codle\ngenerator: {iperf3: {}}\n",
	"qdisc-none":            "qdisc: none\ngenerator: {iperf3: {}}\n",
	"qdisc-ingress":         "qdisc: ingress\ngenerator: {iperf3: {}}\n",
	"qdisc-not-a-kind":      "qdisc: \"FQ Codel\"\ngenerator: {iperf3: {}}\n",
	"negative-count":        "generator: {pktgen: {count: -5}}\n",
	"negative-threads":      "generator: {pktgen: {threads: -1}}\n",
	"zero-repetitions":      "repetitions: 0\ngenerator: {iperf3: {}}\n",
	"count-zero-forever":    "generator: {pktgen: {count: 0}}\n",
	"burst-on-tap":          "backend: tap+vhost\ngenerator: {pktgen: {burst: 32}}\n",
	"burst-in-axis":         "generator: {pktgen: {burst: [0, 64]}}\n",
	"clone-skb-on-tap":      "generator: {pktgen: {clone_skb: 10}}\n",
	"negative-burst":        "generator: {pktgen: {burst: -1}}\n",
	"zero-queues":           "queues: 0\ngenerator: {pktgen: {threads: 4}}\n",
	"duration-no-unit":      "warmup: 5\ngenerator: {iperf3: {}}\n",
	"duration-bad":          "generator: {iperf3: {duration: 5 sec}}\n",
	"duration-negative":     "timeouts: {boot: -5s}\ngenerator: {iperf3: {}}\n",
	"duration-iperf3-ms":    "generator: {iperf3: {duration: 1500ms}}\n",
	"memory-ambiguous":      "guest: {memory: 1G}\ngenerator: {iperf3: {}}\n",
	"memory-decimal-gb":     "guest: {memory: 2GB}\ngenerator: {iperf3: {}}\n",
	"memory-no-unit":        "guest: {memory: 512}\ngenerator: {iperf3: {}}\n",
	"memory-too-small":      "guest: {memory: 1MiB}\ngenerator: {iperf3: {}}\n",
	"memory-garbage":        "guest: {memory: lots}\ngenerator: {iperf3: {}}\n",
	"cpulist-bad":           "pin: {vcpu: \"0-\"}\ngenerator: {iperf3: {}}\n",
	"cpulist-reversed":      "pin: {vcpu: \"3-1\"}\ngenerator: {iperf3: {}}\n",
	"script-without-dir":    "generator:\n  pktgen:\n    mode: script\n",
	"script-dir-not-used":   "generator: {pktgen: {script_dir: /src/linux}}\n",
	"script-xmit-mode":      "generator: {pktgen: {mode: script, script_dir: /src/linux, xmit_mode: queue_xmit}}\n",
	"script-udp-src":        "generator: {pktgen: {mode: script, script_dir: /src/linux, udp_src_min: 10}}\n",
	"script-sample01-t2":    "generator: {pktgen: {mode: script, script_dir: /src/linux, script: pktgen_sample01_simple.sh, threads: 2}}\n",
	"script-sample01-f1":    "generator: {pktgen: {mode: script, script_dir: /src/linux, script: pktgen_sample01_simple.sh, first_cpu: 1}}\n",
	"script-sample03-burst": "generator: {pktgen: {mode: script, script_dir: /src/linux, script: pktgen_sample03_burst_single_flow.sh}}\n",
	"script-sample04-burst": "generator: {pktgen: {mode: script, script_dir: /src/linux, script: pktgen_sample04_many_flows.sh, burst: 0}}\n",
	"simple-many-threads":   "generator: {pktgen: {mode: simple, threads: 4}}\n",
	"pin-generator-pktgen":  "pin: {generator: 1}\ngenerator: {pktgen: {}}\n",
	"no-generator":          "backend: tap\n",
	"empty-generator":       "generator: {}\n",
	"null-generator":        "generator:\n",
	"kernel-no-label":       "kernels: [{image: /boot/vmlinuz}]\ngenerator: {iperf3: {}}\n",
	"kernel-dup-label":      "kernels: [{label: stock}, {label: stock, debian: \"6.1\"}]\ngenerator: {iperf3: {}}\n",
	"kernel-image-debian":   "kernels: [{label: a, image: /b, debian: \"6.1\"}]\ngenerator: {iperf3: {}}\n",
	"kernel-bad-debian":     "kernels: [{label: a, debian: bookworm}]\ngenerator: {iperf3: {}}\n",
	"kernel-bad-label":      "kernels: [{label: \"my kernel\"}]\ngenerator: {iperf3: {}}\n",
	"guest-kernel-label":    "guest: {kernel: {label: x}}\ngenerator: {iperf3: {}}\n",
	"guest-cmdline-console": "guest: {cmdline: \"console=ttyS1 nosmt\"}\ngenerator: {iperf3: {}}\n",
	"guest-cmdline-vnb":     "guest: {cmdline: \"vnb.ip=10.0.0.9/24\"}\ngenerator: {iperf3: {}}\n",
	"guest-cmdline-empty":   "guest: {cmdline: \" \"}\ngenerator: {iperf3: {}}\n",
	"guest-accel-bad":       "guest: {accel: hvf}\ngenerator: {iperf3: {}}\n",
	"target-applies-never":  "generator: {iperf3: {}}\nperf: {stat: {targets: [kpktgend]}}\n",
	"bad-ip":                "generator: {pktgen: {dst: 10.0.0.300}}\n",
	"bad-mac":               "generator: {pktgen: {dst_mac: \"52:54:00:12:34\"}}\n",
	"bad-rate":              "generator: {trafgen: {rate: fast}}\n",
	"bad-event":             "generator: {iperf3: {}}\nperf: {stat: {events: [\"cycles; rm -rf /\"]}}\n",
	"udp-range":             "generator: {pktgen: {udp_dst_min: 100, udp_dst_max: 10}}\n",
	"bad-name":              "name: My Scenario\ngenerator: {iperf3: {}}\n",
	"too-many-cells":        "backend: [tap, tap+vhost]\nqdisc: [fq, sfq, noqueue, pfifo]\nguest: {vcpus: [1, 2, 3, 4], memory: [256MiB, 512MiB, 1GiB, 2GiB]}\npin: {vcpu: [0, 1, 2, 3], vhost: [0, 1, 2, 3]}\ngenerator: {iperf3: {parallel: [1, 2, 3]}}\n",
}

func TestBadInput(t *testing.T) {
	keys := make([]string, 0, len(badInputs))
	for k := range badInputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		file := k + ".yaml"
		if k == "qdisc-typo" {
			file = "quick.yaml"
		}
		_, err := Load(file, []byte(badInputs[k]))
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%s: want *Error, got %v", k, err)
			continue
		}
		if !errors.Is(err, fault.ErrInput) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), file+":") {
			t.Errorf("%s: want one line starting %s: as bad input, got %q", k, file, err)
		}
		if se.Line == 0 && !strings.HasPrefix(k, "empty-") && k != "null-generator" {
			t.Errorf("%s: no line number: %v", k, err)
		}
		fmt.Fprintf(&out, "%s\n\t%v\n", k, err)
	}
	golden.Check(t, "bad-input.golden", out.String())
}

// The example from the issue, exactly.
func TestQdiscTypoMessage(t *testing.T) {
	_, err := Load("quick.yaml", []byte(badInputs["qdisc-typo"]))
	want := `quick.yaml:7:8: unknown qdisc "fq_codle"; did you mean fq_codel? (allowed: any tc qdisc kind such as fq_codel, noqueue, pfifo_fast, fq, sfq, ...)`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestUnknownQdiscKindAccepted(t *testing.T) {
	// A kind the list does not know (newer kernel, out of tree) that is no
	// near miss of a known one passes; the runner's tc has the last word.
	c := mustLoad(t, "qdisc: dualpi2\ngenerator: {iperf3: {}}\n").Expand()[0]
	if c.Qdisc != "dualpi2" {
		t.Errorf("qdisc %q", c.Qdisc)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := LoadFile("testdata/no-such.yaml")
	var se *Error
	if !errors.As(err, &se) || !errors.Is(err, fault.ErrInput) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("got %v", err)
	}
	_, err = Resolve("no-such-builtin")
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "vnetbench list") {
		t.Errorf("got %v", err)
	}
}

// Unknown keys are refused at every depth, in every section kind (a
// mapping, an optional section, a list of mappings, a workload's section).
func TestUnknownKeysAtAnyDepth(t *testing.T) {
	for src, want := range map[string]string{
		"generator: {iperf3: {}}\nbogus: 1\n":                                  `t.yaml:2:1: unknown key "bogus" (allowed: name, description`,
		"generator: {pktgen: {pkt_sise: 60}}\n":                                `t.yaml:1:22: unknown key "pkt_sise" in generator.pktgen; did you mean pkt_size?`,
		"guest: {kernel: {imag: x}}\ngenerator: {iperf3: {}}\n":                `t.yaml:1:18: unknown key "imag" in guest.kernel; did you mean image? (allowed: label, image, modules, debian)`,
		"perf: {record: {top: 1, callgraph: true}}\ngenerator: {iperf3: {}}\n": `t.yaml:1:25: unknown key "callgraph" in perf.record; did you mean call_graph?`,
		"kernels: [{label: a, imgae: /b}]\ngenerator: {iperf3: {}}\n":          `t.yaml:1:22: unknown key "imgae" in kernels[0]; did you mean image?`,
	} {
		_, err := Load("t.yaml", []byte(src))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant %s...", src, err, want)
		}
	}
}
