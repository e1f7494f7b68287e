package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestPodRunsLocalImage: the node runs a Pod of the locally built image (no registry) —
// artifacts/examples/pod.yaml — and its log shows the image's version.
func TestPodRunsLocalImage(t *testing.T) {
	ctx, ns := framework.Start(t, "pod")

	framework.MustKubectl(t, ctx, "", "apply", "-n", ns, "-f", "artifacts/examples/pod.yaml")
	pod := framework.WaitPodRunning(t, ctx, ns, "demo")
	if pod.Spec.NodeName == "" || pod.Status.PodIP == "" {
		t.Errorf("running Pod without node or IP: node %q, IP %q", pod.Spec.NodeName, pod.Status.PodIP)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].Image != framework.AppImageV1 {
		t.Errorf("container statuses %+v, want one container on %s", pod.Status.ContainerStatuses, framework.AppImageV1)
	}

	framework.Poll(t, ctx, framework.PodTimeout, `log line "app version v1"`, func(ctx context.Context) (bool, error) {
		raw, err := framework.Kube.CoreV1().Pods(ns).GetLogs("demo", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if err != nil {
			return false, err
		}
		return strings.Contains(string(raw), "app version v1"), fmt.Errorf("log so far: %q", raw)
	})
	out := framework.MustKubectl(t, ctx, "", "logs", "-n", ns, "demo")
	if !strings.Contains(out, "app version v1") {
		t.Errorf("kubectl logs demo: %q", out)
	}

	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
