package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// The kinds written at apps.kruise.io/v1beta1 on the real cluster, OpenKruise v1.9's
// test/e2e/apps/v1beta1 scenarios (sidecarset, pullimages): the controllers and the daemon, whose
// informers read v1alpha1, act on them the same.

// TestSidecarSetV1beta1InjectAndUpgrade: a v1beta1 SidecarSet (namespaceSelector, customVersion)
// injects its sidecar into new Pods and then upgrades it in place when its image changes at
// v1beta1: the same Pods, the sidecar restarted once, the app container never; its status is
// read at v1beta1.
func TestSidecarSetV1beta1InjectAndUpgrade(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "ss-beta")
	sets := inplace.AppsV1beta1().SidecarSets()
	set := &v1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: v1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers: []v1beta1.SidecarContainer{{
				Container:       corev1.Container{Name: upgradeSidecar, Image: appImageV1, ImagePullPolicy: corev1.PullNever},
				PodInjectPolicy: v1beta1.AfterAppContainerType,
			}},
			CustomVersion: "v1",
		},
	}
	if _, err := sets.Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 SidecarSet: %v", err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), set.Name, metav1.DeleteOptions{}) })

	probe := ssPod(ns, "probe", "web", corev1.Container{Name: "main", Image: appImageV1, ImagePullPolicy: corev1.PullNever})
	ssWaitWebhook(t, ctx, "the Pod webhook to inject the v1beta1 SidecarSet "+ns, probe, func(p *corev1.Pod) bool {
		return ssContainer(p.Spec.Containers, upgradeSidecar) != nil
	})
	cs := newUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := waitCloneSetReady(t, ctx, cs, 2)
	for name, p := range before {
		if c := ssContainer(p.Spec.Containers, upgradeSidecar); c == nil || c.Image != appImageV1 {
			t.Fatalf("pod %s: containers %v, want the sidecar %s on %s", name, ssNames(p.Spec.Containers), upgradeSidecar, appImageV1)
		}
	}
	u := &sidecarUpgrade{ns: ns, set: ns, cs: cs, before: before}
	waitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := sets.Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Containers[0].Image = appImageV2
		cur.Spec.CustomVersion = "v2"
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("changing the sidecar image at v1beta1: %v", err)
	}
	after := waitSidecarsOn(t, ctx, u, appImageV2, 2)
	checkSidecarsUpgraded(t, before, after, appImageV2, 1)
	poll(t, ctx, rolloutTimeout, "the v1beta1 SidecarSet's status to count 2 updated Pods", func(ctx context.Context) (bool, error) {
		got, err := sets.Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		return st.ObservedGeneration == got.Generation && st.MatchedPods == 2 && st.UpdatedPods == 2 && st.UpdatedReadyPods == 2,
			fmt.Errorf("generation %d, status %+v", got.Generation, st)
	})
	// v1alpha1 sees the custom version as OpenKruise's label.
	if a, err := inplace.AppsV1alpha1().SidecarSets().Get(ctx, set.Name, metav1.GetOptions{}); err != nil || a.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v2" {
		t.Errorf("at v1alpha1: %v (%v), want the label %s=v2", a, err, v1alpha1.SidecarSetCustomVersionLabel)
	}
}

// TestImagePullJobV1beta1Pulls: an ImagePullJob written at v1beta1 pulls its image on every node,
// and its status is read at v1beta1.
func TestImagePullJobV1beta1Pulls(t *testing.T) {
	reg, nodes := registryNodes(t)
	ctx := testContext(t)
	image := reg + "/remote/app:v2"
	removeFromNodes(t, ctx, nodes, image)
	ns := newNamespace(t, ctx, "imagepull-beta")
	job := &v1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "beta"},
		Spec: v1beta1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: v1beta1.ImagePullJobTemplate{
			Parallelism:      ptr.To(intstr.FromInt32(2)),
			PullPolicy:       &v1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
			CompletionPolicy: v1beta1.CompletionPolicy{Type: v1beta1.Always},
		}},
	}
	jobs := inplace.AppsV1beta1().ImagePullJobs(ns)
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 ImagePullJob: %v", err)
	}
	want := int32(len(nodes))
	poll(t, ctx, rolloutTimeout, "the v1beta1 ImagePullJob to complete", func(ctx context.Context) (bool, error) {
		got, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := got.Status
		return s.CompletionTime != nil && s.Desired == want && s.Succeeded == want && s.Failed == 0, fmt.Errorf("status %+v", s)
	})
	for _, n := range nodes {
		if img := criImage(t, ctx, n, image); img == nil {
			t.Errorf("node %s: containerd has no %s after the v1beta1 job", n.name, image)
		}
	}
}
