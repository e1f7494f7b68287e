package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// Native sidecars (a SidecarSet's spec.initContainers with restartPolicy Always) on the real
// kubelet: upgraded in place by a new image, which OpenKruise does not do, and a Job whose Pod
// has one injected still completes.

// nativeSidecar is the native sidecar "proxy": the local app image, which runs until SIGTERM.
func nativeSidecar(image string) v1alpha1.SidecarContainer {
	c := framework.Container("proxy", image)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return v1alpha1.SidecarContainer{Container: c}
}

// TestSidecarSetNativeSidecarUpgrade: a SidecarSet's native sidecar gets a new image (v1 -> v2,
// and its plain init container too): the same Pod's native sidecar is restarted by the kubelet on
// v2 (a new container), the app container keeps running untouched, the plain init container is
// neither changed nor run again, the Pod records the new hash and the SidecarSet counts it
// updated and ready.
func TestSidecarSetNativeSidecarUpgrade(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-native")
	name := "e2e-native-" + utilrand.String(5)
	set := framework.ScopedSidecarSet(name, ns, name)
	set.Spec.InitContainers = []v1alpha1.SidecarContainer{
		nativeSidecar(framework.AppImageV1),
		{Container: framework.ShContainer("setup", "echo setup done")},
	}
	set = framework.CreateSidecarSet(t, ctx, set)
	created := framework.CreateInjectedPod(t, ctx, framework.LabeledPod(ns, "web", name, framework.Container("main", framework.AppImageV1)), name)
	before := framework.WaitPodSettled(t, ctx, ns, "web")
	framework.WaitSidecarSetStatus(t, ctx, name, 1, 1, 1, 1)
	oldProxy, oldSetup := framework.InitStatus(before, "proxy"), framework.InitStatus(before, "setup")
	if oldProxy == nil || oldProxy.State.Running == nil || !oldProxy.Ready || oldSetup == nil || oldSetup.State.Terminated == nil {
		t.Fatalf("before the upgrade: proxy %+v, setup %+v; want proxy running and ready, setup completed", oldProxy, oldSetup)
	}
	oldMain := framework.ContainerStatus(t, before, "main")

	updated := framework.UpdateSidecarSet(t, ctx, name, func(s *v1alpha1.SidecarSet) {
		s.Spec.InitContainers[0].Image = framework.AppImageV2
		s.Spec.InitContainers[1].Image = framework.AppImageV2
	})
	hash := updated.Annotations[v1alpha1.SidecarSetHashAnnotation]
	if hash == "" || hash == set.Annotations[v1alpha1.SidecarSetHashAnnotation] {
		t.Fatalf("SidecarSet hash %q after the image change, want a new one", hash)
	}
	after := framework.WaitPod(t, ctx, framework.UpdateTimeout, "the native sidecar to run "+framework.AppImageV2, ns, "web", func(p *corev1.Pod) error {
		s := framework.InitStatus(p, "proxy")
		switch {
		case framework.FindContainer(p.Spec.InitContainers, "proxy").Image != framework.AppImageV2:
			return fmt.Errorf("spec image of proxy %s", framework.FindContainer(p.Spec.InitContainers, "proxy").Image)
		case s == nil || s.Image != framework.AppImageV2 || s.ContainerID == oldProxy.ContainerID || s.State.Running == nil || !s.Ready:
			return fmt.Errorf("proxy status %+v", s)
		case framework.SidecarHashes(t, p, v1alpha1.SidecarSetHashAnnotation)[name].Hash != hash:
			return fmt.Errorf("hash entry %+v, want %s", framework.SidecarHashes(t, p, v1alpha1.SidecarSetHashAnnotation)[name], hash)
		}
		// The engine marks the upgrade completed after it sees the new container ready, a
		// write that can land after the kubelet's status: wait for it too.
		var states map[string]framework.UpdateState
		if err := json.Unmarshal([]byte(p.Annotations[pub.SidecarSetInPlaceUpdateStateKey]), &states); err != nil {
			return fmt.Errorf("annotation %s: %v", pub.SidecarSetInPlaceUpdateStateKey, err)
		}
		if states[name].CompletedTimestamp == nil {
			return fmt.Errorf("upgrade state %+v not completed yet", states[name])
		}
		return nil
	})
	framework.WaitSidecarSetStatus(t, ctx, name, 1, 1, 1, 1)

	if after.UID != created.UID {
		t.Errorf("pod UID %s, was %s: the Pod was recreated, not upgraded in place", after.UID, created.UID)
	}
	if s := framework.InitStatus(after, "proxy"); s.RestartCount != 1 || s.Started == nil || !*s.Started {
		t.Errorf("proxy status %+v, want restartCount 1 (one restart, on the new image) and started", s)
	}
	if s := framework.ContainerStatus(t, after, "main"); s.ContainerID != oldMain.ContainerID || s.RestartCount != 0 || s.State.Running == nil {
		t.Errorf("app container status %+v, was %s: a native sidecar's upgrade must not restart it", s, oldMain.ContainerID)
	}
	if c := framework.FindContainer(after.Spec.InitContainers, "setup"); c.Image != framework.AppImageV1 {
		t.Errorf("plain init container setup has image %s, want %s: it ran already and is never upgraded", c.Image, framework.AppImageV1)
	}
	if s := framework.InitStatus(after, "setup"); s.ContainerID != oldSetup.ContainerID || s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("plain init container setup status %+v, want the completed container %s, not run again", s, oldSetup.ContainerID)
	}
	// The engine's record: the upgrade of proxy from the imageID the init container status had.
	var states map[string]framework.UpdateState
	if err := json.Unmarshal([]byte(after.Annotations[pub.SidecarSetInPlaceUpdateStateKey]), &states); err != nil {
		t.Fatalf("annotation %s: %v", pub.SidecarSetInPlaceUpdateStateKey, err)
	}
	if st := states[name]; st.Revision != hash || st.CompletedTimestamp == nil || st.LastContainerStatuses["proxy"].ImageID != oldProxy.ImageID {
		t.Errorf("upgrade state %+v, want revision %s, completed, proxy's previous imageID %s", st, hash, oldProxy.ImageID)
	}
}

// TestSidecarSetJobNativeSidecar: a Job's Pod with a native sidecar injected completes: once the
// app container exits, the kubelet stops the native sidecar and the Pod succeeds (a classic
// sidecar in spec.containers would keep it running; OpenKruise needs a sidecar terminator for
// those).
func TestSidecarSetJobNativeSidecar(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-job")
	name := "e2e-job-" + utilrand.String(5)
	set := framework.ScopedSidecarSet(name, ns, name)
	set.Spec.InitContainers = []v1alpha1.SidecarContainer{nativeSidecar(framework.AppImageV1)}
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitInjects(t, ctx, ns, set.Spec.Selector.MatchLabels, name)

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{framework.ShContainer("main", "echo main done")},
				},
			},
		},
	}
	if _, err := framework.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Job: %v", err)
	}
	framework.Poll(t, ctx, framework.PodTimeout, "Job "+ns+"/once to succeed", func(ctx context.Context) (bool, error) {
		j, err := framework.Kube.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if j.Status.Failed > 0 {
			t.Fatalf("Job failed: %+v", j.Status)
		}
		return j.Status.Succeeded == 1, fmt.Errorf("status %+v", j.Status)
	})

	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=once"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d Pods of the Job, want 1", len(pods.Items))
	}
	p := &pods.Items[0]
	if c := framework.FindContainer(p.Spec.InitContainers, "proxy"); c == nil || c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Fatalf("the Job's Pod has init containers %v, want the native sidecar proxy injected", framework.ContainerNames(p.Spec.InitContainers))
	}
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod phase %s, want Succeeded", p.Status.Phase)
	}
	if s := framework.InitStatus(p, "proxy"); s == nil || s.State.Terminated == nil {
		t.Errorf("native sidecar status %+v, want stopped after the app container", s)
	}
	if s := framework.ContainerStatus(t, p, "main"); s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
		t.Errorf("main status %+v, want exited 0", s)
	}
}
