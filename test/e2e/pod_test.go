package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodRunsLocalImage: the node runs a Pod of the locally built image (no registry) —
// artifacts/examples/pod.yaml — and its log shows the image's version.
func TestPodRunsLocalImage(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx, "pod")

	mustKubectl(t, ctx, "", "apply", "-n", ns, "-f", "artifacts/examples/pod.yaml")
	pod := waitPodRunning(t, ctx, ns, "demo")
	if pod.Spec.NodeName == "" || pod.Status.PodIP == "" {
		t.Errorf("running Pod without node or IP: node %q, IP %q", pod.Spec.NodeName, pod.Status.PodIP)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].Image != appImageV1 {
		t.Errorf("container statuses %+v, want one container on %s", pod.Status.ContainerStatuses, appImageV1)
	}

	poll(t, ctx, podTimeout, `log line "app version v1"`, func(ctx context.Context) (bool, error) {
		raw, err := kube.CoreV1().Pods(ns).GetLogs("demo", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if err != nil {
			return false, err
		}
		return strings.Contains(string(raw), "app version v1"), fmt.Errorf("log so far: %q", raw)
	})
	out := mustKubectl(t, ctx, "", "logs", "-n", ns, "demo")
	if !strings.Contains(out, "app version v1") {
		t.Errorf("kubectl logs demo: %q", out)
	}

	if err := kube.CoreV1().Pods(ns).Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
