package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The kubectl plugin (cmd/kubectl-inplace, built into _output/bin as kubectl-inplace) on the real
// cluster, run as kubectl runs it: found on PATH, `kubectl inplace ...`.

// kubectlInplace runs `kubectl inplace ARGS` (kubectl finds the plugin on PATH) and returns its
// stdout, stderr and error.
func kubectlInplace(ctx context.Context, timeout time.Duration, args ...string) (string, string, error) {
	path := "PATH=" + filepath.Join(repo, "_output/bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	return kubectlWith(ctx, timeout, []string{path}, "", append([]string{"inplace"}, args...)...)
}

func mustKubectlInplace(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	out, stderr, err := kubectlInplace(ctx, 3*time.Minute, args...)
	if err != nil {
		t.Fatalf("kubectl inplace %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// podUIDs are the UIDs of the CloneSet's Pods.
func podUIDs(pods map[string]*corev1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}

// TestPluginRollout: `kubectl inplace set image` starts an in-place rollout that `rollout status`
// waits for (exit 0); `rollout history` lists both revisions; `rollout undo` brings the old image
// back, in place; kubectl lists the plugin.
func TestPluginRollout(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "plugin-rollout")
	cs := newUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := podUIDs(waitCloneSetReady(t, ctx, cs, 2))

	if out, _, _ := kubectlInplace(ctx, time.Minute, "--help"); !strings.Contains(out, "rollout") {
		t.Errorf("kubectl inplace --help: %q", out)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "set", "image", "clone/web", "main="+appImageV2)
	if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m"); !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status: %q", out)
	}
	for _, p := range waitCloneSetReady(t, ctx, cs, 2) {
		if !before[p.UID] || specImage(p, "main") != appImageV2 {
			t.Errorf("pod %s (%s) on %s after set image: want the same Pods on %s", p.Name, p.UID, specImage(p, "main"), appImageV2)
		}
	}
	if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "history", "clone/web"); strings.Count(out, "\n") < 3 {
		t.Errorf("rollout history: %q, want a header and two revisions", out)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "undo", "clone/web")
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m")
	poll(t, ctx, time.Minute, "the Pods back on "+appImageV1, func(ctx context.Context) (bool, error) {
		pods, err := cloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if !before[p.UID] || specImage(p, "main") != appImageV1 {
				return false, fmt.Errorf("pod %s on %s", p.Name, specImage(p, "main"))
			}
		}
		return len(pods) == 2, nil
	})
}

// TestPluginRolloutStatusStuck: an InPlaceOnly CloneSet given a change that cannot go in place
// never rolls out; `rollout status` says so and exits non-zero instead of waiting.
func TestPluginRolloutStatusStuck(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "plugin-stuck")
	// Validation refuses such a change under InPlaceOnly, so it is written under InPlaceIfPossible
	// while paused, then the strategy is switched and the rollout resumed (TestCloneSetInPlaceOnly).
	cs := newUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, Paused: true})
	waitCloneSetReady(t, ctx, cs, 1)
	cs = updateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	updateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Paused = false
	})
	start := time.Now()
	out, stderr, err := kubectlInplace(ctx, 2*time.Minute, "-n", ns, "rollout", "status", "clone/web", "--timeout", "90s")
	if err == nil || !strings.Contains(stderr, "stuck") {
		t.Errorf("rollout status of a stuck InPlaceOnly rollout: %v\nstdout %q\nstderr %q; want a non-zero exit saying it is stuck", err, out, stderr)
	}
	if took := time.Since(start); took > 60*time.Second {
		t.Errorf("rollout status took %v to see the rollout stuck (its timeout was 90 s)", took)
	}
}

// TestPluginPodSubresources: `kubectl inplace update pod --wait` updates a Pod's image in place
// (same UID); `kubectl inplace recreate pod -c main --wait` restarts that container once.
func TestPluginPodSubresources(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "plugin-pod")
	pod := createSettledPod(t, ctx, gatedPod(ns, "web", container("main", appImageV1)))
	mustKubectlInplace(t, ctx, "-n", ns, "update", "pod", "web", "--image", "main="+appImageV2, "--wait", "--timeout", "2m")
	after, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := findStatus(after, "main")
	if after.UID != pod.UID || s == nil || s.Image != appImageV2 || s.RestartCount != 1 {
		t.Errorf("after update pod: UID %s (was %s), container %+v; want the same Pod on %s", after.UID, pod.UID, s, appImageV2)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "recreate", "pod", "web", "-c", "main", "--wait", "--timeout", "2m")
	poll(t, ctx, time.Minute, "main restarted by the recreate", func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := findStatus(p, "main")
		return p.UID == pod.UID && s != nil && s.RestartCount == 2, fmt.Errorf("container %+v", s)
	})
}

// TestPluginScalePods: `kubectl inplace scale clone/web --replicas 2 --pods NAME` removes exactly
// that Pod.
func TestPluginScalePods(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "plugin-scale")
	cs := newUpdateCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	pods := waitCloneSetReady(t, ctx, cs, 3)
	var victim string
	for name := range pods {
		victim = name
		break
	}
	mustKubectlInplace(t, ctx, "-n", ns, "scale", "clone/web", "--replicas", "2", "--pods", victim)
	after := waitCloneSetReady(t, ctx, cs, 2)
	if _, ok := after[victim]; ok {
		t.Errorf("pod %s still there after scale --pods %s", victim, victim)
	}
	for name := range after {
		if _, ok := pods[name]; !ok {
			t.Errorf("pod %s created by a scale-down", name)
		}
	}
}

// TestPluginRolloutAdvanced: the rollout commands on an Advanced StatefulSet and DaemonSet: set
// image, rollout status until done (exit 0), the Pods updated in place; undo back to the old image.
func TestPluginRolloutAdvanced(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "plugin-advanced")
	set := createAdvancedStatefulSet(t, ctx, newAdvancedStatefulSet(ns, 2, "Parallel"))
	stsBefore := waitStatefulSet(t, ctx, set, 2, 2)
	newAdvancedDaemonSet(t, ctx, ns)
	n := readyNodes(t, ctx)
	dsBefore := waitDaemonSet(t, ctx, ns, n, n)

	for _, ref := range []string{"asts/db", "ads/agent"} {
		mustKubectlInplace(t, ctx, "-n", ns, "set", "image", ref, "main="+appImageV2)
		if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", ref, "--timeout", "3m"); !strings.Contains(out, "rolled out") &&
			!strings.Contains(out, "complete") {
			t.Errorf("rollout status %s: %q", ref, out)
		}
	}
	stsAfter := waitStatefulSet(t, ctx, set, 2, 2)
	checkSamePods(t, stsBefore, stsAfter)
	for name, p := range stsAfter {
		if specImage(p, "main") != appImageV2 {
			t.Errorf("pod %s on %s after set image", name, specImage(p, "main"))
		}
	}
	uids := map[types.UID]bool{}
	for _, p := range dsBefore {
		uids[p.UID] = true
	}
	for _, p := range waitDaemonSet(t, ctx, ns, n, n) {
		if !uids[p.UID] || specImage(&p, "main") != appImageV2 {
			t.Errorf("agent %s on %s (recreated: %v) after set image, want the same Pod on %s", p.Name, specImage(&p, "main"), !uids[p.UID], appImageV2)
		}
	}
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "undo", "ads/agent")
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "ads/agent", "--timeout", "3m")
	for _, p := range waitDaemonSet(t, ctx, ns, n, n) {
		if specImage(&p, "main") != appImageV1 {
			t.Errorf("agent %s on %s after undo, want %s", p.Name, specImage(&p, "main"), appImageV1)
		}
	}
}
