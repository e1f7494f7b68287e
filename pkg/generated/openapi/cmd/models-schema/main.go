// Command models-schema prints the OpenAPI v2 definitions of zz_generated.openapi.go as one JSON
// document; hack/update-codegen.sh feeds it to applyconfiguration-gen so that the generated apply
// configurations know each field's list and map semantics.
//
// applyconfiguration-gen (code-generator v0.37) looks a kind's schema up by the name it derives
// from the Go package (com.github.inplace-dev.inplace.pkg.apis.apps.v1alpha1.CloneSet), not by
// the OpenAPI model name the types declare (io.kruise.apps.v1alpha1.CloneSet, OpenKruise's): so
// the definitions are printed under the Go-derived names (goDerivedName), and
// hack/update-codegen.sh renames them back to the model names in the generated code, which is
// what the runtime's type converter asks for (scheme.ToOpenAPIDefinitionName). Without both
// steps the apply configurations held an untyped schema and the fake clientset's field-managed
// tracker could not convert any of the kinds.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

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
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + goDerivedName(name)) }
	defs := openapi.GetOpenAPIDefinitions(ref)
	schemas := make(map[string]spec.Schema, len(defs))
	for model, def := range defs {
		name := goDerivedName(model)
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

// modelPrefix is the OpenAPI model names' prefix of inplace's API packages (pkg/apis/apps/...),
// goPrefix the one applyconfiguration-gen derives from their Go package path.
const (
	modelPrefix = "io.kruise.apps."
	goPrefix    = "com.github.inplace-dev.inplace.pkg.apis.apps."
)

// goDerivedName is the name applyconfiguration-gen gives the type of an OpenAPI model name: the
// same for every type but inplace's own.
func goDerivedName(model string) string {
	if rest, ok := strings.CutPrefix(model, modelPrefix); ok {
		return goPrefix + rest
	}
	return model
}
