package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestNamespaceDeletion: kube-controller-manager's namespace controller empties and deletes a
// namespace holding apps.kruise.io objects. It lists and deletes every namespaced resource of
// every group, aggregated ones included, with its own clients (protobuf preferred), so an
// aggregated server that answers it badly blocks the deletion of every namespace of the cluster.
func TestNamespaceDeletion(t *testing.T) {
	ctx, ns := framework.Start(t, "nsdelete")
	framework.RunPod(t, ctx, ns, "target")
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Create(ctx, testCloneSet("doomed"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, &v1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		Spec: v1alpha1.ContainerRecreateRequestSpec{
			PodName:    "target",
			Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := framework.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, 60*time.Second, "namespace "+ns+" deleted", func(ctx context.Context) (bool, error) {
		n, err := framework.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("phase %s, conditions %+v", n.Status.Phase, n.Status.Conditions)
	})
	t.Logf("namespace deleted in %.1fs", time.Since(start).Seconds())
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("CloneSet of the deleted namespace: %v, want NotFound", err)
	}
}
