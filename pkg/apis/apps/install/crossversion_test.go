package install

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// crossVersionKinds are the kinds served at both v1alpha1 and v1beta1 whose two versions carry
// each other's fields in full (the Advanced StatefulSet's v1alpha1 status is smaller: it is
// tested in TestRoundTripStatefulSetV1alpha1).
var crossVersionKinds = []string{
	"SidecarSet", "SidecarSetList",
	"ImagePullJob", "ImagePullJobList",
	"ImageListPullJob", "ImageListPullJobList",
	"NodeImage", "NodeImageList",
	"DaemonSet", "DaemonSetList",
	"ContainerRecreateRequest", "ContainerRecreateRequestList",
	"CloneSet", "CloneSetList",
}

// TestCrossVersionRoundTrip fuzzes an object of one version, converts it to the other version
// (through the hub, as the server does when a client reads what another wrote) and back, and
// checks that nothing is lost, in both directions, for every kind served at both versions:
// what OpenKruise's own conversion drops is carried in annotations.
func TestCrossVersionRoundTrip(t *testing.T) {
	scheme, codecs := testScheme(t)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, jsonSafeFuncs), rand.NewSource(rand.Int63()), codecs)
	directions := [][2]schema.GroupVersion{
		{v1alpha1.SchemeGroupVersion, v1beta1.SchemeGroupVersion},
		{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion},
	}
	for _, kind := range crossVersionKinds {
		for _, d := range directions {
			from, to := d[0].WithKind(kind), d[1].WithKind(kind)
			t.Run(kind+"/"+d[0].Version+"-"+d[1].Version, func(t *testing.T) {
				for i := 0; i < 200; i++ {
					orig := newObject(t, scheme, from)
					f.Fill(orig)
					orig.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
					in, mid, back := orig.DeepCopyObject(), newObject(t, scheme, to), newObject(t, scheme, from)
					hubKind := apps.SchemeGroupVersion.WithKind(kind)
					steps := [][2]runtime.Object{
						{in, newObject(t, scheme, hubKind)}, {nil, mid}, {mid, newObject(t, scheme, hubKind)}, {nil, back},
					}
					for j, step := range steps {
						src := step[0]
						if src == nil { // from the hub object of the step before
							src = steps[j-1][1]
						}
						if err := scheme.Convert(src, step[1], nil); err != nil {
							t.Fatalf("converting %T to %T: %v", src, step[1], err)
						}
					}
					if !apiequality.Semantic.DeepEqual(in, orig) {
						t.Fatalf("the conversion changed its input: %s", diff.Diff(orig, in))
					}
					if !apiequality.Semantic.DeepEqual(orig, back) {
						t.Fatalf("%s through %s and back lost: %s", from, to, diff.Diff(orig, back))
					}
				}
			})
		}
	}
}

func newObject(t *testing.T, scheme *runtime.Scheme, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	obj, err := scheme.New(gvk)
	if err != nil {
		t.Fatalf("new %s: %v", gvk, err)
	}
	return obj
}
