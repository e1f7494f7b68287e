//go:build tools

// Package hack pins the code generators in go.mod, so hack/update-codegen.sh runs the versions the
// project's libraries were built with.
package hack

import _ "k8s.io/code-generator"
