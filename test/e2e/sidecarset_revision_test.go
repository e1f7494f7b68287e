package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarset"
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
			sidecarset.RevisionSetLabel: app, v1alpha1.SidecarSetCustomVersionLabel: "stable"}},
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
