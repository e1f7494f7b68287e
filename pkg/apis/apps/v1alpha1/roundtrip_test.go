package v1alpha1

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// TestRoundTrip fuzzes every kind of the group, internal and v1alpha1, and checks that it comes
// back unchanged from JSON through the other version: no field is lost by the generated
// conversions (the internal and versioned types must keep the same fields). The scheme has the
// types and conversions but not the defaults, which would fill in what the fuzzer left empty.
func TestRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	builder := runtime.NewSchemeBuilder(apps.AddToScheme, addKnownTypes, RegisterConversions)
	if err := builder.AddToScheme(scheme); err != nil {
		t.Fatalf("building the scheme: %v", err)
	}
	codecs := runtimeserializer.NewCodecFactory(scheme)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, jsonSafeFuncs), rand.NewSource(rand.Int63()), codecs)
	roundtrip.RoundTripTypes(t, scheme, codecs, f, nil)
	roundtrip.RoundTripExternalTypes(t, scheme, codecs, f, nil)
}

// jsonSafeFuncs fill the types whose random values do not survive JSON as they are: a Quantity
// is re-canonicalised, an IntOrString keeps only the half its Type names.
func jsonSafeFuncs(runtimeserializer.CodecFactory) []any {
	return []any{
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(0))
			}
		},
	}
}
