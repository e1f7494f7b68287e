package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestSidecarSetInjectionRevision: a SidecarSet whose injectionStrategy.revision names a recorded
// ControllerRevision (in OpenKruise's format, in inplace's namespace) injects that revision's
// sidecar into new Pods, not its current spec — by revisionName and by customVersion — and
// sidecarsets/NAME/inject answers the same.
func TestSidecarSetInjectionRevision(t *testing.T) {
	ctx, ns := framework.Start(t, "revision")
	app := "e2e-rev-" + utilrand.String(5)
	recorded := framework.AppImageV1
	current := "inplace.local/app:v2"

	data, _ := json.Marshal(map[string]any{"spec": map[string]any{
		"containers": []v1alpha1.SidecarContainer{{Container: corev1.Container{
			Name: "agent", Image: recorded, ImagePullPolicy: corev1.PullNever}}},
	}})
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-rec", Labels: map[string]string{
			sidecarcontrol.RevisionSetLabel: app, v1alpha1.SidecarSetCustomVersionLabel: "stable"}},
		Revision: 1,
		Data:     runtime.RawExtension{Raw: data},
	}
	revisions := framework.Kube.AppsV1().ControllerRevisions("inplace-system")
	if _, err := revisions.Create(ctx, rev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = revisions.Delete(context.Background(), rev.Name, metav1.DeleteOptions{}) })

	set := framework.ScopedSidecarSet(app, ns, app)
	set.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{
		Name: "agent", Image: current, ImagePullPolicy: corev1.PullNever}}}
	set.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To(rev.Name)}
	framework.CreateSidecarSet(t, ctx, set)

	pod := framework.LabeledPod(ns, "web", app, framework.Container("main", framework.AppImageV1))
	// The webhook's cache may lag the new SidecarSet: dry-run until the sidecar comes back.
	injected := framework.WaitPodWebhook(t, ctx, "a Pod injected at the recorded revision", pod,
		func(p *corev1.Pod) bool { return len(p.Spec.Containers) == 2 })
	if got := injected.Spec.Containers[0].Image; got != recorded {
		t.Errorf("revisionName: sidecar image %s, want the recorded %s (current spec has %s)", got, recorded, current)
	}
	if !strings.Contains(injected.Annotations[v1alpha1.SidecarSetHashAnnotation], `"controllerRevision":"`+rev.Name+`"`) {
		t.Errorf("hash annotation %s: want controllerRevision %s", injected.Annotations[v1alpha1.SidecarSetHashAnnotation], rev.Name)
	}

	// By custom version, through sidecarsets/NAME/inject.
	framework.UpdateSidecarSet(t, ctx, app, func(s *v1alpha1.SidecarSet) {
		s.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("stable")}
	})
	body, _ := json.Marshal(pod)
	raw, err := framework.Inplace.AppsV1alpha1().RESTClient().Post().Resource("sidecarsets").Name(app).SubResource("inject").
		Body(body).SetHeader("Content-Type", "application/json").DoRaw(ctx)
	if err != nil {
		t.Fatalf("inject: %v %s", err, raw)
	}
	answered := &corev1.Pod{}
	if err := json.Unmarshal(raw, answered); err != nil {
		t.Fatal(err)
	}
	if len(answered.Spec.Containers) != 2 || answered.Spec.Containers[0].Image != recorded {
		t.Errorf("customVersion through inject: containers %+v, want the sidecar at %s", answered.Spec.Containers, recorded)
	}
}

// sidecarSetRevisions are the SidecarSet's ControllerRevisions (in inplace's namespace), oldest
// (lowest .revision) first.
func sidecarSetRevisions(t *testing.T, ctx context.Context, name string) []appsv1.ControllerRevision {
	t.Helper()
	list, err := framework.Kube.AppsV1().ControllerRevisions("inplace-system").List(ctx, metav1.ListOptions{LabelSelector: sidecarcontrol.RevisionSetLabel + "=" + name})
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
	allowPatchPodMetadata(t, ctx, nil, `^sidecarset\.kruise\.io/`)
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

// TestSidecarSetUpgradableConditionTwoSidecarSets (OpenKruise "multi sidecarSet upgrade sidecar
// container, check pod condition"): two SidecarSets inject agent and logger into the same 2 Pods.
// A changes more than its image (2 matched, 0 updated, 2 ready); B changes its image and upgrades
// both Pods (2/2/2/2); the Pods' SidecarSetUpgradable is False, because of A. A then goes back to
// its env with a new image: it upgrades both Pods too, and SidecarSetUpgradable becomes True.
func TestSidecarSetUpgradableConditionTwoSidecarSets(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-cond")
	nameA, nameB := ns, ns+"-b"
	for name, c := range map[string]string{nameA: "agent", nameB: "logger"} {
		set := framework.ScopedSidecarSet(name, ns, "web")
		set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(corev1.Container{
			Name: c, Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever, Env: []corev1.EnvVar{{Name: "MODE", Value: "one"}},
		}, v1alpha1.AfterAppContainerType)}
		framework.CreateSidecarSet(t, ctx, set)
	}
	probe := framework.LabeledPod(ns, "probe", "web", corev1.Container{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever})
	framework.WaitPodWebhook(t, ctx, "the Pod webhook to inject both SidecarSets", probe, func(p *corev1.Pod) bool {
		return framework.FindContainer(p.Spec.Containers, "agent") != nil && framework.FindContainer(p.Spec.Containers, "logger") != nil
	})
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	framework.WaitSidecarSetStatus(t, ctx, nameA, 2, 2, 2, 2)
	framework.WaitSidecarSetStatus(t, ctx, nameB, 2, 2, 2, 2)

	framework.UpdateSidecarSet(t, ctx, nameA, func(s *v1alpha1.SidecarSet) { s.Spec.Containers[0].Env[0].Value = "two" })
	framework.WaitSidecarSetStatus(t, ctx, nameA, 2, 0, 2, 0)
	framework.UpdateSidecarSet(t, ctx, nameB, framework.SidecarImage(framework.AppImageV2))
	framework.WaitSidecarSetStatus(t, ctx, nameB, 2, 2, 2, 2)
	waitUpgradable(t, ctx, cs, corev1.ConditionFalse)

	framework.UpdateSidecarSet(t, ctx, nameA, func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env[0].Value = "one"
		s.Spec.Containers[0].Image = framework.AppImageV2
	})
	framework.WaitSidecarSetStatus(t, ctx, nameA, 2, 2, 2, 2)
	pods := waitUpgradable(t, ctx, cs, corev1.ConditionTrue)
	for name, p := range pods {
		for _, c := range []string{"agent", "logger"} {
			if framework.SpecImage(p, c) != framework.AppImageV2 {
				t.Errorf("pod %s: %s on %s, want %s", name, c, framework.SpecImage(p, c), framework.AppImageV2)
			}
		}
	}
}

// waitUpgradable waits until every Pod of the CloneSet has SidecarSetUpgradable with status, and
// returns the Pods.
func waitUpgradable(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, status corev1.ConditionStatus) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	framework.Poll(t, ctx, framework.RolloutTimeout, fmt.Sprintf("every Pod %s=%s", pub.SidecarSetUpgradable, status), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = framework.CloneSetPods(ctx, cs); err != nil {
			return false, err
		}
		for name, p := range pods {
			if got := framework.ConditionStatus(p, pub.SidecarSetUpgradable); got != status {
				return false, fmt.Errorf("pod %s: %s", name, got)
			}
		}
		return true, nil
	})
	return pods
}
