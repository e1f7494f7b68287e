package podunavailablebudget

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
)

const ns = "default"

// fixture is a controller on fakes holding objs (kube's and inplace's alike).
func fixture(t *testing.T, objs ...runtime.Object) (*Controller, controllertest.Fakes) {
	t.Helper()
	var kube, inplace []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *v1beta1.PodUnavailableBudget, *v1alpha1.CloneSet:
			inplace = append(inplace, o)
		default:
			kube = append(kube, o)
		}
	}
	f := controllertest.NewFakes(kube, inplace...)
	c, err := New(f.Kube, f.Inplace, f.InplaceInformers.Policy().V1beta1().PodUnavailableBudgets(),
		f.KubeInformers.Core().V1().Pods(), Workloads{Kube: f.KubeInformers.Apps().V1(), Inplace: f.InplaceInformers.Apps()},
		f.Recorder, f.Clock)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		f.Cache(o)
	}
	return c, f
}

func budget(spec v1beta1.PodUnavailableBudgetSpec) *v1beta1.PodUnavailableBudget {
	return &v1beta1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "pub", Namespace: ns, Generation: 1}, Spec: spec}
}

func cloneSet(replicas int32) *v1alpha1.CloneSet {
	return &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "cs-uid"},
		Spec: v1alpha1.CloneSetSpec{Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
}

// pod is a Pod of app=web controlled by owner (kind/name/uid), ready or not.
func pod(name string, ready bool, kind, owner string, uid types.UID) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
		Status:     controllertest.RunningStatus(ready, controllertest.Now.Add(-time.Minute)),
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, UID: uid, Controller: ptr.To(true)}}
		if kind == "CloneSet" {
			p.OwnerReferences[0].APIVersion = v1alpha1.SchemeGroupVersion.String()
		}
	}
	return p
}

// written is the last status the controller wrote, "" when it wrote none.
func written(f controllertest.Fakes) string {
	var out string
	for _, a := range f.Inplace.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			st := a.(interface{ GetObject() runtime.Object }).GetObject().(*v1beta1.PodUnavailableBudget).Status
			out = fmt.Sprintf("total=%d desired=%d current=%d allowed=%d unavailable=%d disrupted=%d observed=%d",
				st.TotalReplicas, st.DesiredAvailable, st.CurrentAvailable, st.UnavailableAllowed,
				len(st.UnavailablePods), len(st.DisruptedPods), st.ObservedGeneration)
		}
	}
	return out
}

func TestSyncTargetRef(t *testing.T) {
	pub := budget(v1beta1.PodUnavailableBudgetSpec{
		TargetReference: &v1beta1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
		MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
	})
	c, f := fixture(t, pub, cloneSet(4),
		pod("web-a", true, "CloneSet", "web", "cs-uid"), pod("web-b", true, "CloneSet", "web", "cs-uid"),
		pod("web-c", false, "CloneSet", "web", "cs-uid"),
		pod("other", true, "CloneSet", "web", "older-uid")) // a Pod of an earlier CloneSet web: not this budget's
	controllertest.Sync(t, c.sync, cache.MetaObjectToName(pub))
	if got, want := written(f), "total=4 desired=3 current=2 allowed=0 unavailable=0 disrupted=0 observed=1"; got != want {
		t.Errorf("status %s, want %s", got, want)
	}
	patched := controllertest.Acted(f.Kube.Actions(), "patch", "pods")
	if len(patched) != 3 || patched["other"] != "" {
		t.Errorf("annotated %v, want the three Pods of the CloneSet", patched)
	}
	for name, p := range patched {
		if !strings.Contains(p, `"pub.kruise.io/related-pub":"pub"`) || !strings.Contains(p, `"kruise.io/related-pub":"pub"`) {
			t.Errorf("pod %s patched with %s, want both related-pub keys", name, p)
		}
	}
}

// A selector's total is the replicas of the Pods' controllers: a Deployment through its
// ReplicaSet, counted once.
func TestSyncSelectorCountsControllers(t *testing.T) {
	pub := budget(v1beta1.PodUnavailableBudgetSpec{
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MinAvailable: ptr.To(intstr.FromString("50%")),
	})
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](5), Selector: deploy.Spec.Selector}}
	c, f := fixture(t, pub, deploy, rs,
		pod("web-1-a", true, "ReplicaSet", "web-1", "rs-uid"), pod("web-1-b", true, "ReplicaSet", "web-1", "rs-uid"),
		pod("web-1-c", true, "ReplicaSet", "web-1", "rs-uid"), pod("bare", true, "", "", ""))
	controllertest.Sync(t, c.sync, cache.MetaObjectToName(pub))
	// 5 wanted (the bare Pod adds nothing to the total, as in OpenKruise), 50% rounds up to 3,
	// 4 available.
	if got, want := written(f), "total=5 desired=3 current=4 allowed=1 unavailable=0 disrupted=0 observed=1"; got != want {
		t.Errorf("status %s, want %s", got, want)
	}
}

// A Pod charged for an in-place update counts as unavailable until its entry times out; the
// controller asks to look again then, and drops the entry.
func TestSyncRecordedPodsTimeOut(t *testing.T) {
	pub := budget(v1beta1.PodUnavailableBudgetSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		MaxUnavailable:       ptr.To(intstr.FromInt32(1)),
		ProtectTotalReplicas: ptr.To[int32](3),
	})
	charged := controllertest.Now.Add(-4 * time.Second)
	pub.Status = v1beta1.PodUnavailableBudgetStatus{ObservedGeneration: 1, UnavailablePods: map[string]metav1.Time{"a": metav1.NewTime(charged)}}
	c, f := fixture(t, pub, pod("a", true, "", "", ""), pod("b", true, "", "", ""), pod("c", true, "", "", ""))
	requeue := controllertest.Sync(t, c.sync, cache.MetaObjectToName(pub))
	if got, want := written(f), "total=3 desired=2 current=2 allowed=0 unavailable=1 disrupted=0 observed=1"; got != want {
		t.Errorf("status %s, want %s", got, want)
	}
	if requeue != 6*time.Second {
		t.Errorf("requeue after %v, want 6s (the entry's 10 s from its charge)", requeue)
	}

	f.Clock.Step(6 * time.Second)
	f.Inplace.ClearActions()
	controllertest.Sync(t, c.sync, cache.MetaObjectToName(pub))
	if got, want := written(f), "total=3 desired=2 current=3 allowed=1 unavailable=0 disrupted=0 observed=1"; got != want {
		t.Errorf("after the timeout: status %s, want %s", got, want)
	}
}

func TestSyncUnsupportedTarget(t *testing.T) {
	pub := budget(v1beta1.PodUnavailableBudgetSpec{
		TargetReference: &v1beta1.TargetReference{APIVersion: "batch/v1", Kind: "Job", Name: "j"},
		MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
	})
	c, f := fixture(t, pub)
	controllertest.Sync(t, c.sync, cache.MetaObjectToName(pub))
	if ev := f.Events(); !strings.Contains(ev, ReasonTargetUnsupported) || !strings.Contains(ev, "batch/v1 Job") {
		t.Errorf("events %q, want a %s warning naming batch/v1 Job", ev, ReasonTargetUnsupported)
	}
	if got, want := written(f), "total=0 desired=0 current=0 allowed=0 unavailable=0 disrupted=0 observed=1"; got != want {
		t.Errorf("status %s, want %s", got, want)
	}
}

// A status already right is not written again.
func TestSyncWritesNothingUnchanged(t *testing.T) {
	pub := budget(v1beta1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		ProtectTotalReplicas: ptr.To[int32](1),
	})
	pub.Status = v1beta1.PodUnavailableBudgetStatus{ObservedGeneration: 1, TotalReplicas: 1, CurrentAvailable: 1, UnavailableAllowed: 1}
	a := pod("a", true, "", "", "")
	a.Annotations = map[string]string{"kruise.io/related-pub": "pub"}
	c, f := fixture(t, pub, a)
	controllertest.Sync(t, c.sync, cache.MetaObjectToName(pub))
	if len(f.Inplace.Actions())+len(f.Kube.Actions()) != 0 {
		t.Errorf("actions %v %v, want none", f.Inplace.Actions(), f.Kube.Actions())
	}
}
