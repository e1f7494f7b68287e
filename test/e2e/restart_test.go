package e2e

import (
	"context"
	"reflect"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestRestartKeepsObjects: inplace-apiserver stopped (TERM) or killed (KILL) through its
// recorded pid and started again by its local-up hook loses no object: CloneSets, SidecarSets
// and ContainerRecreateRequests written before are read back with the same UID and spec.
func TestRestartKeepsObjects(t *testing.T) {
	ctx := framework.Context(t)
	// Whatever happens here, leave a running inplace-apiserver to the tests after this one.
	framework.StartAgainAfter(t, "inplace-apiserver")
	ns := framework.NewNamespace(t, ctx, "restart")
	framework.RunPod(t, ctx, ns, "target")

	var objects []*restartObject
	createAll := func(suffix string) {
		t.Helper()
		apps := framework.Inplace.AppsV1alpha1()
		cs, err := apps.CloneSets(ns).Create(ctx, testCloneSet("cs-"+suffix), metav1.CreateOptions{})
		objects = append(objects, track(t, "CloneSet", cs, err, apps.CloneSets(ns).Get, func(o *v1alpha1.CloneSet) any { return o.Spec }))

		ss, err := apps.SidecarSets().Create(ctx, testSidecarSet("e2e-"+ns+"-"+suffix), metav1.CreateOptions{})
		objects = append(objects, track(t, "SidecarSet", ss, err, apps.SidecarSets().Get, func(o *v1alpha1.SidecarSet) any { return o.Spec }))
		t.Cleanup(func() {
			_ = apps.SidecarSets().Delete(context.Background(), ss.Name, metav1.DeleteOptions{})
		})

		crr, err := apps.ContainerRecreateRequests(ns).Create(ctx, &v1alpha1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "crr-" + suffix},
			Spec: v1alpha1.ContainerRecreateRequestSpec{
				PodName:    "target",
				Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
			},
		}, metav1.CreateOptions{})
		objects = append(objects, track(t, "ContainerRecreateRequest", crr, err, apps.ContainerRecreateRequests(ns).Get,
			func(o *v1alpha1.ContainerRecreateRequest) any { return o.Spec }))
	}

	createAll("before-term")
	framework.RestartAPIServer(t, ctx, syscall.SIGTERM)
	checkObjects := func() {
		t.Helper()
		for _, o := range objects {
			uid, spec, err := o.get(ctx)
			if err != nil {
				t.Errorf("%s %s after the restart: %v", o.kind, o.name, err)
				continue
			}
			if uid != o.uid {
				t.Errorf("%s %s: UID %s after the restart, was %s", o.kind, o.name, uid, o.uid)
			}
			if !reflect.DeepEqual(spec, o.spec) {
				t.Errorf("%s %s: spec changed across the restart:\nbefore %+v\nafter  %+v", o.kind, o.name, o.spec, spec)
			}
		}
	}
	checkObjects()

	// Written right before a crash: still there after it.
	createAll("before-kill")
	framework.RestartAPIServer(t, ctx, syscall.SIGKILL)
	checkObjects()

	list, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("%d CloneSets listed after the restarts, want 2", len(list.Items))
	}
	// And the server takes writes again.
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, testCloneSet("cs-after"), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a CloneSet after the restarts: %v", err)
	}
}

// restartObject is an object TestRestartKeepsObjects wrote: what it was, and how to read it again.
type restartObject struct {
	kind, name string
	uid        types.UID
	spec       any
	get        func(context.Context) (types.UID, any, error)
}

// track is the restartObject of obj, just created (err: what the create answered, fatal if not
// nil), read again with get; spec is the part of it that must survive.
func track[T metav1.Object](t *testing.T, kind string, obj T, err error, get func(context.Context, string, metav1.GetOptions) (T, error), spec func(T) any) *restartObject {
	t.Helper()
	if err != nil {
		t.Fatalf("creating %s: %v", kind, err)
	}
	name := obj.GetName()
	return &restartObject{kind: kind, name: name, uid: obj.GetUID(), spec: spec(obj), get: func(ctx context.Context) (types.UID, any, error) {
		o, err := get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", nil, err
		}
		return o.GetUID(), spec(o), nil
	}}
}

func testSidecarSet(name string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e-restart-" + utilrand.String(4)}},
			Containers: []v1alpha1.SidecarContainer{{
				Container: corev1.Container{
					Name: "sidecar", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever,
				},
			}},
		},
	}
}
