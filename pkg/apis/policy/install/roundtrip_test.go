package install

import (
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
)

// TestRoundTrip fuzzes PodUnavailableBudgets, internal and versioned, and checks that each comes
// back unchanged from JSON and protobuf through every other version: v1alpha1 carries v1beta1's
// protectOperations, protectTotalReplicas and ignoredPodSelector in annotations and loses none.
func TestRoundTrip(t *testing.T) {
	scheme, codecs := testScheme(t)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, validValues), rand.NewSource(rand.Int63()), codecs)
	roundtrip.RoundTripTypes(t, scheme, codecs, f, nil)
	roundtrip.RoundTripExternalTypes(t, scheme, codecs, f, nil)
}

func testScheme(t *testing.T) (*runtime.Scheme, runtimeserializer.CodecFactory) {
	t.Helper()
	full := runtime.NewScheme()
	Install(full)
	scheme := runtime.NewScheme()
	if err := policy.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	versions := map[schema.GroupVersion]func(*runtime.Scheme) error{
		v1alpha1.SchemeGroupVersion: v1alpha1.RegisterConversions,
		v1beta1.SchemeGroupVersion:  v1beta1.RegisterConversions,
	}
	for gv, registerConversions := range versions {
		for gvk, typ := range full.KnownTypes(gv) {
			scheme.AddKnownTypeWithName(gv.WithKind(gvk), reflect.New(typ).Interface().(runtime.Object))
		}
		metav1.AddToGroupVersion(scheme, gv)
		if err := registerConversions(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme, runtimeserializer.NewCodecFactory(scheme)
}

// validValues fill what must be valid to mean the same at v1alpha1: protected operations are
// operations (an unknown one stays an annotation there, for validation to refuse), the
// annotations v1alpha1 uses for fields are not random ones, and an IntOrString keeps only the
// half its Type names.
func validValues(runtimeserializer.CodecFactory) []any {
	return []any{
		func(s *policy.PodUnavailableBudgetSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			for i := range s.ProtectOperations {
				s.ProtectOperations[i] = policy.PubOperations[c.Intn(len(policy.PubOperations))]
			}
		},
		func(s *v1beta1.PodUnavailableBudgetSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			for i := range s.ProtectOperations {
				s.ProtectOperations[i] = v1beta1.PubOperation(policy.PubOperations[c.Intn(len(policy.PubOperations))])
			}
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
