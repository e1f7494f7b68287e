// Package checkdocs checks that the documentation cannot go stale unnoticed: docs/layout.md names
// every Go package directory of the repository and only paths that exist, and every relative link
// in README.md and docs/ points to a file that exists. hack/verify.sh runs it (make verify, CI).
package checkdocs
