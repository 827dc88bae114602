package main

import (
	"flag"
	"time"

	"github.com/vnetbench/vnetbench/internal/session"
)

// addMaxTimeFlag registers --max-time on fs.
func addMaxTimeFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("max-time", session.DefaultMaxTime, "refuse a run whose estimate passes `DURATION` (0 = no limit); plan and run print the estimate and a shorter form")
}
