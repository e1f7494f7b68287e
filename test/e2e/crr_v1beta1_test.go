package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestCRRV1beta1: a ContainerRecreateRequest written at apps.kruise.io/v1beta1 (OpenKruise's
// master) with unreadyGracePeriodSeconds recreates the container (a new instance, restartCount
// one higher, phase Completed), and read through v1beta1 it reports the new instance in
// status.containerStatusSnapshot and the PreRecreateGrace condition, where v1alpha1 has the
// controller's annotations.
func TestCRRV1beta1(t *testing.T) {
	ctx, ns := framework.Start(t, "crr-v1beta1")
	before := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "gated", true, framework.Container("main", framework.AppImageV1)))
	beta := framework.Inplace.AppsV1beta1().ContainerRecreateRequests(ns)
	if _, err := beta.Create(ctx, &v1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "drain"},
		Spec: v1beta1.ContainerRecreateRequestSpec{PodName: "gated",
			Containers: []v1beta1.ContainerRecreateRequestContainer{{Name: "main"}},
			Strategy:   &v1beta1.ContainerRecreateRequestStrategy{UnreadyGracePeriodSeconds: ptr.To[int64](1)}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 ContainerRecreateRequest: %v", err)
	}
	var crr *v1beta1.ContainerRecreateRequest
	framework.Poll(t, ctx, framework.CRRTimeout, "v1beta1 ContainerRecreateRequest drain Completed", func(ctx context.Context) (bool, error) {
		var err error
		if crr, err = beta.Get(ctx, "drain", metav1.GetOptions{}); err != nil {
			return false, err
		}
		return crr.Status.Phase == v1beta1.ContainerRecreateRequestCompleted, fmt.Errorf("status %+v", crr.Status)
	})
	if s := crr.Status.ContainerRecreateStates; len(s) != 1 || s[0].Name != "main" || s[0].Phase != v1beta1.ContainerRecreateRequestSucceeded || crr.Status.Message != "" {
		t.Errorf("status %+v: want main Succeeded and no message", crr.Status)
	}
	after := framework.WaitContainersRecreated(t, ctx, before, "main")
	framework.ExpectRecreated(t, before, after, "main")
	now := framework.ContainerStatus(t, after, "main")

	// The kubelet's report of the new instance may reach the controller after the daemon's.
	want := v1beta1.ContainerRecreateRequestSyncContainerStatus{Name: "main", Ready: true, RestartCount: now.RestartCount, ContainerID: now.ContainerID}
	framework.Poll(t, ctx, 10*time.Second, "containerStatusSnapshot of the new instance", func(ctx context.Context) (bool, error) {
		var err error
		if crr, err = beta.Get(ctx, "drain", metav1.GetOptions{}); err != nil {
			return false, err
		}
		s := crr.Status.ContainerStatusSnapshot
		return len(s) == 1 && s[0] == want, fmt.Errorf("containerStatusSnapshot %+v, want [%+v]", s, want)
	})
	grace := apimeta.FindStatusCondition(crr.Status.Conditions, v1beta1.ContainerRecreateRequestPreRecreateGraceType)
	if grace == nil || grace.Status != metav1.ConditionTrue || grace.Reason != "PreRecreateGrace" || grace.LastTransitionTime.IsZero() {
		t.Errorf("conditions %+v: want PreRecreateGrace True", crr.Status.Conditions)
	}
	for _, key := range []string{v1alpha1.ContainerRecreateRequestSyncContainerStatusesKey, v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey} {
		if v, ok := crr.Annotations[key]; ok {
			t.Errorf("v1beta1 annotation %s=%q: it is status at v1beta1", key, v)
		}
	}
	alpha, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "drain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := alpha.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; grace != nil && got != grace.LastTransitionTime.UTC().Format(time.RFC3339) {
		t.Errorf("v1alpha1 unready-acquired %q, want the condition's time %v", got, grace.LastTransitionTime)
	}
}
