package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inplace-dev/inplace/test/e2e/framework"
	"github.com/inplace-dev/inplace/test/manifests"
)

// TestDeployManifests: the kustomize base artifacts/deploy renders with kubectl's kustomize,
// holds every piece of an installation, and the real cluster's API accepts all of it
// (server-side apply, dry run: validation, defaulting and admission, nothing stored).
func TestDeployManifests(t *testing.T) {
	ctx := framework.Context(t)
	rendered, objects := renderManifests(t, ctx, "artifacts/deploy")

	var got []string
	for _, obj := range objects {
		id := obj.GetKind() + " " + obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			id = obj.GetKind() + " " + ns + "/" + obj.GetName()
		}
		got = append(got, id)
		if obj.GetLabels()["app.kubernetes.io/part-of"] != "inplace" {
			t.Errorf("%s lacks the label app.kubernetes.io/part-of=inplace", id)
		}
	}
	for _, want := range []string{
		"Namespace inplace-system",
		"ServiceAccount inplace-system/inplace-apiserver",
		"ServiceAccount inplace-system/inplace-controller",
		"ServiceAccount inplace-system/inplace-daemon",
		"ClusterRoleBinding inplace-apiserver:system:auth-delegator",
		"RoleBinding kube-system/inplace-apiserver:extension-apiserver-authentication-reader",
		"ClusterRole inplace:apiserver",
		"ClusterRoleBinding inplace:apiserver",
		"ClusterRole inplace:edit",
		"ClusterRole inplace:view",
		"Service inplace-system/inplace-apiserver",
		"APIService " + framework.APIServiceName,
		"APIService " + framework.BetaAPIServiceName,
		"APIService " + framework.PolicyAPIServiceName,
		"APIService " + framework.PolicyBetaAPIServiceName,
		"Deployment inplace-system/inplace-apiserver",
		"PersistentVolumeClaim inplace-system/inplace-apiserver-data",
		"ClusterRole inplace:controller",
		"ClusterRoleBinding inplace:controller",
		"Role inplace-system/inplace:controller:leader-election",
		"RoleBinding inplace-system/inplace:controller:leader-election",
		"Deployment inplace-system/inplace-controller",
		"ClusterRole inplace:daemon",
		"ClusterRoleBinding inplace:daemon",
		"DaemonSet inplace-system/inplace-daemon",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("kubectl kustomize artifacts/deploy lacks %s; it has:\n  %s", want, strings.Join(got, "\n  "))
		}
	}

	// The namespaced objects need their Namespace to exist even in a dry run; local-up installed
	// this very base (through its overlay), so it does.
	if _, err := framework.Kube.CoreV1().Namespaces().Get(ctx, framework.InplaceNamespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s (created by %s): %v", framework.InplaceNamespace, framework.ApiserverHook, err)
	}
	if lines := dryRunApply(t, ctx, rendered); len(lines) != len(got) {
		t.Errorf("dry-run apply: %d lines for %d objects:\n%s", len(lines), len(got), strings.Join(lines, "\n"))
	}
}

// TestDeployCertManagerOverlay: artifacts/deploy/cert-manager renders the whole base plus the
// Certificate that fills the Secret inplace-apiserver mounts, for the name the aggregator checks,
// and asks cert-manager's CA injector to fill both caBundles. (This cluster has no cert-manager:
// the objects are checked as rendered.)
func TestDeployCertManagerOverlay(t *testing.T) {
	ctx := framework.Context(t)
	rendered, list := renderManifests(t, ctx, "artifacts/deploy/cert-manager")
	objects := byKindAndName(list)
	for _, base := range []string{"Deployment inplace-apiserver", "DaemonSet inplace-daemon", "Deployment inplace-controller"} {
		if objects[base] == nil {
			t.Errorf("the overlay lacks the base's %s", base)
		}
	}
	cert := objects["Certificate inplace-apiserver-tls"]
	if cert == nil {
		t.Fatalf("no Certificate inplace-apiserver-tls in:\n%s", rendered)
	}
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if secret != "inplace-apiserver-tls" || !slices.Contains(names, "inplace-apiserver.inplace-system.svc") {
		t.Errorf("Certificate: secretName %q dnsNames %v, want the Secret the Deployment mounts, for inplace-apiserver.inplace-system.svc", secret, names)
	}
	ids := []string{"MutatingWebhookConfiguration inplace-pod-webhook", "ValidatingWebhookConfiguration inplace-pod-budget-webhook",
		"ValidatingWebhookConfiguration inplace-deletion-protection-webhook"}
	for _, name := range framework.APIServiceNames {
		ids = append(ids, "APIService "+name)
	}
	for _, id := range ids {
		obj := objects[id]
		if obj == nil {
			t.Errorf("no %s", id)
			continue
		}
		if got := obj.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "inplace-system/inplace-apiserver-tls" {
			t.Errorf("%s: cert-manager.io/inject-ca-from = %q", id, got)
		}
	}
}

// TestDeployHAOverlay: artifacts/deploy/ha renders the base with a 3-member etcd StatefulSet
// (claims, Parallel start, a headless Service that publishes members before they are ready), two
// inplace-apiservers on it (--etcd-servers naming the three members, no embedded etcd's claim or
// volume), PodDisruptionBudgets and the NetworkPolicy around etcd; the real cluster's API accepts
// all of it (server-side apply, dry run).
func TestDeployHAOverlay(t *testing.T) {
	ctx := framework.Context(t)
	rendered, list := renderManifests(t, ctx, "artifacts/deploy/ha")
	objects := byKindAndName(list)
	if objects["PersistentVolumeClaim inplace-apiserver-data"] != nil {
		t.Errorf("the HA overlay keeps the embedded etcd's claim")
	}
	for _, want := range []string{"StatefulSet inplace-etcd", "Service inplace-etcd", "NetworkPolicy inplace-etcd",
		"PodDisruptionBudget inplace-apiserver", "PodDisruptionBudget inplace-controller", "PodDisruptionBudget inplace-etcd"} {
		if objects[want] == nil {
			t.Errorf("the HA overlay lacks %s", want)
		}
	}
	if sts := objects["StatefulSet inplace-etcd"]; sts != nil {
		replicas := manifests.Int(sts.Object, "spec", "replicas")
		policy, _, _ := unstructured.NestedString(sts.Object, "spec", "podManagementPolicy")
		claims, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
		if replicas != 3 || policy != "Parallel" || len(claims) != 1 {
			t.Errorf("etcd StatefulSet: replicas %d, podManagementPolicy %q, %d claim templates; want 3, Parallel, 1", replicas, policy, len(claims))
		}
	}
	if svc := objects["Service inplace-etcd"]; svc != nil {
		publish, _, _ := unstructured.NestedBool(svc.Object, "spec", "publishNotReadyAddresses")
		clusterIP, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
		if !publish || clusterIP != "None" {
			t.Errorf("etcd Service: publishNotReadyAddresses %v clusterIP %q, want a headless Service publishing members before they are ready", publish, clusterIP)
		}
	}
	if d := objects["Deployment inplace-apiserver"]; d != nil {
		replicas := manifests.Int(d.Object, "spec", "replicas")
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
		joined := strings.Join(args, " ")
		if replicas < 2 || strings.Contains(joined, "--data-dir") || strings.Count(joined, "inplace-etcd-") != 3 {
			t.Errorf("inplace-apiserver: replicas %d, args %v; want 2+, --etcd-servers naming the three members, no --data-dir", replicas, args)
		}
		if !slices.Contains(args, "--shutdown-delay-duration=5s") {
			t.Errorf("inplace-apiserver args %v: want --shutdown-delay-duration=5s (a replica stopping keeps serving while its endpoint goes)", args)
		}
		for _, v := range volumes {
			if v.(map[string]any)["name"] == "data" {
				t.Errorf("inplace-apiserver keeps the embedded etcd's data volume: %v", volumes)
			}
		}
		// Only the data mount goes (volumeMounts merge by mountPath: a delete by name alone
		// once took the serving certificate's mount with it).
		mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
		if len(mounts) != 1 || mounts[0].(map[string]any)["name"] != "tls" {
			t.Errorf("inplace-apiserver mounts %v, want only the serving certificate (tls)", mounts)
		}
	}
	dryRunApply(t, ctx, rendered)
}

// renderManifests renders a kustomization with kubectl's kustomize and decodes its objects.
func renderManifests(t *testing.T, ctx context.Context, dir string) (string, []*unstructured.Unstructured) {
	t.Helper()
	rendered := framework.MustKubectl(t, ctx, "", "kustomize", dir)
	objects, err := manifests.Decode(rendered)
	if err != nil {
		t.Fatalf("the manifests of %s: %v", dir, err)
	}
	return rendered, objects
}

// byKindAndName indexes objects by "KIND NAME".
func byKindAndName(objects []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, obj := range objects {
		m[obj.GetKind()+" "+obj.GetName()] = obj
	}
	return m
}

// dryRunApply applies the manifests server-side as a dry run, requires every line of kubectl's
// answer to be a dry-run result and returns the lines. It applies as hack/deploy.sh's field
// manager, so the dry run is what installing these manifests over the running installation
// (INPLACE_IN_CLUSTER=1 or ha) would do: fields it set that these manifests leave out go (the ha
// shape's rollingUpdate, where the base says Recreate); --force-conflicts for the fields another
// manager set (local-up's). A dry run changes nothing either way.
func dryRunApply(t *testing.T, ctx context.Context, manifests string) []string {
	t.Helper()
	out := framework.MustKubectl(t, ctx, manifests, "apply", "--server-side", "--dry-run=server", "--force-conflicts",
		"--field-manager=inplace-deploy", "-f", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !strings.HasSuffix(l, "(server dry run)") {
			t.Errorf("dry-run apply: unexpected line %q", l)
		}
	}
	t.Logf("kubectl apply --server-side --dry-run=server:\n%s", out)
	return lines
}
