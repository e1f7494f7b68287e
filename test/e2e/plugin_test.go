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
	"github.com/inplace-dev/inplace/pkg/kubectlplugin"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The kubectl plugin (cmd/kubectl-inplace, built into _output/bin as kubectl-inplace) on the real
// cluster, run as kubectl runs it: found on PATH, `kubectl inplace ...`.

// kubectlInplace runs `kubectl inplace ARGS` (kubectl finds the plugin on PATH) and returns its
// stdout, stderr and error.
func kubectlInplace(ctx context.Context, timeout time.Duration, args ...string) (string, string, error) {
	return kubectlInplaceEnv(ctx, timeout, nil, args...)
}

// kubectlInplaceEnv is kubectlInplace with more environment variables (NAME=value).
func kubectlInplaceEnv(ctx context.Context, timeout time.Duration, env []string, args ...string) (string, string, error) {
	path := "PATH=" + filepath.Join(framework.Repo, "_output/bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	return framework.KubectlWith(ctx, timeout, append([]string{path}, env...), "", append([]string{"inplace"}, args...)...)
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

// TestPluginRollout: kubectl lists the plugin; `kubectl inplace set image` starts an in-place
// rollout that `rollout status` waits for (exit 0); `rollout history` lists both revisions;
// `rollout undo` brings the old image back, in place.
func TestPluginRollout(t *testing.T) {
	ctx, ns := framework.Start(t, "plugin-rollout")
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := podUIDs(framework.WaitCloneSetReady(t, ctx, cs, 2))

	if out, _, _ := kubectlInplace(ctx, time.Minute, "--help"); !strings.Contains(out, "rollout") {
		t.Errorf("kubectl inplace --help: %q", out)
	}
	checkPluginListed(t, ctx)
	mustKubectlInplace(t, ctx, "-n", ns, "set", "image", "clone/web", "main="+framework.AppImageV2)
	if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m"); !strings.Contains(out, "successfully rolled out") {
		t.Errorf("rollout status: %q", out)
	}
	for _, p := range framework.WaitCloneSetReady(t, ctx, cs, 2) {
		if !before[p.UID] || framework.SpecImage(p, "main") != framework.AppImageV2 {
			t.Errorf("pod %s (%s) on %s after set image: want the same Pods on %s", p.Name, p.UID, framework.SpecImage(p, "main"), framework.AppImageV2)
		}
	}
	if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "history", "clone/web"); strings.Count(out, "\n") < 3 {
		t.Errorf("rollout history: %q, want a header and two revisions", out)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "undo", "clone/web")
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m")
	framework.Poll(t, ctx, time.Minute, "the Pods back on "+framework.AppImageV1, func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if !before[p.UID] || framework.SpecImage(p, "main") != framework.AppImageV1 {
				return false, fmt.Errorf("pod %s on %s", p.Name, framework.SpecImage(p, "main"))
			}
		}
		return len(pods) == 2, nil
	})
}

// TestPluginRolloutStatusStuck: an InPlaceOnly CloneSet given a change that cannot go in place
// never rolls out; `rollout status` says so and exits non-zero instead of waiting.
func TestPluginRolloutStatusStuck(t *testing.T) {
	ctx, ns := framework.Start(t, "plugin-stuck")
	// Validation refuses such a change under InPlaceOnly, so it is written under InPlaceIfPossible
	// while paused, then the strategy is switched and the rollout resumed (TestCloneSetInPlaceOnly).
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, Paused: true})
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "new"}}
	})
	framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
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
	ctx, ns := framework.Start(t, "plugin-pod")
	pod := framework.CreateSettledPod(t, ctx, framework.GatedPod(ns, "web", framework.Container("main", framework.AppImageV1)))
	mustKubectlInplace(t, ctx, "-n", ns, "update", "pod", "web", "--image", "main="+framework.AppImageV2, "--wait", "--timeout", "2m")
	after, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := framework.FindStatus(after, "main")
	if after.UID != pod.UID || s == nil || s.Image != framework.AppImageV2 || s.RestartCount != 1 {
		t.Errorf("after update pod: UID %s (was %s), container %+v; want the same Pod on %s", after.UID, pod.UID, s, framework.AppImageV2)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "recreate", "pod", "web", "-c", "main", "--wait", "--timeout", "2m")
	framework.Poll(t, ctx, time.Minute, "main restarted by the recreate", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := framework.FindStatus(p, "main")
		return p.UID == pod.UID && s != nil && s.RestartCount == 2, fmt.Errorf("container %+v", s)
	})
}

// TestPluginScalePods: `kubectl inplace scale clone/web --replicas 2 --pods NAME` removes exactly
// that Pod.
func TestPluginScalePods(t *testing.T) {
	ctx, ns := framework.Start(t, "plugin-scale")
	cs, pods := framework.ReadyCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	var victim string
	for name := range pods {
		victim = name
		break
	}
	mustKubectlInplace(t, ctx, "-n", ns, "scale", "clone/web", "--replicas", "2", "--pods", victim)
	after := framework.WaitCloneSetReady(t, ctx, cs, 2)
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
	ctx, ns := framework.Start(t, "plugin-advanced")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, "Parallel"))
	stsBefore := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	framework.NewAdvancedDaemonSet(t, ctx, ns)
	n := framework.ReadyNodes(t, ctx)
	dsBefore := framework.WaitDaemonSet(t, ctx, ns, n, n)

	for _, ref := range []string{"asts/db", "ads/agent"} {
		mustKubectlInplace(t, ctx, "-n", ns, "set", "image", ref, "main="+framework.AppImageV2)
		if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", ref, "--timeout", "3m"); !strings.Contains(out, "rolled out") &&
			!strings.Contains(out, "complete") {
			t.Errorf("rollout status %s: %q", ref, out)
		}
	}
	stsAfter := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	framework.CheckSamePods(t, stsBefore, stsAfter)
	for name, p := range stsAfter {
		if framework.SpecImage(p, "main") != framework.AppImageV2 {
			t.Errorf("pod %s on %s after set image", name, framework.SpecImage(p, "main"))
		}
	}
	uids := map[types.UID]bool{}
	for _, p := range dsBefore {
		uids[p.UID] = true
	}
	for _, p := range framework.WaitDaemonSet(t, ctx, ns, n, n) {
		if !uids[p.UID] || framework.SpecImage(&p, "main") != framework.AppImageV2 {
			t.Errorf("agent %s on %s (recreated: %v) after set image, want the same Pod on %s", p.Name, framework.SpecImage(&p, "main"), !uids[p.UID], framework.AppImageV2)
		}
	}
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "undo", "ads/agent")
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "ads/agent", "--timeout", "3m")
	for _, p := range framework.WaitDaemonSet(t, ctx, ns, n, n) {
		if framework.SpecImage(&p, "main") != framework.AppImageV1 {
			t.Errorf("agent %s on %s after undo, want %s", p.Name, framework.SpecImage(&p, "main"), framework.AppImageV1)
		}
	}
}

// checkPluginListed checks that `kubectl plugin list` finds _output/bin/kubectl-inplace on PATH.
// Another kubectl-inplace later on PATH (make install-plugin) makes kubectl warn that it is
// overshadowed and exit 1; the listing still names ours, first.
func checkPluginListed(t *testing.T, ctx context.Context) {
	t.Helper()
	plugin := filepath.Join(framework.Repo, "_output/bin/kubectl-inplace")
	path := "PATH=" + filepath.Dir(plugin) + string(os.PathListSeparator) + os.Getenv("PATH")
	out, stderr, err := framework.KubectlWith(ctx, time.Minute, []string{path}, "", "plugin", "list")
	if !strings.Contains(out, plugin+"\n") {
		t.Errorf("kubectl plugin list (%v): stdout %q, stderr %q; want %s listed", err, out, stderr, plugin)
	}
}

// cloneSetObserved waits until the CloneSet's controller observed its current generation, and
// returns the CloneSet as it was then.
func cloneSetObserved(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet) *v1alpha1.CloneSet {
	t.Helper()
	var got *v1alpha1.CloneSet
	framework.Poll(t, ctx, time.Minute, "CloneSet "+cs.Name+" observed", func(ctx context.Context) (bool, error) {
		var err error
		if got, err = framework.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation, fmt.Errorf("generation %d, observed %d", got.Generation, got.Status.ObservedGeneration)
	})
	return got
}

// expectImagesStay watches for framework.SettleWindow that the CloneSet's Pods stay the Pods of before, on image.
func expectImagesStay(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, before map[types.UID]bool, image, why string) {
	t.Helper()
	framework.Consistently(t, ctx, framework.SettleWindow, 200*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if !before[p.UID] || framework.SpecImage(p, "main") != image {
				return fmt.Errorf("%s: pod %s (%s) on %s, want the Pods of before on %s", why, p.Name, p.UID, framework.SpecImage(p, "main"), image)
			}
		}
		return nil
	})
}

// TestPluginRolloutPauseResume: `rollout pause` stops a CloneSet's rollout: after `set image` the
// controller sees the new template but no Pod changes; `rollout resume` lets it complete, in place
// (the same Pods on the new image).
func TestPluginRolloutPauseResume(t *testing.T) {
	ctx, ns := framework.Start(t, "plugin-pause")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	uids := podUIDs(before)

	if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "pause", "clone/web"); !strings.Contains(out, "paused") {
		t.Errorf("rollout pause: %q", out)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "set", "image", "clone/web", "main="+framework.AppImageV2)
	paused := cloneSetObserved(t, ctx, cs)
	if !paused.Spec.UpdateStrategy.Paused || paused.Status.UpdateRevision == paused.Status.CurrentRevision || paused.Status.UpdatedReplicas != 0 {
		t.Fatalf("paused CloneSet after set image: paused %v, status %+v; want a new update revision and no Pod updated",
			paused.Spec.UpdateStrategy.Paused, paused.Status)
	}
	expectImagesStay(t, ctx, cs, uids, framework.AppImageV1, "paused")

	if out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "resume", "clone/web"); !strings.Contains(out, "resumed") {
		t.Errorf("rollout resume: %q", out)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m")
	_, after := framework.WaitRolledOut(t, ctx, cs, 2)
	framework.CheckSamePods(t, before, after)
	for _, p := range after {
		if framework.SpecImage(p, "main") != framework.AppImageV2 {
			t.Errorf("pod %s on %s after resume, want %s", p.Name, framework.SpecImage(p, "main"), framework.AppImageV2)
		}
	}
}

// TestPluginRolloutRestart: `rollout restart` sets the template annotation inplace.dev/restartedAt;
// with an in-place strategy it reaches the Pods in place: the same Pods carry it, their container
// not restarted (nothing reads the annotation).
func TestPluginRolloutRestart(t *testing.T) {
	ctx, ns := framework.Start(t, "plugin-restart")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})

	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "restart", "clone/web")
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := got.Spec.Template.Annotations[kubectlplugin.RestartedAtAnnotation]
	if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Fatalf("template annotation %s = %q after rollout restart, want a time: %v", kubectlplugin.RestartedAtAnnotation, at, err)
	}
	mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m")
	_, after := framework.WaitRolledOut(t, ctx, cs, 2)
	framework.CheckSamePods(t, before, after)
	for _, p := range after {
		if got := p.Annotations[kubectlplugin.RestartedAtAnnotation]; got != at {
			t.Errorf("pod %s: annotation %s = %q, want %q", p.Name, kubectlplugin.RestartedAtAnnotation, got, at)
		}
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: container main %+v, want not restarted by a metadata-only change", p.Name, s)
		}
	}
}

// TestPluginRolloutHistoryChangeCause: the kubernetes.io/change-cause a user writes on the CloneSet
// before each change is what `rollout history` shows for the revision that change made; `rollout
// history --revision N` prints revision N's Pod template.
func TestPluginRolloutHistoryChangeCause(t *testing.T) {
	ctx, ns := framework.Start(t, "plugin-history")
	framework.ReadyCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		func(cs *v1alpha1.CloneSet) {
			cs.Annotations = map[string]string{history.ChangeCauseAnnotation: "first release"}
		})
	for _, step := range []struct{ cause, image string }{{"v2: new TLS", framework.AppImageV2}, {"v3: more logs", framework.AppImageV3}} {
		framework.MustKubectl(t, ctx, "", "-n", ns, "annotate", "--overwrite", "clone/web", history.ChangeCauseAnnotation+"="+step.cause)
		mustKubectlInplace(t, ctx, "-n", ns, "set", "image", "clone/web", "main="+step.image)
		mustKubectlInplace(t, ctx, "-n", ns, "rollout", "status", "clone/web", "--timeout", "2m")
	}
	out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "history", "clone/web")
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		rev, cause, _ := strings.Cut(line, " ")
		rows = append(rows, []string{rev, strings.TrimSpace(cause)})
	}
	want := [][]string{{"REVISION", "CHANGE-CAUSE"}, {"1", "first release"}, {"2", "v2: new TLS"}, {"3", "v3: more logs"}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("rollout history:\n%s\nrows %q, want %q", out, rows, want)
	}
	for rev, image := range map[string]string{"1": framework.AppImageV1, "2": framework.AppImageV2, "3": framework.AppImageV3} {
		out := mustKubectlInplace(t, ctx, "-n", ns, "rollout", "history", "clone/web", "--revision", rev)
		if !strings.Contains(out, "with revision #"+rev) || !strings.Contains(out, "image: "+image) {
			t.Errorf("rollout history --revision %s:\n%s\nwant its template, on %s", rev, out, image)
		}
		for _, other := range []string{framework.AppImageV1, framework.AppImageV2, framework.AppImageV3} {
			if other != image && strings.Contains(out, "image: "+other+"\n") {
				t.Errorf("rollout history --revision %s shows %s:\n%s", rev, other, out)
			}
		}
	}
}
