package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The local cluster's image registry (hack/local-up.d/05-registry.sh): inplace-registry on the
// host, named registry.inplace.local:5000 in image references, a name that only the nodes'
// containerds resolve (a hosts.toml each). local-up pushes the test images to it, and
// remote/app:v1|v2, which it never imports into a node.

// pullingPod is an app Pod on the node that pulls its image every time it starts a container.
func pullingPod(ns, name, image, node string) *corev1.Pod {
	pod := framework.OnNode(framework.AppPod(ns, name, image), node)
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	return pod
}

// TestRegistryPullOnBothNodes: a Pod with imagePullPolicy Always and an image of the registry that
// the node does not have runs on node 1 and on node 2: each node's containerd pulls it from the
// registry by its name, and has it afterwards under that name, with the image ID the Pod reports.
// The registry's copy of an imported test image runs as well.
func TestRegistryPullOnBothNodes(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	image := reg + "/remote/app:v2"

	// Not on any node (an earlier run on this cluster pulled it: remove it; remote/app is a
	// distinct image ID, so no imported image goes with it).
	for _, n := range nodes {
		if framework.CRIImage(t, ctx, n, image) != nil {
			if err := framework.RemoveCRIImage(ctx, n, image); err != nil {
				t.Fatalf("removing %s from %s: %v", image, n.Name, err)
			}
		}
		if img := framework.CRIImage(t, ctx, n, image); img != nil {
			t.Fatalf("node %s has %s (%s) before any Pod pulled it", n.Name, image, img.Id)
		}
	}

	ns := framework.NewNamespace(t, ctx, "registry")
	// Leave the nodes as they were: the Pods gone, the pulled image removed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), framework.PodTimeout)
		defer cancel()
		_ = framework.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 0, nil
		})
		for _, n := range nodes {
			if err := framework.RemoveCRIImage(ctx, n, image); err != nil {
				t.Logf("removing %s from %s: %v", image, n.Name, err)
			}
		}
	})

	for i, n := range nodes {
		name := fmt.Sprintf("pull-node%d", i+1)
		start := time.Now()
		pod := runPulling(t, ctx, pullingPod(ns, name, image, n.Name))
		if pod.Spec.NodeName != n.Name {
			t.Fatalf("Pod %s ran on %s, want %s", name, pod.Spec.NodeName, n.Name)
		}
		st := framework.ContainerStatus(t, pod, "main")
		img := framework.CRIImage(t, ctx, n, image)
		if img == nil {
			t.Fatalf("node %s runs Pod %s but its containerd has no image %s", n.Name, name, image)
		}
		if !slices.Contains(img.RepoDigests, st.ImageID) || !slices.Contains(img.RepoTags, image) {
			t.Errorf("node %s: Pod image ID %q, CRI image %s digests %v tags %v: want the Pod's image, tagged %s",
				n.Name, st.ImageID, img.Id, img.RepoDigests, img.RepoTags, image)
		}
		if out := framework.MustKubectl(t, ctx, "", "-n", ns, "logs", name); !strings.Contains(out, "app version v2") {
			t.Errorf("Pod %s logs %q, want app version v2", name, out)
		}
		t.Logf("node %s pulled %s (%s) and ran it in %.1fs", n.Name, image, img.Id, time.Since(start).Seconds())
	}

	// The registry's copy of inplace.local/app:v1 (not removed afterwards: it is the imported
	// image under another name), and then the imported image by its own name with pull policy
	// Never on the same node: still usable (the kubelets verify no pull credentials of images
	// on the node, see hack/local-up.sh).
	pod := runPulling(t, ctx, pullingPod(ns, "app-v1", reg+"/app:v1", nodes[0].Name))
	if out := framework.MustKubectl(t, ctx, "", "-n", ns, "logs", pod.Name); !strings.Contains(out, "app version v1") {
		t.Errorf("Pod %s logs %q, want app version v1", pod.Name, out)
	}
	runPulling(t, ctx, framework.OnNode(framework.AppPod(ns, "imported-v1", framework.AppImageV1), nodes[0].Name))
}

// TestRegistryPullMissingTag: a tag the registry does not have leaves the Pod waiting in
// ErrImagePull / ImagePullBackOff with a message that says it was not found.
func TestRegistryPullMissingTag(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx, ns := framework.Start(t, "registry-missing")
	image := reg + "/app:no-such-tag"
	for i, n := range nodes {
		name := fmt.Sprintf("missing-node%d", i+1)
		if _, err := framework.Kube.CoreV1().Pods(ns).Create(ctx, pullingPod(ns, name, image, n.Name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Pod %s: %v", name, err)
		}
		var waiting *corev1.ContainerStateWaiting
		framework.Poll(t, ctx, framework.PodTimeout, "Pod "+name+" failing to pull "+image, func(ctx context.Context) (bool, error) {
			pod, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, s := range pod.Status.ContainerStatuses {
				if s.State.Running != nil || s.State.Terminated != nil {
					return false, fmt.Errorf("container %s started from %s: %+v", s.Name, image, s.State)
				}
				if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") &&
					strings.Contains(w.Message, "not found") {
					waiting = w
					return true, nil
				}
			}
			return false, fmt.Errorf("statuses %+v", pod.Status.ContainerStatuses)
		})
		if !strings.Contains(waiting.Message, image) {
			t.Errorf("node %s: waiting message %q does not name %s", n.Name, waiting.Message, image)
		}
		t.Logf("node %s: %s: %s", n.Name, waiting.Reason, waiting.Message)
		if img := framework.CRIImage(t, ctx, n, image); img != nil {
			t.Errorf("node %s has an image %s (%s)", n.Name, image, img.Id)
		}
	}
}

// runPulling creates the Pod and waits until it runs.
func runPulling(t *testing.T, ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := framework.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return framework.WaitPodRunning(t, ctx, pod.Namespace, pod.Name)
}

// TestRegistryPushYourOwn: an image pushed with `inplace-registry push` under a new name (as the
// README shows) is pulled by the node.
func TestRegistryPushYourOwn(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	vars, err := framework.ReadEnvFile(framework.Repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	// A label of its own makes it another image than the imported inplace.local/app:v3, so
	// removing it afterwards removes nothing else.
	id := utilrand.String(5)
	image := reg + "/e2e/mine-" + id + ":v3"
	out, err := exec.CommandContext(ctx, framework.Repo+"/_output/bin/inplace-registry", "push",
		"-resolve", reg+"="+vars["INPLACE_REGISTRY_ADDR"], "-label", "inplace.dev/e2e="+id,
		framework.Repo+"/_output/images/app-v3.tar", image).CombinedOutput()
	if err != nil {
		t.Fatalf("inplace-registry push: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if err := framework.RemoveCRIImage(context.Background(), nodes[0], image); err != nil {
			t.Logf("removing %s: %v", image, err)
		}
	})
	ns := framework.NewNamespace(t, ctx, "registry-mine")
	pod := runPulling(t, ctx, pullingPod(ns, "mine", image, nodes[0].Name))
	if out := framework.MustKubectl(t, ctx, "", "-n", ns, "logs", pod.Name); !strings.Contains(out, "app version v3") {
		t.Errorf("Pod %s logs %q, want app version v3", pod.Name, out)
	}
	if img := framework.CRIImage(t, ctx, nodes[0], image); img == nil {
		t.Errorf("node %s runs Pod %s but has no image %s", nodes[0].Name, pod.Name, image)
	}
}

// TestRegistrySlowRepository: slow/app:v1 has a layer no node has, and the registry serves the
// blobs of slow/* at 256 KiB/s (hack/local-up.d/05-registry.sh), so a cold pull through the node's
// CRI takes seconds, as a large image's from a distant registry would: what the pre-download
// benchmark relies on. A lower bound only (pacing guarantees it on a loaded machine too).
func TestRegistrySlowRepository(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	node, image := nodes[0], reg+"/slow/app:v1"
	if err := framework.RemoveCRIImage(ctx, node, image); err != nil {
		t.Fatalf("removing %s from %s: %v", image, node.Name, err)
	}
	t.Cleanup(func() { _ = framework.RemoveCRIImage(context.Background(), node, image) })
	images, conn := framework.CRIImageClient(t, node)
	defer conn.Close()
	start := time.Now()
	if _, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		t.Fatalf("CRI PullImage %s on %s: %v", image, node.Name, err)
	}
	took := time.Since(start)
	// 1 MiB of its own at 256 KiB/s: 4 s; allow for the chunking.
	if took < 3500*time.Millisecond {
		t.Errorf("cold pull of %s took %v, want at least 3.5 s (is the registry's -slow on?)", image, took)
	}
	if framework.CRIImage(t, ctx, node, image) == nil {
		t.Errorf("node %s has no %s after the pull", node.Name, image)
	}
	t.Logf("cold pull of %s on %s: %v", image, node.Name, took)
}
