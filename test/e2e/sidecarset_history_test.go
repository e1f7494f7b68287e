package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarset"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// sidecarSetRevisions are the SidecarSet's ControllerRevisions (in inplace's namespace), oldest
// (lowest .revision) first.
func sidecarSetRevisions(t *testing.T, ctx context.Context, name string) []appsv1.ControllerRevision {
	t.Helper()
	list, err := framework.Kube.AppsV1().ControllerRevisions("inplace-system").List(ctx, metav1.ListOptions{LabelSelector: sidecarset.RevisionSetLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Revision < list.Items[j].Revision })
	return list.Items
}

// revisionSpec decodes a revision's data: {"spec": {...}}.
func revisionSpec(t *testing.T, rev *appsv1.ControllerRevision) map[string]json.RawMessage {
	t.Helper()
	var data struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		t.Fatalf("revision %s: data %s: %v", rev.Name, rev.Data.Raw, err)
	}
	return data.Spec
}

// TestSidecarSetRevisionHistory (OpenKruise "sidecarSet history revision checker", "history
// revision data checker", "update init sidecar container, and don't upgrade"): each spec change
// records a ControllerRevision whose data holds volumes, containers, initContainers,
// imagePullSecrets and patchPodMetadata; 15 specs keep the last 10 (revisions 6-15); going back
// to the spec of revision 12 renumbers it 16; a change of patchPodMetadata is recorded with its
// value; a plain init container's new image records a revision but leaves the SidecarSet's hash.
func TestSidecarSetRevisionHistory(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-history")
	set := framework.ScopedSidecarSet(ns, ns, "web")
	set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(corev1.Container{Name: "agent", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever},
		v1alpha1.AfterAppContainerType)}
	set.Spec.InitContainers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "init", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}}}
	set.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "secret-1"}}
	set.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: v1alpha1.SidecarSetRetainPatchPolicy,
		Annotations: map[string]string{"sidecarset.kruise.io/test": "version-1"}}}
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitSidecarSetStatus(t, ctx, ns, 0, 0, 0, 0)
	revs := sidecarSetRevisions(t, ctx, ns)
	if len(revs) != 1 {
		t.Fatalf("%d revisions after creation, want 1", len(revs))
	}
	spec := revisionSpec(t, &revs[0])
	for _, key := range []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"} {
		if _, ok := spec[key]; !ok {
			t.Errorf("revision %s: data has no spec.%s: %s", revs[0].Name, key, revs[0].Data.Raw)
		}
	}

	numbers := func() []int64 {
		var out []int64
		for _, r := range sidecarSetRevisions(t, ctx, ns) {
			out = append(out, r.Revision)
		}
		return out
	}
	for i := 2; i <= 15; i++ {
		framework.UpdateSidecarSet(t, ctx, ns, func(s *v1alpha1.SidecarSet) {
			s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: fmt.Sprintf("secret-%d", i)}}
		})
		framework.WaitSidecarSetStatus(t, ctx, ns, 0, 0, 0, 0)
	}
	if got, want := numbers(), []int64{6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; !slices.Equal(got, want) {
		t.Errorf("after 15 specs: revisions %v, want %v (revisionHistoryLimit 10)", got, want)
	}
	framework.UpdateSidecarSet(t, ctx, ns, func(s *v1alpha1.SidecarSet) {
		s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "secret-12"}}
	})
	framework.WaitSidecarSetStatus(t, ctx, ns, 0, 0, 0, 0)
	if got, want := numbers(), []int64{6, 7, 8, 9, 10, 11, 13, 14, 15, 16}; !slices.Equal(got, want) {
		t.Errorf("back to the spec of revision 12: revisions %v, want %v", got, want)
	}

	framework.UpdateSidecarSet(t, ctx, ns, func(s *v1alpha1.SidecarSet) {
		s.Spec.PatchPodMetadata[0].Annotations["sidecarset.kruise.io/test"] = "version-2"
	})
	framework.WaitSidecarSetStatus(t, ctx, ns, 0, 0, 0, 0)
	revs = sidecarSetRevisions(t, ctx, ns)
	for i, want := range map[int]string{len(revs) - 2: "version-1", len(revs) - 1: "version-2"} {
		var patches []v1alpha1.SidecarSetPatchPodMetadata
		if err := json.Unmarshal(revisionSpec(t, &revs[i])["patchPodMetadata"], &patches); err != nil || len(patches) != 1 ||
			patches[0].Annotations["sidecarset.kruise.io/test"] != want {
			t.Errorf("revision %s (%d): patchPodMetadata %+v (%v), want sidecarset.kruise.io/test=%s", revs[i].Name, revs[i].Revision, patches, err, want)
		}
	}

	before, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := framework.UpdateSidecarSet(t, ctx, ns, func(s *v1alpha1.SidecarSet) { s.Spec.InitContainers[0].Image = framework.AppImageV2 })
	if h, was := after.Annotations[v1alpha1.SidecarSetHashAnnotation], before.Annotations[v1alpha1.SidecarSetHashAnnotation]; h == "" || h != was {
		t.Errorf("a plain init container's new image changed the SidecarSet's hash %q to %q", was, h)
	}
	framework.WaitSidecarSetStatus(t, ctx, ns, 0, 0, 0, 0)
	if got := numbers(); len(got) != 10 || got[9] != 18 {
		t.Errorf("after the init container's new image: revisions %v, want 10, the newest 18", got)
	}
}
