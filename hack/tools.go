//go:build tools

// Package hack pins the code generators in go.mod, so hack/update-codegen.sh runs the versions the
// project's libraries were built with: kube_codegen.sh's generators (k8s.io/code-generator), and
// go-to-protobuf with its protoc plugin and the goimports it runs on what protoc wrote.
package hack

import (
	_ "golang.org/x/tools/cmd/goimports"
	_ "k8s.io/code-generator"
	_ "k8s.io/code-generator/cmd/go-to-protobuf"
	_ "k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo"
)
