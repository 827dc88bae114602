package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vnetbench/vnetbench/internal/schema"
)

// Latency is the latency probe of a cell (the latency: section): UDP
// request/response probes from the host's run namespace through the tap
// to a reflector in the guest, during an idle phase before the load and
// while the load runs. nil = no probe.
type Latency struct {
	// Interval between probes (one flow, one probe in flight per tick).
	Interval time.Duration
	// Sizes are the UDP payload sizes in bytes, sent in turn.
	Sizes []int
	// Timeout after which an unanswered probe counts as lost.
	Timeout time.Duration
	// Idle is the length of the idle phase before the load (the baseline).
	Idle time.Duration
	// Port is the reflector's UDP port in the guest.
	Port int
}

// Probe payload limits: the sequence header, and what fits a 1500-byte
// MTU with IPv4 and UDP headers.
const (
	MinProbeSize = 16
	MaxProbeSize = 1472
)

// Fields lists the latency section's keys.
func (l *Latency) Fields() []schema.Field {
	return []schema.Field{
		schema.Duration(&l.Interval, "interval").Default(5 * time.Millisecond).
			Doc("time between probes; each probe is one UDP request the guest's reflector answers (200 probes/s at 5ms)"),
		schema.Value(&l.Sizes, "sizes", intList(MinProbeSize, MaxProbeSize)).Default([]int{64}).Unit("bytes").
			Doc(fmt.Sprintf("UDP payload sizes of the probes, sent in turn (e.g. [64, 1400]: small and full-size); %d to %d; the metrics pool all sizes, the samples artifact keeps each probe's size", MinProbeSize, MaxProbeSize)),
		schema.Duration(&l.Timeout, "timeout").Default(time.Second).
			Doc("a probe without an answer after this long is lost (probe_loss_frac); the probe keeps listening this long after the load ends"),
		schema.Duration(&l.Idle, "idle").Default(2 * time.Second).
			Doc("probe phase before the load starts (and before warmup): the idle baseline of rtt_idle_p50_s and rtt_inflation_s"),
		schema.Int(&l.Port, "port", 1, 65535).Default(7007).Unit("UDP port").
			Doc("port of the reflector the guest agent runs for the probe"),
	}
}

// check validates rules across the section's keys.
func (l *Latency) check(file string, pos schema.Pos) error {
	if l.Interval < 100*time.Microsecond {
		return pos.Errorf(file, "latency.interval", "interval %s is below 100µs; the probe sends one request per interval from one thread: use 100µs or more", schema.FormatDuration(l.Interval))
	}
	if l.Timeout < l.Interval {
		return pos.Errorf(file, "latency.timeout", "timeout %s is shorter than interval %s; use a timeout of at least one interval (default 1s)", schema.FormatDuration(l.Timeout), schema.FormatDuration(l.Interval))
	}
	return nil
}

// intList is a list of integers in [lo, hi] (a single integer is a list
// of one); each listed once.
func intList(lo, hi int) schema.Kind[[]int] {
	return schema.Kind[[]int]{
		Type: "list of integers",
		Parse: func(n *yaml.Node, c *schema.Ctx) ([]int, string) {
			items := []*yaml.Node{n}
			if n.Kind == yaml.SequenceNode {
				items = n.Content
			}
			if len(items) == 0 || len(items) > schema.MaxListLen {
				return nil, fmt.Sprintf("%s: want 1 to %d integers, got %d", c.Path, schema.MaxListLen, len(items))
			}
			var out []int
			for i, it := range items {
				c.At(it)
				if it.Kind != yaml.ScalarNode || it.Tag != "!!int" {
					return nil, fmt.Sprintf("%s[%d]: want an integer, got %s", c.Path, i, schema.Describe(it))
				}
				x, err := strconv.Atoi(it.Value)
				if err != nil || x < lo || x > hi {
					return nil, fmt.Sprintf("%s[%d]: %s is outside %d..%d", c.Path, i, it.Value, lo, hi)
				}
				if slices.Contains(out, x) {
					return nil, fmt.Sprintf("%s: %d listed twice; list each once", c.Path, x)
				}
				out = append(out, x)
			}
			c.At(nil)
			return out, ""
		},
		Format: func(v []int) string {
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = strconv.Itoa(x)
			}
			return strings.Join(s, ",")
		},
		DocFormat: func(v []int) string {
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = strconv.Itoa(x)
			}
			return "[" + strings.Join(s, ", ") + "]"
		},
	}
}
