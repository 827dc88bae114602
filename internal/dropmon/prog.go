package dropmon

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Key is one entry of the counting map: the address the drop function
// returns to (inside the function that dropped the packet) and the drop
// reason (enum skb_drop_reason).
type Key struct {
	Addr   uint64
	Reason uint32
	_      uint32
}

// mapSpec is the counting map: (Key) -> number of drops. 16,384 entries
// hold every (function, reason) pair a kernel has many times over.
func mapSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "vnb_drops", Type: ebpf.Hash, KeySize: 16, ValueSize: 8, MaxEntries: 16384}
}

// x86_64 struct pt_regs offsets a kprobe program reads.
const (
	regsDX = 12 * 8
	regsSI = 13 * 8
	regsSP = 19 * 8
)

// Stack slots of the programs: the key at fp-16 (address) and fp-8
// (reason, padding), the initial value at fp-24.
const (
	keyOff   = -16
	reasonOf = -8
	valueOff = -24
)

// kprobeKey fills the key from a kprobe at the entry of the drop function:
// the return address is the word at the stack pointer, the reason the
// argument in register reasonReg (pt_regs offset).
func kprobeKey(reasonReg int16) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R3, asm.R6, regsSP, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, keyOff),
		asm.Mov.Imm(asm.R2, 8),
		// Zeroes the destination when the read fails: address 0.
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R7, asm.R6, reasonReg, asm.DWord),
		asm.StoreMem(asm.RFP, reasonOf, asm.R7, asm.Word),
		asm.StoreImm(asm.RFP, reasonOf+4, 0, asm.Word),
	}
}

// tracepointKey fills the key from skb:kfree_skb's raw arguments
// (u64 args[]: skb, location, reason, ...).
func tracepointKey() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 8, asm.DWord),
		asm.StoreMem(asm.RFP, keyOff, asm.R2, asm.DWord),
		asm.LoadMem(asm.R7, asm.R1, 16, asm.DWord),
		asm.StoreMem(asm.RFP, reasonOf, asm.R7, asm.Word),
		asm.StoreImm(asm.RFP, reasonOf+4, 0, asm.Word),
	}
}

// count adds one to the key's entry of map fd, inserting it at 1 when it
// is missing (a second lookup when another CPU inserted it first).
func count(fd int) asm.Instructions {
	lookupAdd := func(miss string) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, fd),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, keyOff),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, miss),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Ja.Label("out"),
		}
	}
	insns := lookupAdd("insert")
	insns = append(insns,
		asm.Mov.Imm(asm.R1, 1).WithSymbol("insert"),
		asm.StoreMem(asm.RFP, valueOff, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, fd),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keyOff),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, valueOff),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateNoExist)),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
	)
	insns = append(insns, lookupAdd("out")...)
	return append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
}

// programSpec is the counting program for probe p on map fd.
func programSpec(p probe, fd int) *ebpf.ProgramSpec {
	spec := &ebpf.ProgramSpec{Name: "vnb_drops", License: "GPL"}
	if p.kprobe {
		spec.Type = ebpf.Kprobe
		spec.Instructions = append(kprobeKey(p.reasonReg), count(fd)...)
	} else {
		spec.Type = ebpf.RawTracepoint
		spec.Instructions = append(tracepointKey(), count(fd)...)
	}
	return spec
}
