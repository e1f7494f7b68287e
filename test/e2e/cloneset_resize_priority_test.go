package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// sidePostStart is how long the side container's postStart hook holds it not ready after each
// start: main's batch may begin only after that.
const sidePostStart = 3 * time.Second

// TestCloneSetInPlaceResizeWithPriorities (OpenKruise's "in-place update two container image,
// resource ... with priorities" scenarios): main (resized, resizePolicy NotRequired) and side
// (launch priority 10, a postStart hook of 3 s) are updated in two batches, side first.
//   - images and main's resources: side restarts once, main stops only once side's new instance
//     is ready (after its hook), the state records the batches [side] then [main], and main's
//     resources in spec and status are the new ones;
//   - side's new image does not start: main is left alone (not restarted, not resized), the
//     state has one batch [side] and main's image and resources wait as the next batch;
//   - main's image and resources and an annotation side reads through env: side restarts once
//     for its env, then main's batch as above.
func TestCloneSetInPlaceResizeWithPriorities(t *testing.T) {
	t.Run("images-and-resources", func(t *testing.T) {
		t.Parallel()
		testResizeWithPriorities(t, framework.AppImageV2, false)
	})
	t.Run("previous-batch-failed", func(t *testing.T) {
		t.Parallel()
		testResizeWithPriorities(t, framework.AppImageBad, false)
	})
	t.Run("resources-and-env-from-annotation", func(t *testing.T) {
		t.Parallel()
		testResizeWithPriorities(t, "", true)
	})
}

func testResizeWithPriorities(t *testing.T, sideImage string, changeAnnotation bool) {
	ctx, ns := framework.Start(t, "clone-resize-prio")
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Annotations = map[string]string{"config": "foo"}
		main := &cs.Spec.Template.Spec.Containers[0]
		main.Resources = *resizeOld.DeepCopy()
		main.ResizePolicy = resizePolicies[3].policy // NotRequired
		side := corev1.Container{
			Name: "side", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever,
			Env: []corev1.EnvVar{
				{Name: pub.ContainerLaunchPriorityEnvName, Value: "10"},
				{Name: "CONFIG", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['config']"}}},
			},
			Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
				Command: []string{"sleep", fmt.Sprint(int(sidePostStart.Seconds()))}}}},
		}
		cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, side)
	})
	var pod *corev1.Pod
	for _, p := range framework.WaitCloneSetReady(t, ctx, cs, 1) {
		pod = p
	}
	mainBefore, sideBefore := framework.ContainerStatus(t, pod, "main"), framework.ContainerStatus(t, pod, "side")

	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		cs.Spec.Template.Spec.Containers[0].Resources = *resizeNew.DeepCopy()
		if sideImage != "" {
			cs.Spec.Template.Spec.Containers[1].Image = sideImage
		}
		if changeAnnotation {
			cs.Spec.Template.Annotations["config"] = "bar"
		}
	})

	if sideImage == framework.AppImageBad {
		testPreviousBatchFailed(t, ctx, cs, pod, mainBefore)
		return
	}

	_, after := framework.WaitRolledOut(t, ctx, cs, 1)
	p := after[pod.Name]
	if p == nil || p.UID != pod.UID {
		t.Fatalf("pods after %v: want %s (uid %s) updated in place", slices.Collect(maps.Keys(after)), pod.Name, pod.UID)
	}
	main, side := framework.ContainerStatus(t, p, "main"), framework.ContainerStatus(t, p, "side")
	if side.RestartCount != 1 || side.ContainerID == sideBefore.ContainerID {
		t.Errorf("side %+v: want exactly one restart", side)
	}
	if main.ContainerID == mainBefore.ContainerID || main.Image != framework.AppImageV2 {
		t.Errorf("main %+v: want a new container on %s", main, framework.AppImageV2)
	}
	// main stopped only once side's new instance was ready, after its postStart hook. Start
	// and finish times are whole seconds: up to 1 s is lost.
	if main.LastTerminationState.Terminated == nil || side.State.Running == nil {
		t.Errorf("main's last termination %+v, side's state %+v", main.LastTerminationState, side.State)
	} else if stopped, started := main.LastTerminationState.Terminated.FinishedAt.Time, side.State.Running.StartedAt.Time; stopped.Before(started.Add(sidePostStart - time.Second)) {
		t.Errorf("main stopped at %v, side's new instance started at %v: want main stopped after side's %v postStart", stopped, started, sidePostStart)
	}
	if got := framework.BatchContainers(framework.StateOf(t, p)); !slices.EqualFunc(got, [][]string{{"side"}, {"main"}}, slices.Equal) {
		t.Errorf("containerBatchesRecord %v, want [[side] [main]]", got)
	}
	spec := p.Spec.Containers[0].Resources
	if !sameResources(&spec, &resizeNew) || !sameResources(main.Resources, &spec) {
		t.Errorf("main resources: spec %+v, status %+v; want both %+v", spec, main.Resources, resizeNew)
	}
}

// testPreviousBatchFailed: side's new image exits at once, so side never becomes ready and
// main's batch never starts.
func testPreviousBatchFailed(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod, mainBefore corev1.ContainerStatus) {
	var p *corev1.Pod
	framework.Poll(t, ctx, framework.RolloutTimeout, "side to fail on "+framework.AppImageBad+" twice", func(ctx context.Context) (bool, error) {
		var err error
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		if p = pods[pod.Name]; p == nil {
			return false, fmt.Errorf("pods %v", slices.Collect(maps.Keys(pods)))
		}
		s := framework.FindStatus(p, "side")
		return s != nil && s.Image == framework.AppImageBad && s.RestartCount >= 2, fmt.Errorf("side %+v", s)
	})
	if main := framework.ContainerStatus(t, p, "main"); main.RestartCount != 0 || main.ContainerID != mainBefore.ContainerID {
		t.Errorf("main %+v restarted although side's batch never finished", main)
	}
	if framework.SpecImage(p, "main") != framework.AppImageV1 || !sameResources(&p.Spec.Containers[0].Resources, &resizeOld) {
		t.Errorf("main's spec changed (image %s, resources %+v) although side's batch never finished", framework.SpecImage(p, "main"), p.Spec.Containers[0].Resources)
	}
	st := framework.StateOf(t, p)
	if got := framework.BatchContainers(st); !slices.EqualFunc(got, [][]string{{"side"}}, slices.Equal) {
		t.Errorf("containerBatchesRecord %v, want [[side]]", got)
	}
	if !maps.Equal(st.NextContainerImages, map[string]string{"main": framework.AppImageV2}) {
		t.Errorf("nextContainerImages %v, want main: %s", st.NextContainerImages, framework.AppImageV2)
	}
	if r, ok := st.NextContainerResources["main"]; !ok || !sameResources(&r, &resizeNew) {
		t.Errorf("nextContainerResources %v, want main: %+v", st.NextContainerResources, resizeNew)
	}
}
