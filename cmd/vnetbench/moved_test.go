package main

import (
	"github.com/vnetbench/vnetbench/internal/history/store"
	"github.com/vnetbench/vnetbench/internal/session"
)

// The plan's JSON model, which moved to internal/session, by the names
// the plan tests decode it with.
type (
	plan       = session.Plan
	planRun    = session.PlanRun
	planCell   = session.PlanCell
	planColumn = session.PlanColumn
)

// diagnosticMetric, which moved to internal/history/store, by the name
// the history tests call it.
func diagnosticMetric(m string) bool { return store.Diagnostic(m) }
