// Package validate checks the CI recipes in docs/ci with the validators
// their ecosystems use, from pinned versions (this module's go.mod):
// actionlint for the GitHub Actions workflow, GitLab's CI JSON Schema for
// the GitLab file, and strict decoding into the Kubernetes API types
// (k8s.io/api) for the Jobs. It is a module of its own so that these
// dependencies stay out of vnetbench's go.mod; run it with
//
//	go -C docs/ci/validate test ./...
package validate
