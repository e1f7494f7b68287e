package e2e

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// testStatefulSetStartOrdinal: an Advanced StatefulSet of 2 Pods with spec.ordinals.start 3
// names them db-3 and db-4 with StatefulSetStartOrdinal on; off (OpenKruise's default) the field
// is stored but not honoured: db-0 and db-1.
func testStatefulSetStartOrdinal(t *testing.T, ctx context.Context, on bool) {
	ns := newNamespace(t, ctx, "fg-ordinals")
	set := createAdvancedStatefulSet(t, ctx, newAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement, func(set *v1beta1.StatefulSet) {
		set.Spec.VolumeClaimTemplates = nil
		set.Spec.Template.Spec.Containers[0].VolumeMounts = nil
		set.Spec.Ordinals = &v1beta1.StatefulSetOrdinals{Start: 3}
	}))
	pods := waitStatefulSet(t, ctx, set, 2, 2)
	want := []string{"db-0", "db-1"}
	if on {
		want = []string{"db-3", "db-4"}
	}
	var got []string
	for name := range pods {
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("Pods %v with StatefulSetStartOrdinal=%t, want %v", got, on, want)
	}
}

// testSortSidecarContainersByName: a SidecarSet whose sidecars are zeta then alpha injects them
// in that order before the Pod's own container (OpenKruise's default), and in name order with
// EnableSortSidecarContainerByName on.
func testSortSidecarContainersByName(t *testing.T, ctx context.Context, on bool) {
	ns := newNamespace(t, ctx, "fg-sidecar-order")
	set := ssScopedSet(ns, ns, "web")
	for _, name := range []string{"zeta", "alpha"} {
		set.Spec.Containers = append(set.Spec.Containers, ssSidecar(corev1.Container{Name: name, Image: appImageV1, ImagePullPolicy: corev1.PullNever},
			v1alpha1.BeforeAppContainerType))
	}
	ssCreateSet(t, ctx, set)
	want := []string{"zeta", "alpha", "main"}
	if on {
		want = []string{"alpha", "zeta", "main"}
	}
	pod := ssPod(ns, "web", "web", corev1.Container{Name: "main", Image: appImageV1, ImagePullPolicy: corev1.PullNever})
	got := ssWaitWebhook(t, ctx, "the sidecars injected", pod, func(p *corev1.Pod) bool { return len(p.Spec.Containers) == 3 })
	if names := ssNames(got.Spec.Containers); !slices.Equal(names, want) {
		t.Errorf("containers %v with EnableSortSidecarContainerByName=%t, want %v", names, on, want)
	}
}
