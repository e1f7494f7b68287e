package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The tests that need the local cluster's second node (INPLACE_NODES=2 hack/local-up.sh: a second
// kubelet with its own containerd, node IP, pod subnet and ports, tainted so that only Pods that
// tolerate it run there). The harness starts it in the host pass; with inplace installed in the
// cluster there is none (its daemon would reach containerd through one hostPath for both nodes
// of this one machine), and these tests do not apply there.

// TestSecondNodeRunsPods: a Pod tolerating the taint runs on the second node, from its own
// subnet, reachable from a Pod of the first node; a Pod that does not tolerate it stays off.
func TestSecondNodeRunsPods(t *testing.T) {
	node2 := framework.SecondNode(t)
	ctx, ns := framework.Start(t, "node2")
	there := framework.CreateCRRPod(t, ctx, framework.OnNode(framework.CRRPod(ns, "there", false, framework.StubbornContainer("main")), node2))
	if there.Spec.NodeName != node2 {
		t.Fatalf("pod there on node %q, want %s", there.Spec.NodeName, node2)
	}
	here := framework.CreateCRRPod(t, ctx, framework.CRRPod(ns, "here", false, framework.StubbornContainer("main")))
	if here.Spec.NodeName == node2 {
		t.Errorf("pod here (no toleration) scheduled on the tainted node %s", node2)
	}
	if there.Status.PodIP == "" || here.Status.PodIP == "" || there.Status.PodIP == here.Status.PodIP {
		t.Fatalf("pod IPs %q (node 2) and %q (node 1)", there.Status.PodIP, here.Status.PodIP)
	}
	// Across nodes: the host routes between the two bridges.
	out := framework.MustKubectl(t, ctx, "", "-n", ns, "exec", "here", "--", "ping", "-c", "1", "-W", "5", there.Status.PodIP)
	if want := "1 packets received"; !strings.Contains(out, want) {
		t.Errorf("ping from node 1's pod to node 2's pod %s: %q, want %q", there.Status.PodIP, out, want)
	}
	// kubectl exec and logs reach the second kubelet (its own port) through kube-apiserver.
	if out := framework.MustKubectl(t, ctx, "", "-n", ns, "logs", "there"); !strings.Contains(out, "started") {
		t.Errorf("kubectl logs of the pod on node 2: %q, want it to say started", out)
	}
}

// TestSecondNodeHasItsOwnDaemon: an in-place update and a ContainerRecreateRequest of a Pod on the
// second node are carried out by the second node's inplace-daemon alone: they complete while the
// first node's daemon is stopped, every event the daemons write about the Pod comes from the
// second node, and with the second node's daemon stopped a request for it waits (the first
// node's daemon does not take it) until that daemon is back.
func TestSecondNodeHasItsOwnDaemon(t *testing.T) {
	node2 := framework.SecondNode(t)
	ctx, ns := framework.Start(t, "node2-daemon")
	pod := framework.CreateSettledPod(t, ctx, framework.OnNode(framework.GatedPod(ns, "web", framework.Container("main", framework.AppImageV1)), node2))
	t.Cleanup(func() {
		if err := framework.RunLocalUpHook(t, framework.DaemonHook); err != nil {
			t.Errorf("restarting the inplace-daemons: %v", err)
		}
	})

	// Node 1's daemon down: node 2's does the work.
	framework.CurrentProgram(t, "inplace-daemon").Stop(t, ctx, syscall.SIGTERM, framework.StopTimeout)
	framework.StartInPlaceUpdate(t, ctx, ns, pod.Name, v1alpha1.InPlaceUpdateSpec{
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: framework.AppImageV2}},
	})
	updated := framework.WaitUpdateCompleted(t, ctx, ns, pod.Name, framework.PodTimeout)
	if c := framework.PodCondition(updated, "InPlaceUpdateReady"); c == nil || c.Reason != "NewSpecObservedByKubelet" {
		t.Errorf("InPlaceUpdateReady %+v, want True with reason NewSpecObservedByKubelet (set by node 2's daemon)", c)
	}
	if s := framework.FindStatus(updated, "main"); s == nil || s.Image != framework.AppImageV2 || s.RestartCount != 1 {
		t.Errorf("container main %+v, want %s restarted once", s, framework.AppImageV2)
	}
	framework.CreateCRR(t, ctx, ns, framework.NewCRR("restart-1", pod.Name, "main"))
	framework.WaitCRRCompleted(t, ctx, ns, "restart-1", framework.PodTimeout)
	expectDaemonEventsFrom(t, ctx, ns, pod.Name, node2)

	// Node 2's daemon down, node 1's back: the request waits for node 2's daemon.
	if err := framework.RunLocalUpHook(t, framework.DaemonHook); err != nil {
		t.Fatalf("restarting the inplace-daemons: %v", err)
	}
	framework.CurrentProgram(t, "inplace-daemon-node2").Stop(t, ctx, syscall.SIGTERM, framework.StopTimeout)
	framework.CreateCRR(t, ctx, ns, framework.NewCRR("restart-2", pod.Name, "main"))
	framework.Consistently(t, ctx, 3*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		crr, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, "restart-2", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if crr.Status.Phase != "" && crr.Status.Phase != v1alpha1.ContainerRecreateRequestPending {
			return fmt.Errorf("with node 2's daemon stopped the request went to %s (%s): another daemon took it", crr.Status.Phase, crr.Status.Message)
		}
		return nil
	})
	if err := framework.RunLocalUpHook(t, framework.DaemonHook); err != nil {
		t.Fatalf("restarting the inplace-daemons: %v", err)
	}
	framework.WaitCRRCompleted(t, ctx, ns, "restart-2", framework.PodTimeout)
	expectDaemonEventsFrom(t, ctx, ns, pod.Name, node2)
}

// expectDaemonEventsFrom checks that the Pod has events from inplace-daemon and that all of them
// come from the daemon of the given node.
func expectDaemonEventsFrom(t *testing.T, ctx context.Context, ns, pod, node string) {
	t.Helper()
	framework.Poll(t, ctx, 30*time.Second, "inplace-daemon's events about "+pod, func(ctx context.Context) (bool, error) {
		list, err := framework.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
		if err != nil {
			return false, err
		}
		n := 0
		for _, e := range list.Items {
			if e.Source.Component != "inplace-daemon" {
				continue
			}
			n++
			if e.Source.Host != node {
				t.Errorf("event %s %q about %s came from the daemon of node %q, want %s", e.Reason, e.Message, pod, e.Source.Host, node)
			}
		}
		return n > 0, fmt.Errorf("no event from inplace-daemon yet (%d events)", len(list.Items))
	})
}

// TestAdvancedDaemonSetNodeSelectorMovesPods: the agent runs on both nodes; a template node
// selector naming the second node leaves one Pod, there; naming the first node moves it there.
func TestAdvancedDaemonSetNodeSelectorMovesPods(t *testing.T) {
	node2 := framework.SecondNode(t)
	ctx, ns := framework.Start(t, "ads-move")
	framework.NewAdvancedDaemonSet(t, ctx, ns)
	framework.ExpectOnePodPerNode(t, ctx, framework.WaitDaemonSet(t, ctx, ns, 2, 2))
	node1 := ""
	for _, p := range framework.WaitDaemonSet(t, ctx, ns, 2, 2) {
		if p.Spec.NodeName != node2 {
			node1 = p.Spec.NodeName
		}
	}
	for _, node := range []string{node2, node1} {
		framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		})
		pods := framework.WaitDaemonSet(t, ctx, ns, 1, 1)
		if pods[0].Spec.NodeName != node {
			t.Errorf("node selector %s: the Pod %s runs on %q", node, pods[0].Name, pods[0].Spec.NodeName)
		}
	}
}
