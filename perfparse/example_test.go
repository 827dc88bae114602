package perfparse_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/vnetbench/vnetbench/perfparse"
)

// Stream the rows of a perf report; memory stays constant however large
// the report is.
func ExampleNewPerfReportReader() {
	f, err := os.Open("testdata/perf-report/fixture-stdio.txt")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	rr := perfparse.NewPerfReportReader(f)
	n := 0
	for rr.Next() && n < 3 {
		row := rr.Row()
		fmt.Printf("%.4f %s %s [%s] %s\n", row.Overhead, row.Command, row.SharedObject, row.SymbolKind, row.Symbol)
		n++
	}
	if err := rr.Err(); err != nil {
		panic(err)
	}
	fmt.Println(rr.Header().Event, rr.Header().Samples)
	// Output:
	// 0.0975 qemu-system-x86 [kernel.kallsyms] [k] pvm_irq_enable
	// 0.0850 CPU 1/TCG [kernel.kallsyms] [k] pvm_irq_enable
	// 0.0581 CPU 0/TCG [kernel.kallsyms] [k] pvm_irq_enable
	// cpu-clock:ppp 16000
}

// A German mail paste: the footer's decimal comma tells that "46.997"
// groups thousands.
func ExampleParsePerfStat() {
	paste := `> 100.587,69 msec task-clock # 7,519 CPUs utilized
> 46.997 context-switches # 0,467 K/sec
>
> 13,378912345 seconds time elapsed`
	st, err := perfparse.ParsePerfStat(strings.NewReader(paste))
	if err != nil {
		panic(err)
	}
	for _, r := range st.Rows {
		fmt.Println(r.Event, r.Value, r.Unit, r.Metric.Base, r.Metric.BaseUnit)
	}
	fmt.Println(*st.ElapsedS, st.NumberFormat)
	// Output:
	// task-clock 100.58769 s 7.519 CPUs utilized
	// context-switches 46997  467 /sec
	// 13.378912345 decimal ',' grouping '.'
}

func ExampleParsePktgen() {
	f, err := os.Open("testdata/pktgen/pktgen-tap0-L1-drain-ok.txt")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	d, err := perfparse.ParsePktgen(f)
	if err != nil {
		panic(err)
	}
	r := d.Result
	fmt.Println(d.Device, r.Packets, r.PPS, r.BitsPerSec, r.Errors, r.Seconds)
	// Output:
	// tap0 100000 155742 7.475616e+07 0 0.642086
}
