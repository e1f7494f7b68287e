package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// heldDaemonSetUpdate creates the Advanced DaemonSet agent on every node running image, its
// partition holding every Pod back, and changes its image to newImage; it returns the DaemonSet
// once its status is about the new revision (the sync that would create a pre-download job is
// done by then: it comes before the status), and the revision's name.
func heldDaemonSetUpdate(t *testing.T, ctx context.Context, ns, image, newImage string) (*v1alpha1.DaemonSet, string) {
	t.Helper()
	n := framework.ReadyNodes(t, ctx)
	ds := framework.NewAdvancedDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(n))
		c := &ds.Spec.Template.Spec.Containers[0]
		c.Image, c.ImagePullPolicy = image, corev1.PullIfNotPresent
	})
	framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = newImage })
	framework.WaitDaemonSet(t, ctx, ns, n, 0)
	got, err := framework.Inplace.AppsV1alpha1().DaemonSets(ns).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got, got.Status.DaemonSetHash
}

// testDaemonSetNoPreDownload: with PreDownloadImageForDaemonSetUpdate off (OpenKruise's default),
// an image change held back by the partition makes no ImagePullJob, and its revision carries no
// pre-download label.
func testDaemonSetNoPreDownload(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "fg-ads-predl-off")
	_, revision := heldDaemonSetUpdate(t, ctx, ns, framework.AppImageV1, framework.AppImageV2)
	if n := listJobs(t, ctx, ns); n != 0 {
		t.Errorf("%d ImagePullJobs with the gate off, want none", n)
	}
	rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1alpha1.ImagePreDownloadCreatedKey, v1alpha1.ImagePreDownloadIgnoredKey} {
		if _, ok := rev.Labels[k]; ok {
			t.Errorf("revision %s labelled %s with the gate off", revision, k)
		}
	}
}

// testDaemonSetPreDownload: with PreDownloadImageForDaemonSetUpdate on, an Advanced DaemonSet's
// image change held back by its partition gets OpenKruise's ImagePullJob <revision>-<container>,
// controlled by the DaemonSet, aimed at its Pods not at the new revision, which pulls the new image
// (from the local registry, on no node before) onto every node; the revision is labelled
// apps.kruise.io/image-predownload-created. Once the partition is lifted the Pods update in place
// and, the rollout over, the job is deleted.
func testDaemonSetPreDownload(t *testing.T, ctx context.Context) {
	reg, nodes := framework.RegistryNodes(t)
	oldImage, newImage := reg+"/remote/app:v1", reg+"/remote/app:v2"
	removeFromNodes(t, ctx, nodes, newImage)
	ns := framework.NewNamespace(t, ctx, "fg-ads-predl")
	ds, revision := heldDaemonSetUpdate(t, ctx, ns, oldImage, newImage)
	n := int32(len(nodes))

	jobName := revision + "-main"
	job := waitPullJobCompleted(t, ctx, ns, jobName)
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "DaemonSet" || ref.UID != ds.UID {
		t.Errorf("job controller %+v, want DaemonSet %s (%s)", ref, ds.Name, ds.UID)
	}
	if s := job.Status; job.Spec.Image != newImage || s.Desired != n || s.Succeeded != n || s.Failed != 0 {
		t.Errorf("job image %s status %+v, want %s succeeded on %d nodes", job.Spec.Image, s, newImage, n)
	}
	if p := job.Spec.Parallelism; p == nil || p.IntValue() != 1 {
		t.Errorf("job parallelism %v, want OpenKruise's 1", p)
	}
	sel := job.Spec.PodSelector
	if sel == nil || sel.MatchLabels["app"] != "agent" || len(sel.MatchExpressions) != 1 ||
		sel.MatchExpressions[0].Key != appsv1.ControllerRevisionHashLabelKey || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpNotIn ||
		!slices.Contains(sel.MatchExpressions[0].Values, revision) {
		t.Errorf("job podSelector %+v, want app=agent and controller-revision-hash NotIn [%s ...]", sel, revision)
	}
	for _, node := range nodes {
		if framework.CRIImage(t, ctx, node, newImage) == nil {
			t.Errorf("node %s has no %s after the job", node.Name, newImage)
		}
	}
	rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[v1alpha1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("revision %s labels %v, want %s=true", revision, rev.Labels, v1alpha1.ImagePreDownloadCreatedKey)
	}

	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Partition = nil })
	framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.Poll(t, ctx, preDownloadTimeout, "ImagePullJob "+jobName+" deleted once every Pod is updated", func(ctx context.Context) (bool, error) {
		_, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
}
