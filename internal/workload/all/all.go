// Package all registers every workload. A program (cmd/vnetbench) or a
// test that loads scenarios or runs cells imports it; a new workload is
// one package under internal/workload/ plus one line here.
package all

import (
	"github.com/vnetbench/vnetbench/internal/workload"
	"github.com/vnetbench/vnetbench/internal/workload/afxdp"
	"github.com/vnetbench/vnetbench/internal/workload/iperf3"
	"github.com/vnetbench/vnetbench/internal/workload/pktgen"
	"github.com/vnetbench/vnetbench/internal/workload/tcprr"
	"github.com/vnetbench/vnetbench/internal/workload/testpmd"
	"github.com/vnetbench/vnetbench/internal/workload/trafgen"
	"github.com/vnetbench/vnetbench/internal/workload/vsock"
	"github.com/vnetbench/vnetbench/internal/workload/xdpredirect"
)

func init() {
	// The order is the order of the scenario reference and of the
	// generator: key's allowed values.
	workload.Register(pktgen.Workload{})
	workload.Register(trafgen.Workload{})
	workload.Register(iperf3.Workload{})
	workload.Register(afxdp.Workload{})
	workload.Register(testpmd.Workload{})
	workload.Register(vsock.Workload{})
	workload.Register(tcprr.Workload{})
	workload.Register(xdpredirect.Workload{})
}
