package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
	"github.com/inplace-dev/inplace/test/manifests"
)

// The Helm chart (charts/inplace) on the real cluster, in place of the installation hack/deploy.sh
// made from artifacts/deploy (INPLACE_E2E_IN_CLUSTER=1 or ha: the chart's etcd.mode embedded or
// cluster, the same shape). The test leaves inplace installed by the chart, with the same
// objects, names and data: the tests after it run against it as against the kustomize one.

// helmRelease is the release the test installs, in the namespace default as OpenKruise's users
// install kruise (the chart's objects go to inplace-system whatever the release's namespace).
const (
	helmRelease          = "inplace"
	helmReleaseNamespace = "default"
)

// helmHome holds helm's cache, configuration and data (no repositories: the chart is local).
var helmHome = filepath.Join(os.TempDir(), "inplace-e2e-helm")

// helmBin builds helm (hack/helm.sh, cached by version) and returns its path.
func helmBin(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.Repo, "hack/helm.sh"))
	cmd.Dir = framework.Repo
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/helm.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// helmCommand runs helm against the local cluster and returns its output (stdout and stderr).
func helmCommand(ctx context.Context, bin string, args ...string) (string, error) {
	cmd, cancel := helmExec(ctx, bin, args...)
	defer cancel()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// helmExec is helm with args against the local cluster, stopped after 6 minutes.
func helmExec(ctx context.Context, bin string, args ...string) (*exec.Cmd, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = framework.Repo
	cmd.Env = append(os.Environ(), "KUBECONFIG="+framework.Kubeconfig, "HELM_CACHE_HOME="+helmHome, "HELM_CONFIG_HOME="+helmHome, "HELM_DATA_HOME="+helmHome)
	return cmd, cancel
}

// helmTemplate renders the chart as `helm template` does and returns the manifests alone
// (stdout; helm's warnings go to stderr and are logged).
func helmTemplate(t *testing.T, ctx context.Context, bin string, args ...string) string {
	t.Helper()
	cmd, cancel := helmExec(ctx, bin, append([]string{"template"}, args...)...)
	defer cancel()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Logf("helm template %s: %s", strings.Join(args, " "), stderr.String())
	}
	if err != nil {
		t.Fatalf("helm template %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// runHelm runs helm and fails the test, with the installation's state, when helm fails.
func runHelm(t *testing.T, ctx context.Context, bin string, args ...string) string {
	t.Helper()
	out, err := helmCommand(ctx, bin, args...)
	if err != nil {
		// One line per t.Log: make's e2e targets keep only the lines that name a _test.go file.
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			t.Logf("helm %s: %s", args[0], l)
		}
		framework.LogInstallation(t, ctx)
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	if args[0] != "template" {
		t.Logf("helm %s:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// helmValuesOfInstallation writes the chart's values that reproduce the running installation:
// its shape, its images (what the harness imported into the node), and the environment the
// local patches give the programs (this cluster has no kube-proxy: they reach kube-apiserver at
// the node's address).
func helmValuesOfInstallation(t *testing.T, ctx context.Context, shape string) string {
	t.Helper()
	values := map[string]any{}
	set := func(v any, path ...string) {
		m := values
		for _, p := range path[:len(path)-1] {
			if m[p] == nil {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		m[path[len(path)-1]] = v
	}
	for _, w := range []struct {
		kind, name, key string
	}{{"deployment", "inplace-apiserver", "apiserver"}, {"deployment", "inplace-controller", "manager"}, {"daemonset", "inplace-daemon", "daemon"}} {
		var spec corev1.PodSpec
		switch w.kind {
		case "deployment":
			d, err := framework.Kube.AppsV1().Deployments(framework.InplaceNamespace).Get(ctx, w.name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the installation's %s: %v", w.name, err)
			}
			spec = d.Spec.Template.Spec
		default:
			d, err := framework.Kube.AppsV1().DaemonSets(framework.InplaceNamespace).Get(ctx, w.name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the installation's %s: %v", w.name, err)
			}
			spec = d.Spec.Template.Spec
		}
		c := spec.Containers[0]
		repository, tag := splitImage(t, c.Image)
		set(repository, "image", "repository")
		set(tag, "image", "tag")
		var env []map[string]string
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "KUBERNETES_SERVICE_") {
				env = append(env, map[string]string{"name": e.Name, "value": e.Value})
			}
		}
		if len(env) > 0 {
			set(env, w.key, "extraEnv")
		}
	}
	set("embedded", "etcd", "mode")
	if shape == "ha" {
		set("cluster", "etcd", "mode")
		sts, err := framework.Kube.AppsV1().StatefulSets(framework.InplaceNamespace).Get(ctx, "inplace-etcd", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the installation's etcd: %v", err)
		}
		repository, tag := splitImage(t, sts.Spec.Template.Spec.Containers[0].Image)
		set(map[string]any{"repository": repository, "tag": tag}, "etcd", "cluster", "image")
	}
	data, err := json.Marshal(values) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("values: %s", data)
	return path
}

// splitImage splits registry/name:tag into the chart's repository and tag.
func splitImage(t *testing.T, ref string) (string, string) {
	t.Helper()
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") || strings.Contains(ref, "@") {
		t.Fatalf("image %q: want registry/name:tag", ref)
	}
	return ref[:i], ref[i+1:]
}

// helmObjects renders the chart with the values and returns its objects' kinds, namespaces and
// names.
func helmObjects(t *testing.T, ctx context.Context, bin, values string) []*unstructured.Unstructured {
	t.Helper()
	out := runHelm(t, ctx, bin, "template", helmRelease, "charts/inplace", "--namespace", helmReleaseNamespace, "-f", values)
	objects, err := manifests.Decode(out)
	if err != nil {
		t.Fatalf("helm template's output: %v", err)
	}
	return objects
}

// removeKustomizeInstallation deletes what hack/deploy.sh installed, as a user moving to the
// chart would, but the Namespace and the etcd data's claims; the two the chart owns and keeps
// (the Namespace, the embedded etcd's claim) are handed to the release by helm's ownership
// annotations.
func removeKustomizeInstallation(t *testing.T, ctx context.Context, objects []*unstructured.Unstructured) {
	t.Helper()
	var deletes []string
	for _, obj := range objects {
		switch obj.GetKind() {
		case "Namespace", "PersistentVolumeClaim":
			args := []string{"--overwrite", strings.ToLower(obj.GetKind()), obj.GetName()}
			if ns := obj.GetNamespace(); ns != "" {
				args = append(args, "-n", ns)
			}
			framework.MustKubectl(t, ctx, "", append([]string{"label"}, append(args, "app.kubernetes.io/managed-by=Helm")...)...)
			framework.MustKubectl(t, ctx, "", append([]string{"annotate"}, append(args, "meta.helm.sh/release-name="+helmRelease,
				"meta.helm.sh/release-namespace="+helmReleaseNamespace)...)...)
		default:
			ref := obj.GetKind() + "/" + obj.GetName()
			if ns := obj.GetNamespace(); ns != "" {
				framework.MustKubectl(t, ctx, "", "delete", "--ignore-not-found", "--wait=true", "-n", ns, ref)
			} else {
				deletes = append(deletes, ref)
			}
		}
	}
	framework.MustKubectl(t, ctx, "", append([]string{"delete", "--ignore-not-found", "--wait=true"}, deletes...)...)
}

// waitInplacePodsGone waits until no Pod of an inplace installation is left in its namespace. The
// Pods of a deleted installation stop within their grace periods, after their owners are gone. A
// StatefulSet installed again meanwhile cannot create a member while the old Pod of its name is
// there, and kube-controller-manager does not bring it back when that Pod goes (the Pod's owner
// was the old StatefulSet): it retries on its own backoff, which after the failures of those
// seconds can be minutes (seen: helm install --wait timing out after 5 min, the etcd StatefulSet
// at 2/3). On a loaded machine the old etcd members took 40 s and more to be deleted.
func waitInplacePodsGone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	framework.Poll(t, ctx, 3*time.Minute, what, func(ctx context.Context) (bool, error) {
		left, err := framework.Kube.CoreV1().Pods(framework.InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=inplace"})
		if err != nil {
			return false, err
		}
		var names []string
		for _, p := range left.Items {
			names = append(names, p.Name)
		}
		return len(names) == 0, fmt.Errorf("still there: %v", names)
	})
}

// waitInplaceServes waits for every APIService of apps.kruise.io to be Available.
func waitInplaceServes(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	framework.Poll(t, ctx, 3*time.Minute, what+": the APIServices Available", framework.APIServiceAvailable)
}

// TestHelmInstallUninstall: the chart takes over from the kustomize installation and keeps its
// data; `helm install` brings every APIService Available; `helm uninstall` removes inplace but
// no user Pod and no stored object (the Namespace and the etcd data's claims stay); `helm install`
// again serves the same objects, whose Pods were never touched.
func TestHelmInstallUninstall(t *testing.T) {
	shape := framework.InClusterShape()
	if shape == "" {
		t.Skip("needs inplace installed in the cluster (INPLACE_E2E_IN_CLUSTER=1 or ha): the chart replaces that installation")
	}
	ctx := framework.Context(t)
	bin := helmBin(t)
	runHelm(t, ctx, bin, "lint", "--strict", "charts/inplace")

	// A user's workload, stored in the installation's etcd, its Pods in the cluster.
	ns := framework.NewNamespace(t, ctx, "helm")
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := framework.WaitCloneSetReady(t, ctx, cs, 2)

	values := helmValuesOfInstallation(t, ctx, shape)
	objects := helmObjects(t, ctx, bin, values)
	removeKustomizeInstallation(t, ctx, objects)
	if ok, _ := framework.APIServiceAvailable(ctx); ok {
		t.Fatalf("the APIServices are still Available after the kustomize installation was removed")
	}
	waitInplacePodsGone(t, ctx, "the kustomize installation's Pods to be gone")

	serves := func(what string) {
		waitInplaceServes(t, ctx, what)
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: the CloneSet stored before: %v", what, err)
		}
		if got.UID != cs.UID {
			t.Errorf("%s: CloneSet %s has UID %s, was %s: not the stored object", what, cs.Name, got.UID, cs.UID)
		}
		framework.CheckSamePods(t, before, framework.WaitCloneSetReady(t, ctx, cs, 2))
	}
	runHelm(t, ctx, bin, "install", helmRelease, "charts/inplace", "--namespace", helmReleaseNamespace, "-f", values, "--wait", "--timeout", "5m")
	serves("helm install over the kustomize installation's data")

	runHelm(t, ctx, bin, "uninstall", helmRelease, "--namespace", helmReleaseNamespace, "--wait", "--timeout", "2m")
	for _, name := range framework.APIServiceNames {
		if _, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after helm uninstall, APIService %s: %v, want it gone", name, err)
		}
	}
	for _, w := range []string{"inplace-apiserver", "inplace-controller"} {
		if _, err := framework.Kube.AppsV1().Deployments(framework.InplaceNamespace).Get(ctx, w, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after helm uninstall, Deployment %s: %v, want it gone", w, err)
		}
	}
	if _, err := framework.Kube.CoreV1().Namespaces().Get(ctx, framework.InplaceNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("after helm uninstall, Namespace %s: %v, want it kept", framework.InplaceNamespace, err)
	}
	claims, err := framework.Kube.CoreV1().PersistentVolumeClaims(framework.InplaceNamespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(claims.Items) == 0 {
		t.Errorf("after helm uninstall, the etcd data's claims: %v, %v; want them kept", claims, err)
	}
	// With inplace gone the Pods stay: nothing may delete them (the garbage collector cannot
	// resolve an owner whose API is not served). Read now, and again after the reinstall (same
	// names, UIDs and restart counts: nothing touched them in between).
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + cs.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(before) {
		t.Errorf("after helm uninstall: %d Pods of the CloneSet, want the %d of before", len(pods.Items), len(before))
	}
	for _, p := range pods.Items {
		if b := before[p.Name]; b == nil || b.UID != p.UID || p.DeletionTimestamp != nil {
			t.Errorf("after helm uninstall: Pod %s (deleting: %v) is not one of before", p.Name, p.DeletionTimestamp != nil)
		}
	}

	waitInplacePodsGone(t, ctx, "the uninstalled release's Pods to be gone")
	// Installed again the way a migration from OpenKruise installs it (docs/migration.md): in standby,
	// then the APIServices from `helm template` (what `kubectl inplace migrate --apiservices`
	// registers), then out of standby.
	installStandbyThenTakeOver(t, ctx, bin, values)
	serves("helm install --set standby=true after helm uninstall, then helm upgrade --set standby=false")
	for name, p := range before {
		now, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Pod %s: %v", name, err)
			continue
		}
		for i, s := range now.Status.ContainerStatuses {
			if s.RestartCount != p.Status.ContainerStatuses[i].RestartCount {
				t.Errorf("Pod %s: container %s restarted (%d -> %d)", name, s.Name, p.Status.ContainerStatuses[i].RestartCount, s.RestartCount)
			}
		}
	}
}

// installStandbyThenTakeOver installs the chart with standby=true and checks that only
// inplace-apiserver runs: no APIService, Pod webhook or inplace-daemon, no inplace-controller
// replica. It registers the APIServices that `helm template --dry-run=server --show-only
// templates/apiservice.yaml --set standby=false` renders (the migration's --apiservices file: the
// installed CA, helm's ownership annotations) and waits until they are Available, then runs `helm
// upgrade --reuse-values --set standby=false`, which must take those APIServices over and start
// the rest.
func installStandbyThenTakeOver(t *testing.T, ctx context.Context, bin, values string) {
	t.Helper()
	runHelm(t, ctx, bin, "install", helmRelease, "charts/inplace", "--namespace", helmReleaseNamespace, "-f", values,
		"--set", "standby=true", "--wait", "--timeout", "5m")
	for _, name := range framework.APIServiceNames {
		if _, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("standby: APIService %s: %v, want none (OpenKruise's CRDs hold it)", name, err)
		}
	}
	if _, err := framework.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "inplace-pod-webhook", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("standby: the Pod webhook: %v, want none (OpenKruise's injects the Pods)", err)
	}
	if _, err := framework.Kube.AppsV1().DaemonSets(framework.InplaceNamespace).Get(ctx, "inplace-daemon", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("standby: DaemonSet inplace-daemon: %v, want none (kruise-daemon works)", err)
	}
	replicas := func(name string) int32 {
		d, err := framework.Kube.AppsV1().Deployments(framework.InplaceNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Deployment %s: %v", name, err)
		}
		return d.Status.ReadyReplicas
	}
	if n := replicas("inplace-controller"); n != 0 {
		t.Errorf("standby: %d inplace-controller replicas ready, want 0", n)
	}
	if n := replicas("inplace-apiserver"); n == 0 {
		t.Errorf("standby: no inplace-apiserver replica ready (helm --wait returned)")
	}

	manifest := helmTemplate(t, ctx, bin, helmRelease, "charts/inplace", "--namespace", helmReleaseNamespace, "-f", values,
		"--set", "standby=false", "--dry-run=server", "--show-only", "templates/apiservice.yaml")
	framework.MustKubectl(t, ctx, manifest, "create", "-f", "-")
	waitInplaceServes(t, ctx, "standby, with the APIServices of helm template")

	runHelm(t, ctx, bin, "upgrade", helmRelease, "charts/inplace", "--namespace", helmReleaseNamespace,
		"--reuse-values", "--set", "standby=false", "--wait", "--timeout", "5m")
	if n := replicas("inplace-controller"); n == 0 {
		t.Errorf("out of standby: no inplace-controller replica ready")
	}
	if _, err := framework.Kube.AppsV1().DaemonSets(framework.InplaceNamespace).Get(ctx, "inplace-daemon", metav1.GetOptions{}); err != nil {
		t.Errorf("out of standby: DaemonSet inplace-daemon: %v", err)
	}
	if _, err := framework.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "inplace-pod-webhook", metav1.GetOptions{}); err != nil {
		t.Errorf("out of standby: the Pod webhook: %v", err)
	}
	for _, name := range framework.APIServiceNames {
		s, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("out of standby: APIService %s: %v", name, err)
		}
		if s.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" || s.GetAnnotations()["meta.helm.sh/release-name"] != helmRelease {
			t.Errorf("out of standby: APIService %s labels %v annotations %v, want the release's", name, s.GetLabels(), s.GetAnnotations())
		}
	}
	// The release owns them now: helm's manifest lists them.
	if out, err := helmCommand(ctx, bin, "get", "manifest", helmRelease, "--namespace", helmReleaseNamespace); err != nil || !strings.Contains(out, "name: "+framework.APIServiceName) {
		t.Errorf("helm get manifest: no APIService %s (%v)", framework.APIServiceName, err)
	}
}

// TestHelmUpgrade: `helm upgrade` to a new image rolls inplace's programs while a client writes
// CloneSets through kube-apiserver: the two inplace-apiservers are replaced one at a time, each
// stopping one serving until its endpoint has left the Service, so no write fails and every
// acknowledged write is stored. The new image is the running one under a new tag (a new reference
// in the Pod templates, as a release's upgrade is); the tests after this one run on it.
func TestHelmUpgrade(t *testing.T) {
	requireHA(t)
	ctx := framework.Context(t)
	bin := helmBin(t)
	if _, err := helmCommand(ctx, bin, "status", helmRelease, "--namespace", helmReleaseNamespace); err != nil {
		t.Fatalf("needs the release %s that TestHelmInstallUninstall installs (run them together): %v", helmRelease, err)
	}
	old := workloadImages(t, ctx)
	ref := old["deployment/inplace-apiserver"]
	repository, tag := splitImage(t, ref)
	next := tag + "-next"
	_, nodes := framework.RegistryNodes(t)
	for _, n := range nodes {
		out, err := exec.CommandContext(ctx, "ctr", "--address", strings.TrimPrefix(n.Endpoint, "unix://"), "-n", "k8s.io",
			"images", "tag", "--force", ref, repository+":"+next).CombinedOutput()
		if err != nil {
			t.Fatalf("tagging %s as %s:%s on node %s: %v\n%s", ref, repository, next, n.Name, err, out)
		}
	}
	before, err := framework.Kube.CoreV1().Pods(framework.InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=inplace-apiserver"})
	if err != nil {
		t.Fatal(err)
	}

	ns := framework.NewNamespace(t, ctx, "helm-upgrade")
	writer := startAckedWriter(t, ctx, ns)
	avail := recordAvailability(ctx)
	defer avail.stop()
	// Some writes before the upgrade starts: the writer is known to work.
	framework.Poll(t, ctx, time.Minute, "the writer's first writes", func(context.Context) (bool, error) {
		return writer.acksSince(time.Time{}) >= 5, nil
	})
	started := time.Now()
	runHelm(t, ctx, bin, "upgrade", helmRelease, "charts/inplace", "--namespace", helmReleaseNamespace,
		"--reuse-values", "--set", "image.tag="+next, "--wait", "--timeout", "3m")
	took := time.Since(started)
	for _, p := range before.Items {
		framework.Poll(t, ctx, time.Minute, "the replaced inplace-apiserver Pod "+p.Name+" to go", func(ctx context.Context) (bool, error) {
			_, err := framework.Kube.CoreV1().Pods(framework.InplaceNamespace).Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	}
	// A few writes after the last old replica is gone: the new ones serve them.
	gone := time.Now()
	framework.Poll(t, ctx, time.Minute, "writes after the upgrade", func(context.Context) (bool, error) {
		return writer.acksSince(gone) >= 5, nil
	})
	avail.stop()
	writer.stopAndCheck(t, ctx)
	for w, image := range workloadImages(t, ctx) {
		if want := repository + ":" + next; image != want {
			t.Errorf("after helm upgrade, %s runs %s, want %s", w, image, want)
		}
	}
	_, errs := writer.snapshot()
	t.Logf("helm upgrade %s -> %s: %.1fs; APIService not Available for at most %.1fs (%d of %d samples); %d writes acknowledged, %d failed",
		tag, next, took.Seconds(), avail.longest.Seconds(), avail.down, avail.samples, writer.acksSince(time.Time{}), len(errs))
	for _, e := range errs {
		t.Errorf("a write failed during helm upgrade (%s): %v", e.class, e.err)
	}
}

// workloadImages returns the image of each of inplace's workloads, by kind/name.
func workloadImages(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	images := map[string]string{}
	for _, name := range []string{"inplace-apiserver", "inplace-controller"} {
		d, err := framework.Kube.AppsV1().Deployments(framework.InplaceNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Deployment %s: %v", name, err)
		}
		images["deployment/"+name] = d.Spec.Template.Spec.Containers[0].Image
	}
	d, err := framework.Kube.AppsV1().DaemonSets(framework.InplaceNamespace).Get(ctx, "inplace-daemon", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("DaemonSet inplace-daemon: %v", err)
	}
	images["daemonset/inplace-daemon"] = d.Spec.Template.Spec.Containers[0].Image
	return images
}
