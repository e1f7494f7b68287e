package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestSidecarSetAdmission: inplace-apiserver's SidecarSet admission writes OpenKruise's hash
// annotations (the hash changes with an image, the hash without image does not) and refuses, with
// 422, a SidecarSet that injects a container of the same name as another one selecting the same
// Pods.
func TestSidecarSetAdmission(t *testing.T) {
	ctx := framework.Context(t)
	app := "e2e-sidecar-" + utilrand.String(5)
	newSet := func(name, container, image string) *v1alpha1.SidecarSet {
		return &v1alpha1.SidecarSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.SidecarSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{
					Name: container, Image: image, ImagePullPolicy: corev1.PullNever}}},
			},
		}
	}
	sets := framework.Inplace.AppsV1alpha1().SidecarSets()
	first, err := sets.Create(ctx, newSet(app+"-a", "agent", framework.AppImageV1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), first.Name, metav1.DeleteOptions{}) })
	hash, _ := sidecarcontrol.Hash(first)
	withoutImage, _ := sidecarcontrol.HashWithoutImage(first)
	if first.Annotations[v1alpha1.SidecarSetHashAnnotation] != hash || first.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Fatalf("annotations %v, want hash %s and hash without image %s", first.Annotations, hash, withoutImage)
	}

	updated := framework.UpdateSidecarSet(t, ctx, first.Name, framework.SidecarImage("inplace.local/app:v2"))
	if updated.Annotations[v1alpha1.SidecarSetHashAnnotation] == hash || updated.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] != withoutImage {
		t.Errorf("after an image change: %v; before: hash %s, without image %s", updated.Annotations, hash, withoutImage)
	}

	// The admission cache may lag the first SidecarSet by a moment: retry until it answers 422.
	framework.Poll(t, ctx, framework.RbacTimeout, "a clashing SidecarSet refused", func(ctx context.Context) (bool, error) {
		s, err := sets.Create(ctx, newSet(app+"-b", "agent", framework.AppImageV1), metav1.CreateOptions{})
		if err == nil {
			_ = sets.Delete(ctx, s.Name, metav1.DeleteOptions{})
			return false, nil
		}
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "SidecarSet "+first.Name) &&
			strings.Contains(err.Error(), "container agent"), err
	})
	other, err := sets.Create(ctx, newSet(app+"-c", "proxy", framework.AppImageV1), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("a SidecarSet with another container name: %v", err)
	} else {
		_ = sets.Delete(ctx, other.Name, metav1.DeleteOptions{})
	}
}

// TestSidecarSetInjectionAtCreation: a Pod created with kubectl that a SidecarSet selects gets its
// sidecar from inplace-apiserver's Pod webhook, and the sidecar runs; a Pod it does not select is
// untouched. With inplace-apiserver stopped, Pods are still created, well within the webhook's
// timeout (failurePolicy Ignore; OpenKruise's webhook blocks every Pod then, openkruise/kruise#634).
func TestSidecarSetInjectionAtCreation(t *testing.T) {
	ctx, ns := framework.Start(t, "inject")
	app := "e2e-inject-" + utilrand.String(5)
	set := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: app},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{
				Name: "agent", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}}},
		},
	}
	if _, err := framework.Inplace.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = framework.Inplace.AppsV1alpha1().SidecarSets().Delete(context.Background(), app, metav1.DeleteOptions{})
	})

	podYAML := func(name, label string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, labels: {app: ` + label + `}}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: ` + framework.AppImageV1 + `, imagePullPolicy: Never}]
`
	}
	// The webhook's SidecarSet cache may lag the new SidecarSet for a moment.
	var pod *corev1.Pod
	framework.Poll(t, ctx, framework.RbacTimeout, "a Pod created with its sidecar", func(ctx context.Context) (bool, error) {
		name := "web-" + utilrand.String(4)
		if _, _, err := framework.Kubectl(ctx, podYAML(name, app), "create", "-n", ns, "-f", "-"); err != nil {
			return false, err
		}
		var err error
		if pod, err = framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return len(pod.Spec.Containers) == 2, nil
	})
	if pod.Spec.Containers[0].Name != "agent" || pod.Spec.Containers[1].Name != "main" ||
		pod.Annotations["kruise.io/sidecarset-injected-list"] != app {
		t.Errorf("containers %v annotations %v: want agent injected before main", pod.Spec.Containers, pod.Annotations)
	}
	if running := framework.WaitPodSettled(t, ctx, ns, pod.Name); framework.ContainerStatus(t, running, "agent").State.Running == nil {
		t.Errorf("the sidecar does not run: %+v", running.Status.ContainerStatuses)
	}

	plain := framework.MustKubectl(t, ctx, podYAML("plain", "other"), "create", "-n", ns, "-f", "-")
	if !strings.Contains(plain, "created") {
		t.Fatalf("kubectl create: %s", plain)
	}
	if p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{}); err != nil || len(p.Spec.Containers) != 1 {
		t.Errorf("a Pod no SidecarSet selects: %v %v", p, err)
	}

	// inplace-apiserver down: the webhook fails open.
	framework.StartAgainAfter(t, "inplace-apiserver")
	framework.TakeDown(t, ctx, "inplace-apiserver")
	start := time.Now()
	framework.MustKubectl(t, ctx, podYAML("while-down", app), "create", "-n", ns, "-f", "-")
	took := time.Since(start)
	if took > 3*time.Second {
		t.Errorf("creating a Pod with inplace-apiserver stopped took %v, want under the webhook's 3 s timeout", took)
	}
	t.Logf("Pod created in %v with inplace-apiserver stopped", took)
	if p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "while-down", metav1.GetOptions{}); err != nil || len(p.Spec.Containers) != 1 {
		t.Errorf("Pod created while inplace-apiserver was down: %v %v, want it created as written", p, err)
	}
	if err := framework.RunLocalUpHook(t, framework.ApiserverHook); err != nil {
		t.Fatalf("starting inplace-apiserver again: %v", err)
	}
	framework.Poll(t, ctx, 60*time.Second, "APIService Available again", func(ctx context.Context) (bool, error) { return framework.APIServiceAvailable(ctx) })
}
