package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The local cluster's image registry (hack/local-up.d/05-registry.sh): inplace-registry on the
// host, named registry.inplace.local:5000 in image references, a name that only the nodes'
// containerds resolve (a hosts.toml each). local-up pushes the test images to it, and
// remote/app:v1|v2, which it never imports into a node.

// localNode is a node of the local cluster and its container runtime's CRI endpoint.
type localNode struct{ name, endpoint string }

// registryNodes returns the registry's name and the nodes of the local cluster: both, or node 1
// alone with inplace installed in the cluster.
func registryNodes(t *testing.T) (string, []localNode) {
	t.Helper()
	vars, err := readEnvFile(repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	reg := vars["INPLACE_REGISTRY"]
	if reg == "" {
		t.Fatal("_output/local/env has no INPLACE_REGISTRY: the local cluster runs no registry (hack/local-up.d/05-registry.sh)")
	}
	nodes := []localNode{{vars["NODE_NAME"], vars["CONTAINER_RUNTIME_ENDPOINT"]}}
	if node2Name == "" && inClusterMode() {
		return reg, nodes // inplace in the cluster: one node (see secondNode)
	}
	return reg, append(nodes, localNode{secondNode(t), vars["NODE2_RUNTIME_ENDPOINT"]})
}

// criImage is the node's image of that reference, nil when it has none (CRI ImageStatus).
func criImage(t *testing.T, ctx context.Context, node localNode, ref string) *runtimeapi.Image {
	t.Helper()
	images, conn := criImageClient(t, node)
	defer conn.Close()
	resp, err := images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("CRI ImageStatus %s on %s: %v", ref, node.name, err)
	}
	return resp.GetImage()
}

// removeCRIImage removes the node's image of that reference. containerd's CRI removes every
// reference of the same image ID, so only images no other test uses by another name may go.
func removeCRIImage(ctx context.Context, node localNode, ref string) error {
	conn, err := grpc.NewClient(node.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = runtimeapi.NewImageServiceClient(conn).RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	return err
}

func criImageClient(t *testing.T, node localNode) (runtimeapi.ImageServiceClient, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.NewClient(node.endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("connecting to the CRI runtime of %s: %v", node.name, err)
	}
	return runtimeapi.NewImageServiceClient(conn), conn
}

// pullingPod is an app Pod on the node that pulls its image every time it starts a container.
func pullingPod(ns, name, image, node string) *corev1.Pod {
	pod := onNode(appPod(ns, name, image), node)
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	return pod
}

// TestRegistryPullOnBothNodes: a Pod with imagePullPolicy Always and an image of the registry that
// the node does not have runs on node 1 and on node 2: each node's containerd pulls it from the
// registry by its name, and has it afterwards under that name, with the image ID the Pod reports.
// The registry's copy of an imported test image runs as well.
func TestRegistryPullOnBothNodes(t *testing.T) {
	reg, nodes := registryNodes(t)
	ctx := testContext(t)
	image := reg + "/remote/app:v2"

	// Not on any node (an earlier run on this cluster pulled it: remove it; remote/app is a
	// distinct image ID, so no imported image goes with it).
	for _, n := range nodes {
		if criImage(t, ctx, n, image) != nil {
			if err := removeCRIImage(ctx, n, image); err != nil {
				t.Fatalf("removing %s from %s: %v", image, n.name, err)
			}
		}
		if img := criImage(t, ctx, n, image); img != nil {
			t.Fatalf("node %s has %s (%s) before any Pod pulled it", n.name, image, img.Id)
		}
	}

	ns := newNamespace(t, ctx, "registry")
	// Leave the nodes as they were: the Pods gone, the pulled image removed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), podTimeout)
		defer cancel()
		_ = kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 0, nil
		})
		for _, n := range nodes {
			if err := removeCRIImage(ctx, n, image); err != nil {
				t.Logf("removing %s from %s: %v", image, n.name, err)
			}
		}
	})

	for i, n := range nodes {
		name := fmt.Sprintf("pull-node%d", i+1)
		start := time.Now()
		pod := runPulling(t, ctx, pullingPod(ns, name, image, n.name))
		if pod.Spec.NodeName != n.name {
			t.Fatalf("Pod %s ran on %s, want %s", name, pod.Spec.NodeName, n.name)
		}
		st := containerStatus(t, pod, "main")
		img := criImage(t, ctx, n, image)
		if img == nil {
			t.Fatalf("node %s runs Pod %s but its containerd has no image %s", n.name, name, image)
		}
		if !slices.Contains(img.RepoDigests, st.ImageID) || !slices.Contains(img.RepoTags, image) {
			t.Errorf("node %s: Pod image ID %q, CRI image %s digests %v tags %v: want the Pod's image, tagged %s",
				n.name, st.ImageID, img.Id, img.RepoDigests, img.RepoTags, image)
		}
		if out := mustKubectl(t, ctx, "", "-n", ns, "logs", name); !strings.Contains(out, "app version v2") {
			t.Errorf("Pod %s logs %q, want app version v2", name, out)
		}
		t.Logf("node %s pulled %s (%s) and ran it in %.1fs", n.name, image, img.Id, time.Since(start).Seconds())
	}

	// The registry's copy of inplace.local/app:v1 (not removed afterwards: it is the imported
	// image under another name), and then the imported image by its own name with pull policy
	// Never on the same node: still usable (the kubelets verify no pull credentials of images
	// on the node, see hack/local-up.sh).
	pod := runPulling(t, ctx, pullingPod(ns, "app-v1", reg+"/app:v1", nodes[0].name))
	if out := mustKubectl(t, ctx, "", "-n", ns, "logs", pod.Name); !strings.Contains(out, "app version v1") {
		t.Errorf("Pod %s logs %q, want app version v1", pod.Name, out)
	}
	runPulling(t, ctx, onNode(appPod(ns, "imported-v1", appImageV1), nodes[0].name))
}

// TestRegistryPullMissingTag: a tag the registry does not have leaves the Pod waiting in
// ErrImagePull / ImagePullBackOff with a message that says it was not found.
func TestRegistryPullMissingTag(t *testing.T) {
	reg, nodes := registryNodes(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "registry-missing")
	image := reg + "/app:no-such-tag"
	for i, n := range nodes {
		name := fmt.Sprintf("missing-node%d", i+1)
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pullingPod(ns, name, image, n.name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Pod %s: %v", name, err)
		}
		var waiting *corev1.ContainerStateWaiting
		poll(t, ctx, podTimeout, "Pod "+name+" failing to pull "+image, func(ctx context.Context) (bool, error) {
			pod, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
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
			t.Errorf("node %s: waiting message %q does not name %s", n.name, waiting.Message, image)
		}
		t.Logf("node %s: %s: %s", n.name, waiting.Reason, waiting.Message)
		if img := criImage(t, ctx, n, image); img != nil {
			t.Errorf("node %s has an image %s (%s)", n.name, image, img.Id)
		}
	}
}

// runPulling creates the Pod and waits until it runs.
func runPulling(t *testing.T, ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return waitPodRunning(t, ctx, pod.Namespace, pod.Name)
}

// TestRegistryPushYourOwn: an image pushed with `inplace-registry push` under a new name (as the
// README shows) is pulled by the node.
func TestRegistryPushYourOwn(t *testing.T) {
	reg, nodes := registryNodes(t)
	ctx := testContext(t)
	vars, err := readEnvFile(repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	// A label of its own makes it another image than the imported inplace.local/app:v3, so
	// removing it afterwards removes nothing else.
	id := utilrand.String(5)
	image := reg + "/e2e/mine-" + id + ":v3"
	out, err := exec.CommandContext(ctx, repo+"/_output/bin/inplace-registry", "push",
		"-resolve", reg+"="+vars["INPLACE_REGISTRY_ADDR"], "-label", "inplace.dev/e2e="+id,
		repo+"/_output/images/app-v3.tar", image).CombinedOutput()
	if err != nil {
		t.Fatalf("inplace-registry push: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if err := removeCRIImage(context.Background(), nodes[0], image); err != nil {
			t.Logf("removing %s: %v", image, err)
		}
	})
	ns := newNamespace(t, ctx, "registry-mine")
	pod := runPulling(t, ctx, pullingPod(ns, "mine", image, nodes[0].name))
	if out := mustKubectl(t, ctx, "", "-n", ns, "logs", pod.Name); !strings.Contains(out, "app version v3") {
		t.Errorf("Pod %s logs %q, want app version v3", pod.Name, out)
	}
	if img := criImage(t, ctx, nodes[0], image); img == nil {
		t.Errorf("node %s runs Pod %s but has no image %s", nodes[0].name, pod.Name, image)
	}
}

// TestRegistrySlowRepository: slow/app:v1 has a layer no node has, and the registry serves the
// blobs of slow/* at 256 KiB/s (hack/local-up.d/05-registry.sh), so a cold pull through the node's
// CRI takes seconds, as a large image's from a distant registry would: what the pre-download
// benchmark relies on. A lower bound only (pacing guarantees it on a loaded machine too).
func TestRegistrySlowRepository(t *testing.T) {
	reg, nodes := registryNodes(t)
	ctx := testContext(t)
	node, image := nodes[0], reg+"/slow/app:v1"
	if err := removeCRIImage(ctx, node, image); err != nil {
		t.Fatalf("removing %s from %s: %v", image, node.name, err)
	}
	t.Cleanup(func() { _ = removeCRIImage(context.Background(), node, image) })
	images, conn := criImageClient(t, node)
	defer conn.Close()
	start := time.Now()
	if _, err := images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		t.Fatalf("CRI PullImage %s on %s: %v", image, node.name, err)
	}
	took := time.Since(start)
	// 1 MiB of its own at 256 KiB/s: 4 s; allow for the chunking.
	if took < 3500*time.Millisecond {
		t.Errorf("cold pull of %s took %v, want at least 3.5 s (is the registry's -slow on?)", image, took)
	}
	if criImage(t, ctx, node, image) == nil {
		t.Errorf("node %s has no %s after the pull", node.name, image)
	}
	t.Logf("cold pull of %s on %s: %v", image, node.name, took)
}
