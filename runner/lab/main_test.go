package lab

// The tests' scenarios name every workload.
import _ "github.com/vnetbench/vnetbench/internal/workload/all"
