// Package report owns the results store (results.jsonl, env.json), turns
// samples into a format-free table model with statistics, and renders it as
// text, markdown, CSV, JSON, Go benchmark format or HTML. It never starts
// processes.
package report
