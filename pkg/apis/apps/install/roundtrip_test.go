package install

import (
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// TestRoundTrip fuzzes every kind of the group, internal and versioned, and checks that it comes
// back unchanged from JSON and protobuf through every other version: no field is lost by the
// generated and hand-written conversions. The scheme has the types and conversions but not the
// defaults, which would fill in what the fuzzer left empty.
func TestRoundTrip(t *testing.T) {
	scheme, codecs := testScheme(t)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, jsonSafeFuncs), rand.NewSource(rand.Int63()), codecs)
	// The v1alpha1 Advanced StatefulSet is tested apart below: it has fewer status fields.
	alphaStatefulSet := map[schema.GroupVersionKind]bool{
		v1alpha1.SchemeGroupVersion.WithKind("StatefulSet"):     true,
		v1alpha1.SchemeGroupVersion.WithKind("StatefulSetList"): true,
	}
	roundtrip.RoundTripTypes(t, scheme, codecs, f, alphaStatefulSet)
	roundtrip.RoundTripExternalTypes(t, scheme, codecs, f, nil)
}

// TestRoundTripStatefulSetV1alpha1: a v1beta1 Advanced StatefulSet read and written back through
// v1alpha1 keeps every spec field, the ones v1alpha1 lacks included (they travel in
// v1alpha1.StatefulSetV1beta1FieldsAnnotation). What v1alpha1 loses is known and small: the
// status fields it does not have, and a retention policy equal to the default, which defaulting
// gives back.
func TestRoundTripStatefulSetV1alpha1(t *testing.T) {
	scheme, codecs := testScheme(t)
	lossy := func(runtimeserializer.CodecFactory) []any {
		return []any{
			func(s *apps.StatefulSetStatus, c randfill.Continue) {
				c.FillNoCustom(s)
				s.UpdatedReadyReplicas, s.UpdatedAvailableReplicas, s.VolumeClaims = 0, 0, nil
			},
			func(p *apps.StatefulSetPersistentVolumeClaimRetentionPolicy, c randfill.Continue) {
				p.WhenDeleted, p.WhenScaled = apps.DeletePersistentVolumeClaimRetentionPolicyType, apps.RetainPersistentVolumeClaimRetentionPolicyType
				if c.Bool() {
					p.WhenDeleted, p.WhenScaled = p.WhenScaled, p.WhenDeleted
				}
			},
		}
	}
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, jsonSafeFuncs, lossy), rand.NewSource(rand.Int63()), codecs)
	for _, kind := range []string{"StatefulSet", "StatefulSetList"} {
		roundtrip.RoundTripSpecificKind(t, apps.SchemeGroupVersion.WithKind(kind), scheme, codecs, f,
			map[schema.GroupVersionKind]bool{v1beta1.SchemeGroupVersion.WithKind(kind): true})
	}
}

// testScheme has the group's types and conversions, and none of its defaults: those would fill
// in what the fuzzer left empty. The types are those Install registers.
func testScheme(t *testing.T) (*runtime.Scheme, runtimeserializer.CodecFactory) {
	t.Helper()
	full := runtime.NewScheme()
	Install(full)
	scheme := runtime.NewScheme()
	if err := apps.AddToScheme(scheme); err != nil {
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
