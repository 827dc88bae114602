package results

// Metric definitions and tables of the workloads (tx_pps, throughput_bps,
// ...) come from the workload registry.
import _ "github.com/vnetbench/vnetbench/internal/workload/all"
