// Command models-schema prints the OpenAPI v2 definitions of zz_generated.openapi.go as one JSON
// document; hack/update-codegen.sh feeds it to applyconfiguration-gen so that the generated apply
// configurations know each field's list and map semantics.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/inplace-dev/inplace/pkg/generated/openapi"
)

func main() {
	if err := printSchema(); err != nil {
		fmt.Fprintf(os.Stderr, "models-schema: %v\n", err)
		os.Exit(1)
	}
}

func printSchema() error {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	defs := openapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]spec.Schema, len(defs))
	for name, def := range defs {
		// A definition may carry its v2 form as an extension; applyconfiguration-gen reads v2.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schemas[name] = v2
			continue
		}
		schemas[name] = def.Schema
	}
	doc, err := json.Marshal(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "inplace", Version: "unversioned"}},
		Definitions: schemas,
	}})
	if err != nil {
		return fmt.Errorf("encoding definitions: %w", err)
	}
	_, err = os.Stdout.Write(doc)
	return err
}
