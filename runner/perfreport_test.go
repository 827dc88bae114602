package runner

import "testing"

func TestPerfSymbolsTrailingColumns(t *testing.T) {
	out := []byte("# Overhead  Shared Object  Symbol  IPC  [IPC Coverage]\n" +
		"     7.01%  [JIT] tid 13189     [.] 0x00007fcfe8ae8636              -      -\n" +
		"     4.89%  [kernel.kallsyms]   [k] finish_task_switch.isra.0       -      -\n")
	syms := perfSymbols(out, "qemu", 10)
	if len(syms) != 2 || syms[0].Symbol != "0x00007fcfe8ae8636" || syms[0].DSO != "[JIT] tid 13189" ||
		syms[1].Symbol != "finish_task_switch.isra.0" || syms[1].Overhead != 4.89 {
		t.Errorf("got %+v", syms)
	}
}
