package scenarios

import (
	"fmt"
	"reflect"
	"strings"
)

// referenceIntro is the prose before the generated key table.
const referenceIntro = `A scenario is one YAML file (or a built-in name: ` + "`vnetbench list`" + `).
Decoding is strict: an unknown key, a wrong type or a value outside the
allowed set is an error with file:line:col, the allowed values and, for
near misses, a suggestion (` + "`vnetbench validate FILE`" + ` checks a file without
touching the host).

**Values.** Durations are Go durations (` + "`500ms`, `120s`, `2m`" + `); a bare number
is an error. Sizes use binary units (` + "`512MiB`, `1GiB`" + `). CPU lists use the
kernel's cpulist syntax as a string or number (` + "`0`, `\"0-3\"`, `\"0,2\"`" + `) or
` + "`none`" + `. In a scenario file, relative paths are relative to the file and
` + "`~/`" + ` is the home directory.

**Axes.** A key marked *axis* below may be given a YAML list: the scenario
then expands into the cartesian product of all its lists, one cell per
combination (` + "`backend: [tap, tap+vhost]`" + ` gives two cells). Giving several
generator kinds (` + "`generator: {iperf3: {...}, trafgen: {...}}`" + `) is an axis too;
generator sub-keys only combine with their own kind. Every other key takes a
single value. A CPU list written as a YAML list is an axis of CPU lists:
` + "`vhost: [none, 0]`" + ` compares unpinned against CPU 0; pin to several CPUs with
one string (` + "`vhost: \"0-1\"`" + `). At most 1024 cells and 20000 runs.

**Cell names.** A cell is named by the path of its values:
` + "`backend/generator/qdisc/...`" + `, e.g. ` + "`tap+vhost/pktgen-t4/fq_codel/vhost-pin0`" + `.
The backend and the generator (` + "`pktgen-tN`" + ` with N threads, ` + "`iperf3-pN`" + ` with N
streams, ` + "`trafgen`" + `) always appear, the qdisc when set, a pin when set
(` + "`vhost-pin0`, `vcpu-pin1-2`, `gen-pin3`" + `), and every other axis only when the
file lists several values for it (` + "`q4`, `burst0`, `burst-default`, `pkt1500`, `vcpus2`, `mem2GiB`" + `, ...).
Combinations that are the same experiment (pin.vhost on a plain tap, which
has no vhost worker) are one cell. The kernel is not part of the name.

**Kernels** are the column axis of every report: each cell runs once per
kernel label. The default is the running kernel (` + "`[{label: running}]`" + `). A
kernel with ` + "`image`" + ` (and ` + "`modules`" + `) or ` + "`debian`" + ` is booted in a lab VM and the
cells run inside it, e.g. ` + "`[{label: stock, debian: \"6.1\"}, {label: patched, image: ~/linux/arch/x86/boot/bzImage, modules: ~/linux/mods/lib/modules/6.1.0}]`" + `.

**Run order.** Every cell runs ` + "`repetitions`" + ` times. Runs go in rounds (all
first repetitions, then all second ones, ...), shuffled within each round by
a seeded generator, so slow drift hits every compared variant alike. The seed
is printed by ` + "`plan`" + ` and ` + "`run`" + `; ` + "`--seed N`" + ` or ` + "`seed:`" + ` reproduces an order.

**Tap limits.** pktgen's ` + "`burst`" + ` > 1 and ` + "`clone_skb`" + ` > 0 are rejected by tap
devices (errno 524, ENOTSUPP) and by this decoder. ` + "`burst: default`" + ` leaves
burst unwritten (the kernel's default, 1); ` + "`burst: 0`" + ` writes 0, which the
kernel also treats as 1.

**Qdiscs.** ` + "`qdisc`" + ` takes any tc qdisc kind. Known kinds (` + "`fq_codel`, `noqueue`, `pfifo_fast`, `fq`, `sfq`, `pfifo`, `cake`, `netem`, `mq`" + `, ...)
are accepted; another lowercase word is accepted as a kind this list does not
know, unless it is within two edits of a known one (then it is reported as a
typo). pktgen sends past the qdisc unless ` + "`xmit_mode: queue_xmit`" + `; the qdisc
is still attached (a tap that stops its queue when full does so only with a
qdisc). ` + "`xmit_mode: start_xmit`" + ` says that is meant (no warning).

An example, the built-in ` + "`thread-pktgen-vhost-pin0`" + `:

` + "```yaml\n%s```" + `

Every key, with its type, default and unit (generated from the schema; a test
keeps this table and the code in step):
`

// Reference returns the scenario language reference as Markdown: the
// rules above and a table of every key, generated from the schema's
// struct tags. README.md embeds it; a test keeps the two equal.
func Reference() string {
	var b strings.Builder
	example, _ := BuiltinData("thread-pktgen-vhost-pin0")
	fmt.Fprintf(&b, referenceIntro, example)
	b.WriteString("\n| key | type | default | unit | axis | meaning |\n|---|---|---|---|---|---|\n")
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for _, f := range fieldsOf(t) {
			p := join(path, f.key)
			ft := f.sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if p == "guest.kernel.label" {
				continue
			}
			sf := f.sf
			if d, ok := guestKernelDoc[p]; ok {
				sf.Tag = reflect.StructTag(strings.Replace(string(sf.Tag), `doc:"`+sf.Tag.Get("doc")+`"`, `doc:"`+strings.ReplaceAll(d, `"`, `\"`)+`"`, 1))
			}
			row(&b, p, sf)
			switch {
			case ft.Kind() == reflect.Struct && ft != durationType:
				walk(ft, p)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p+"[]")
			}
		}
	}
	walk(reflect.TypeOf(document{}), "")
	return b.String()
}

// guestKernelDoc overrides the kernel docs for guest.kernel.*, which shares
// the Kernel type with the kernels under test.
var guestKernelDoc = map[string]string{
	"guest.kernel.image":   "guest kernel image; unset = the default guest image's kernel",
	"guest.kernel.modules": "modules directory for the guest image; unset = the default image's modules",
	"guest.kernel.debian":  "Debian kernel version for the guest instead of image, e.g. \"6.1\"",
}

func row(b *strings.Builder, path string, sf reflect.StructField) {
	def := sf.Tag.Get("default")
	if a := sf.Tag.Get("auto"); a != "" {
		def = a
	}
	if _, ok := sf.Tag.Lookup("default"); !ok && def == "" {
		def = "unset"
	}
	if sf.Tag.Get("required") == "1" {
		def = "required"
	}
	ft := sf.Type
	if ft.Kind() == reflect.Struct && ft != durationType || ft.Kind() == reflect.Pointer {
		def = ""
		if ft.Kind() == reflect.Pointer {
			def = "off"
		}
		if sf.Tag.Get("required") == "1" {
			def = "required"
		}
	}
	axis := ""
	if sf.Tag.Get("axis") == "1" {
		axis = "yes"
	}
	cell := func(s string) string {
		if s == "" {
			return ""
		}
		return strings.ReplaceAll(s, "|", `\|`)
	}
	code := func(s string) string {
		if s == "" || s == "unset" || s == "required" || s == "off" || strings.Contains(s, " ") && !strings.HasPrefix(s, "[") {
			return cell(s)
		}
		return "`" + cell(s) + "`"
	}
	unit := sf.Tag.Get("unit")
	if unit == "duration" {
		unit = ""
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s | %s |\n", path, cell(typeDesc(sf)), code(def), cell(unit), axis, cell(sf.Tag.Get("doc")))
}

func typeDesc(sf reflect.StructField) string {
	t := sf.Type
	if t == durationType {
		return "duration"
	}
	if e := sf.Tag.Get("enum"); e != "" {
		vals := strings.Split(e, ",")
		for i, v := range vals {
			if v == "" {
				vals[i] = "(unset)"
			} else {
				vals[i] = "`" + v + "`"
			}
		}
		if t.Kind() == reflect.Slice {
			return "list of " + strings.Join(vals, ", ")
		}
		return strings.Join(vals, ", ")
	}
	switch sf.Tag.Get("kind") {
	case "memory":
		return "size"
	case "cpus":
		return "CPU list"
	case "queues":
		return "integer or `auto`"
	case "burst":
		return "integer or `default`"
	case "qdisc":
		return "tc qdisc kind"
	case "ifname":
		return "interface name"
	case "ip":
		return "IP address"
	case "mac":
		return "MAC address"
	case "path":
		return "path"
	case "event":
		return "list of perf events"
	case "rate":
		return "rate (`10kpps`, `100Mbit`)"
	case "bitrate":
		return "bitrate (`500M`, `1G`)"
	case "debian":
		return "version"
	case "script":
		return "file name"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Pointer, reflect.Struct:
		return "mapping"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "list of mappings"
		}
		return "list of strings"
	}
	return t.String()
}
