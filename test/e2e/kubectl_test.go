package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestKubectlCloneSets: kubectl get and server-side apply of CloneSets through kube-apiserver's
// aggregator, with inplace-apiserver's table columns.
func TestKubectlCloneSets(t *testing.T) {
	ctx, ns := framework.Start(t, "kubectl")

	out, stderr, err := framework.Kubectl(ctx, "", "get", "clonesets", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	if out != "" || !strings.Contains(stderr, "No resources found") {
		t.Errorf("kubectl get clonesets in an empty namespace: stdout %q, stderr %q", out, stderr)
	}

	out = framework.MustKubectl(t, ctx, "", "apply", "--server-side", "-n", ns, "-f", "artifacts/examples/cloneset.yaml")
	if !strings.Contains(out, "cloneset.apps.kruise.io/sample serverside-applied") {
		t.Errorf("kubectl apply --server-side: %q", out)
	}

	lines := framework.TableLines(framework.MustKubectl(t, ctx, "", "get", "clonesets", "-n", ns))
	wantHeader := []string{"NAME", "DESIRED", "UPDATED", "UPDATED_READY", "READY", "TOTAL", "AGE"}
	if len(lines) != 2 || !slices.Equal(lines[0], wantHeader) {
		t.Fatalf("kubectl get clonesets: got %q, want header %v and one row", lines, wantHeader)
	}
	if row := lines[1]; len(row) != len(wantHeader) || row[0] != "sample" || row[1] != "3" {
		t.Errorf("kubectl get clonesets: row %q, want sample with 3 desired", row)
	}

	lines = framework.TableLines(framework.MustKubectl(t, ctx, "", "get", "clone", "sample", "-n", ns, "-o", "wide"))
	if len(lines) != 2 {
		t.Fatalf("kubectl get clone sample -o wide: %q", lines)
	}
	for _, col := range []string{"CONTAINERS", "IMAGES", "SELECTOR"} {
		if !slices.Contains(lines[0], col) {
			t.Errorf("kubectl get -o wide: header %q lacks %s", lines[0], col)
		}
	}
	if !slices.Contains(lines[1], "main") || !slices.Contains(lines[1], framework.AppImageV1) {
		t.Errorf("kubectl get -o wide: row %q lacks container main and image %s", lines[1], framework.AppImageV1)
	}

	// The object as a typed client sees it, owned by kubectl's Apply.
	cs, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "sample", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Spec.Replicas == nil || *cs.Spec.Replicas != 3 {
		t.Errorf("spec.replicas %v, want 3", cs.Spec.Replicas)
	}
	if !slices.ContainsFunc(cs.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == "kubectl" && m.Operation == metav1.ManagedFieldsOperationApply
	}) {
		t.Errorf("no managedFields entry of kubectl's server-side apply: %+v", cs.ManagedFields)
	}

	// A second apply with a change updates the same object.
	manifest, err := os.ReadFile(filepath.Join(framework.Repo, "artifacts/examples/cloneset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(manifest), "replicas: 3", "replicas: 5", 1)
	out = framework.MustKubectl(t, ctx, changed, "apply", "--server-side", "-n", ns, "-f", "-")
	if !strings.Contains(out, "serverside-applied") {
		t.Errorf("second apply: %q", out)
	}
	again, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "sample", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.UID != cs.UID || again.Spec.Replicas == nil || *again.Spec.Replicas != 5 {
		t.Errorf("after the second apply: uid %s (was %s), replicas %v, want the same object with 5", again.UID, cs.UID, again.Spec.Replicas)
	}

	// The scale subresource, the way kubectl scale uses it.
	framework.MustKubectl(t, ctx, "", "scale", "clone/sample", "-n", ns, "--replicas=2")
	out = framework.MustKubectl(t, ctx, "", "get", "clone", "sample", "-n", ns, "-o", "jsonpath={.spec.replicas}")
	if out != "2" {
		t.Errorf("after kubectl scale --replicas=2: spec.replicas %q", out)
	}

	framework.MustKubectl(t, ctx, "", "delete", "-n", ns, "-f", "artifacts/examples/cloneset.yaml")
	if out, stderr, _ := framework.Kubectl(ctx, "", "get", "clonesets", "-n", ns); out != "" {
		t.Errorf("after delete: %q %q", out, stderr)
	}
}

// TestKubectlPodSubresources: `kubectl create --raw` reaches the Pod subresources of
// apps.kruise.io (and sidecarsets/inject) through the aggregator.
func TestKubectlPodSubresources(t *testing.T) {
	ctx, ns := framework.Start(t, "raw")
	framework.RunPod(t, ctx, ns, "target")
	framework.MustKubectl(t, ctx, "", "apply", "--server-side", "-f", "artifacts/examples/sidecarset.yaml")
	t.Cleanup(func() {
		_, _, _ = framework.Kubectl(context.Background(), "", "delete", "--ignore-not-found", "-f", "artifacts/examples/sidecarset.yaml")
	})
	podBody := filepath.Join(t.TempDir(), "pod.json")
	if err := os.WriteFile(podBody, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"app":"sample"}},`+
		`"spec":{"containers":[{"name":"main","image":"inplace.local/app:v1"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ name, path, body string }{
		{"pods/inplaceupdate", "/apis/apps.kruise.io/v1alpha1/namespaces/" + ns + "/pods/target/inplaceupdate", "artifacts/examples/inplaceupdate.json"},
		{"pods/recreate", "/apis/apps.kruise.io/v1alpha1/namespaces/" + ns + "/pods/target/recreate", "artifacts/examples/recreate.json"},
		{"sidecarsets/inject", "/apis/apps.kruise.io/v1alpha1/sidecarsets/log-agent/inject", podBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, err := framework.Kubectl(ctx, "", "create", "--raw", c.path, "-f", c.body)
			switch {
			case err == nil:
				// Implemented: the answer is an object of the group.
				t.Logf("served: %s", out)
			case strings.Contains(stderr, "not implemented"):
				// Reached inplace-apiserver's stub (503) through the aggregator.
				t.Logf("reached the server: %s", strings.TrimSpace(stderr))
			default:
				t.Errorf("kubectl create --raw %s: %v", c.path, err)
			}
		})
	}
}
