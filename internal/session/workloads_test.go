package session

// Every workload registers its metrics and gates, as in the binary.
import _ "github.com/vnetbench/vnetbench/internal/workload/all"
