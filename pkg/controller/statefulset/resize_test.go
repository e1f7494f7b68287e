package statefulset

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"
)

// resizeSet is a set of 2 Pods whose template "data" asks 2Gi of StorageClass class, its claims
// following the template (OnPodRollingUpdate).
func resizeSet(class string) *v1beta1.StatefulSet {
	set := testSet(2, appsv1.ParallelPodManagement)
	set.Spec.VolumeClaimUpdateStrategy.Type = v1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	set.Spec.VolumeClaimTemplates[0].Spec = corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(class),
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
	}
	return set
}

// sizedClaim is the claim of an ordinal asking request, its volume of capacity.
func sizedClaim(set *v1beta1.StatefulSet, ordinal int, request, capacity string) *corev1.PersistentVolumeClaim {
	c := newClaim(set, &set.Spec.VolumeClaimTemplates[0], ordinal)
	c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(request)
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	return c
}

// resizeController is a controller on fake clients whose caches hold the claims and classes.
func resizeController(t *testing.T, claims []*corev1.PersistentVolumeClaim, classes ...*storagev1.StorageClass) (*Controller, *kubefake.Clientset) {
	t.Helper()
	kube := kubefake.NewClientset()
	claimIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range claims {
		if err := claimIdx.Add(c); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().PersistentVolumeClaims(c.Namespace).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	classIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, sc := range classes {
		if err := classIdx.Add(sc); err != nil {
			t.Fatal(err)
		}
	}
	kube.ClearActions()
	return &Controller{
		Parts:   scaffold.Parts[*v1beta1.StatefulSet]{Kube: kube, Recorder: record.NewFakeRecorder(10), Clock: clocktesting.NewFakePassiveClock(now)},
		claims:  corelisters.NewPersistentVolumeClaimLister(claimIdx),
		classes: storagelisters.NewStorageClassLister(classIdx),
	}, kube
}

func expandable(name string, allow bool) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, AllowVolumeExpansion: ptr.To(allow)}
}

// With the gate on: db-0's claim asks 1Gi of the template's 2Gi (to resize), db-1's was raised
// to 2Gi and its volume has not grown yet. Status counts db-1 compatible, not ready; the update
// takes db-0 although it is at the update revision, and neither is available to its budget.
func TestClaimStatesAndStatus(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.StatefulSetAutoResizePVCGate, true)
	set := resizeSet("expand")
	c, _ := resizeController(t, []*corev1.PersistentVolumeClaim{sizedClaim(set, 0, "1Gi", "1Gi"), sizedClaim(set, 1, "2Gi", "1Gi")})
	pods := []*corev1.Pod{readyPod(set, 0, "new", true), readyPod(set, 1, "new", true)}

	states, err := c.claimStates(set, pods)
	if err != nil {
		t.Fatal(err)
	}
	if st := states["db-0"]; st.compatible || st.ready || st.resized {
		t.Errorf("db-0 %+v: want to resize", st)
	}
	if st := states["db-1"]; !st.compatible || st.ready || st.resized {
		t.Errorf("db-1 %+v: want compatible, its volume not grown", st)
	}
	vc, err := c.volumeClaimStatus(set, pods)
	if err != nil {
		t.Fatal(err)
	}
	if want := []v1beta1.VolumeClaimStatus{{VolumeClaimName: "data", CompatibleReplicas: 1}}; !slices.Equal(vc, want) {
		t.Errorf("volumeClaims %+v, want %+v", vc, want)
	}
	plan := planUpdateClaims(set, pods, "new", now, states)
	if got := controllertest.Names(plan.candidates); !slices.Equal(got, []string{"db-0"}) || plan.budget != -1 {
		t.Errorf("candidates %v budget %d, want [db-0] and both Pods unavailable (budget -1)", got, plan.budget)
	}

	// The volume grew (or only the file system waits for the Pod): resized.
	grown := sizedClaim(set, 1, "2Gi", "2Gi")
	pending := sizedClaim(set, 1, "2Gi", "1Gi")
	pending.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	for _, claim := range []*corev1.PersistentVolumeClaim{grown, pending} {
		pair := claimPair{claim: claim, template: &set.Spec.VolumeClaimTemplates[0]}
		if !resized(pair) {
			t.Errorf("claim %+v not resized", claim.Status)
		}
	}
	if !ready(claimPair{claim: grown}) || ready(claimPair{claim: pending}) {
		t.Error("ready: want the grown claim only")
	}

	// Another StorageClass is no resize: it waits for the claim to be made anew.
	other := sizedClaim(set, 0, "1Gi", "1Gi")
	other.Spec.StorageClassName = ptr.To("other")
	if pair := (claimPair{claim: other, template: &set.Spec.VolumeClaimTemplates[0]}); needsExpansion(pair) || compatible(pair) {
		t.Error("a claim of another StorageClass counted as one to resize or compatible")
	}
}

// Without the gate (or with OnDelete) claims are left alone and the status has no volumeClaims
// to count.
func TestClaimStatesOff(t *testing.T) {
	set := resizeSet("expand")
	c, _ := resizeController(t, []*corev1.PersistentVolumeClaim{sizedClaim(set, 0, "1Gi", "1Gi")})
	pods := []*corev1.Pod{readyPod(set, 0, "new", true)}
	if states, err := c.claimStates(set, pods); err != nil || states != nil {
		t.Errorf("gate off: claim states %v (%v), want none", states, err)
	}
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.StatefulSetAutoResizePVCGate, true)
	set.Spec.VolumeClaimUpdateStrategy.Type = v1beta1.OnPVCDeleteVolumeClaimUpdateStrategyType
	if states, err := c.claimStates(set, pods); err != nil || states != nil {
		t.Errorf("OnDelete: claim states %v (%v), want none", states, err)
	}
	if plan := planUpdateClaims(set, pods, "new", now, nil); len(plan.candidates) != 0 {
		t.Errorf("candidates %v, want none", controllertest.Names(plan.candidates))
	}
}

// resizeClaims raises a claim to its template's request, annotated as OpenKruise does, when its
// StorageClass allows expansion; else it leaves it and says why.
func TestResizeClaims(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.StatefulSetAutoResizePVCGate, true)
	for _, allow := range []bool{true, false} {
		set := resizeSet("expand")
		c, kube := resizeController(t, []*corev1.PersistentVolumeClaim{sizedClaim(set, 0, "1Gi", "1Gi")}, expandable("expand", allow))
		pod := readyPod(set, 0, "new", true)
		states, err := c.claimStates(set, []*corev1.Pod{pod})
		if err != nil {
			t.Fatal(err)
		}
		err = c.resizeClaims(context.Background(), set, pod, states["db-0"].claims)
		var updated []*corev1.PersistentVolumeClaim
		for _, a := range kube.Actions() {
			if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "persistentvolumeclaims" {
				updated = append(updated, u.GetObject().(*corev1.PersistentVolumeClaim))
			}
		}
		if !allow {
			if err == nil || !strings.Contains(err.Error(), "does not support volume expansion") || len(updated) != 0 {
				t.Errorf("class without expansion: error %v, updates %d; want the reason and no update", err, len(updated))
			}
			continue
		}
		if err != nil || len(updated) != 1 {
			t.Fatalf("error %v, %d updates; want one", err, len(updated))
		}
		if got := updated[0]; got.Name != "data-db-0" || got.Spec.Resources.Requests.Storage().String() != "2Gi" || got.Annotations[OwnedByAnnotation] != "db" {
			t.Errorf("claim %s asks %s, annotations %v; want 2Gi and %s=db", got.Name, got.Spec.Resources.Requests.Storage(), got.Annotations, OwnedByAnnotation)
		}
	}
}
