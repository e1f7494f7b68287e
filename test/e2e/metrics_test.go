package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestMetricsInPlaceUpdate: after one in-place update of an image, inplace-controller's /metrics
// has observed the update's duration once (under change="images", no longer than the test
// waited), and after one ContainerRecreateRequest, the request's duration once.
func TestMetricsInPlaceUpdate(t *testing.T) {
	ctx, ns := framework.Start(t, "metrics")
	addr := framework.ProgramAddress(t, "inplace-controller")
	const updates = `inplace_controller_inplaceupdate_duration_seconds_count{change="images"}`
	const updateSeconds = `inplace_controller_inplaceupdate_duration_seconds_sum{change="images"}`
	const crrs = `inplace_controller_containerrecreaterequest_duration_seconds_count{reason="Completed"}`

	pod := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "web", framework.Container("main", framework.AppImageV1)))
	countBefore, sumBefore := framework.MetricValue(t, ctx, addr, updates), framework.MetricValue(t, ctx, addr, updateSeconds)
	start := time.Now()
	framework.StartInPlaceUpdate(t, ctx, ns, pod.Name, v1alpha1.InPlaceUpdateSpec{
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}},
	})
	framework.WaitUpdateCompleted(t, ctx, ns, pod.Name, framework.PodTimeout)
	waited := time.Since(start).Seconds()
	framework.Poll(t, ctx, 30*time.Second, "the update's duration on /metrics", func(ctx context.Context) (bool, error) {
		n := framework.MetricValue(t, ctx, addr, updates)
		return n == countBefore+1, fmt.Errorf("%s %v, was %v", updates, n, countBefore)
	})
	if took := framework.MetricValue(t, ctx, addr, updateSeconds) - sumBefore; took <= 0 || took > waited+1 {
		t.Errorf("observed duration %.2f s, want in (0, %.2f] (the time the test waited)", took, waited+1)
	}

	crrBefore := framework.MetricValue(t, ctx, addr, crrs)
	framework.CreateCRR(t, ctx, ns, framework.NewCRR("restart", pod.Name, "main"))
	framework.WaitCRRCompleted(t, ctx, ns, "restart", framework.PodTimeout)
	framework.Poll(t, ctx, 30*time.Second, "the request's duration on /metrics", func(ctx context.Context) (bool, error) {
		n := framework.MetricValue(t, ctx, addr, crrs)
		return n == crrBefore+1, fmt.Errorf("%s %v, was %v", crrs, n, crrBefore)
	})
}

// TestDescribeShowsEvents: kubectl describe of each workload kind and of a ContainerRecreateRequest
// lists the Events inplace's controllers wrote about it, with reasons a user can grep.
func TestDescribeShowsEvents(t *testing.T) {
	ctx, ns := framework.Start(t, "describe")
	_, pods := framework.ReadyCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 1, "Parallel"))
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	framework.NewAdvancedDaemonSet(t, ctx, ns)
	n := framework.ReadyNodes(t, ctx)
	framework.WaitDaemonSet(t, ctx, ns, n, n)
	for name := range pods {
		framework.CreateCRR(t, ctx, ns, framework.NewCRR("restart", name, "main"))
	}
	framework.WaitCRRCompleted(t, ctx, ns, "restart", framework.PodTimeout)

	for _, c := range []struct{ object, reason string }{
		{"clonesets.apps.kruise.io/web", "SuccessfulCreate"},
		{"statefulsets.apps.kruise.io/db", "SuccessfulCreate"},
		{"daemonsets.apps.kruise.io/agent", "SuccessfulCreate"},
		{"containerrecreaterequests.apps.kruise.io/restart", "Completed"},
	} {
		framework.Poll(t, ctx, 30*time.Second, "kubectl describe "+c.object+" showing "+c.reason, func(ctx context.Context) (bool, error) {
			out, stderr, err := framework.Kubectl(ctx, "", "-n", ns, "describe", c.object)
			if err != nil {
				return false, fmt.Errorf("%v: %s", err, stderr)
			}
			_, events, _ := strings.Cut(out, "Events:")
			return strings.Contains(events, c.reason), fmt.Errorf("events section %q", events)
		})
	}
}

// TestDescribeSidecarSetShowsEvents: `kubectl describe sidecarset NAME` (cluster-scoped, so its
// Events live in namespace default) lists what the SidecarSet controller wrote about an upgrade of
// its sidecar: the Pods it started (SidecarUpgrading) and the end (SidecarUpgraded); and `kubectl
// get events` finds them by the SidecarSet as involvedObject.
func TestDescribeSidecarSetShowsEvents(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "describe-ss", 1, nil)
	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 1)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 1, 1, 1, 1)
	var pod string
	for name := range u.Before {
		pod = name
	}
	framework.Poll(t, ctx, 30*time.Second, "kubectl describe sidecarset "+u.Set+" showing the upgrade", func(ctx context.Context) (bool, error) {
		out, stderr, err := framework.Kubectl(ctx, "", "describe", "sidecarset", u.Set)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		_, events, _ := strings.Cut(out, "Events:")
		return strings.Contains(events, "SidecarUpgrading") && strings.Contains(events, u.Ns+"/"+pod) &&
			strings.Contains(events, "SidecarUpgraded"), fmt.Errorf("events section %q", events)
	})
	out := framework.MustKubectl(t, ctx, "", "get", "events", "-A", "-o", "name", "--field-selector",
		"involvedObject.kind=SidecarSet,involvedObject.name="+u.Set+",reason=SidecarUpgraded")
	if n := len(strings.Fields(out)); n != 1 {
		t.Errorf("kubectl get events of SidecarSet %s with reason SidecarUpgraded: %q, want one", u.Set, out)
	}
}
