package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/inplace-dev/inplace/pkg/migrate"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// `kubectl inplace migrate --to-openkruise` on the real cluster, after TestMigrateFromOpenKruise's
// migration and the rollouts made under inplace: the objects as inplace has them now go back into
// OpenKruise's CRDs, every Pod kept.

// kruiseBackCRDs are the CRDs the way back needs in this cluster: the test's and NodeImage
// (inplace's controller made one per node, which go back too).
var kruiseBackCRDs = append(append([]map[string]any(nil), kruiseCRDs...), kruiseCRD("nodeimages", "NodeImage", "v1beta1", false))

func writeCRDs(t *testing.T, path string, crds []map[string]any) {
	t.Helper()
	var docs []string
	for _, c := range crds {
		raw, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// migrateBack: inplace-controller stopped, --dry-run prints the plan and changes nothing; a --crds
// file without a CRD for a kind inplace has objects of is refused; then the way back crashes after
// every step and is resumed (install-crds first waits in vain: the CRDs are installed by the
// "user", the test, as with OpenKruise's chart); at the end every Pod is the same (UID, containers,
// restart counts), the objects are in the CRDs with the spec inplace had (the rolled-out image), new
// UIDs, and every Pod and ControllerRevision is owned by the new objects, the SidecarSet's
// revisions moved back to kruise-system.
func migrateBack(t *testing.T, ctx context.Context, ns string, kruise map[string]*kruiseObject, nodes int32) {
	framework.TakeDown(t, ctx, "inplace-controller")
	dir := t.TempDir()
	backup := filepath.Join(dir, "inplace-backup.yaml")
	crds := filepath.Join(dir, "kruise-crds.yaml")
	writeCRDs(t, crds, kruiseBackCRDs)
	partial := filepath.Join(dir, "kruise-crds-partial.yaml")
	writeCRDs(t, partial, kruiseCRDs[:1])

	oldUIDs := map[string]types.UID{}
	for crd, o := range kruise {
		got, err := framework.DynamicClient.Resource(o.gvr).Namespace(namespaceOf(crd, ns)).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s %s in inplace: %v", crd, o.name, err)
		}
		oldUIDs[crd] = got.GetUID()
	}
	before := snapshotPods(t, ctx, ns)
	claims := snapshotClaims(t, ctx, ns)

	out := mustKubectlInplace(t, ctx, "migrate", "--to-openkruise", "--backup", backup, "--crds", crds, "--dry-run")
	for _, want := range []string{"plan of the way back", "install-crds: create the CRDs of " + crds, cloneSetCRD, sidecarSetCRD, budgetCRD,
		fmt.Sprintf("%d pods, 2 persistentvolumeclaims", 2+1+nodes), "remove-apiservices: delete inplace's APIServices v1alpha1.apps.kruise.io, v1beta1.apps.kruise.io, v1alpha1.policy.kruise.io, v1beta1.policy.kruise.io"} {
		if !strings.Contains(out, want) {
			framework.LogLines(t, "dry run", out)
			t.Fatalf("dry run of the way back: no %q in its output (logged above)", want)
		}
	}
	checkBudgetCounted(t, out, "dry run of the way back")
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote %s (%v)", backup, err)
	}
	out, stderr, err := kubectlInplace(ctx, time.Minute, "migrate", "--to-openkruise", "--backup", backup, "--crds", partial)
	if err == nil || !strings.Contains(stderr, "has no CRD "+sidecarSetCRD) {
		t.Fatalf("the way back with a --crds file without SidecarSet's CRD: err %v, want a refusal naming it\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Fatalf("a refused run wrote %s (%v)", backup, err)
	}
	checkServedByInplace(t, ctx)

	start := time.Now()
	args := []string{"migrate", "--to-openkruise", "--backup", backup, "--timeout", "1m"}
	for _, step := range migrate.BackSteps {
		if step == migrate.StepInstallCRDs {
			// No CRDs yet: the step waits for them, then fails saying what to do; the user
			// installs them (OpenKruise's chart) and runs the command again.
			out, stderr, err := kubectlInplace(ctx, time.Minute, append(args, "--timeout", "3s")...)
			if err == nil || !strings.Contains(stderr, "install OpenKruise's CRDs") {
				t.Fatalf("the way back without CRDs: err %v, want it to wait for them\nstdout: %s\nstderr: %s", err, out, stderr)
			}
			for _, crd := range kruiseBackCRDs {
				if _, err := framework.DynamicClient.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		crashAfterStep(t, ctx, ns, args, step, "the way back", before, claims)
	}
	out = mustKubectlInplace(t, ctx, args...)
	t.Logf("the way back (%d crashes, then to the end) took %.1fs:\n%s", len(migrate.BackSteps), time.Since(start).Seconds(), out)
	if want := fmt.Sprintf("%d Pods unchanged", len(before)); !strings.Contains(out, want) {
		t.Errorf("the way back: no %q in its output", want)
	}
	if now := snapshotPods(t, ctx, ns); !maps.Equal(now, before) {
		t.Fatalf("after the way back: Pods %+v, were %+v", now, before)
	}
	checkBackInCRDs(t, ctx, ns, kruise, oldUIDs, nodes)
	checkBudgetBack(t, ctx, ns, kruise[budgetCRD], oldUIDs[budgetCRD])
	checkClaimsKept(t, ctx, ns, claims, "after the way back")
	checkClaimsOwned(t, ctx, ns, claims, cloneSetGVR, kruise[cloneSetCRD].name, "after the way back")

	// Done is done: once kruise-manager runs again, the same command has nothing left to do
	// (it does not refuse because of kruise-manager, nor change anything).
	framework.MustKubectl(t, ctx, "", "-n", "kruise-system", "scale", "deployment/kruise-manager", "--replicas=1")
	if out := mustKubectlInplace(t, ctx, args...); !strings.Contains(out, "is done: nothing to do") {
		t.Errorf("the way back run again when done: %s", out)
	}
	if now := snapshotPods(t, ctx, ns); !maps.Equal(now, before) {
		t.Fatalf("after the way back run again: Pods %+v, were %+v", now, before)
	}
}

func namespaceOf(crd, ns string) string {
	if crd == sidecarSetCRD {
		return ""
	}
	return ns
}

// checkServedByInplace: apps.kruise.io and policy.kruise.io are still inplace's (a refused or dry
// run changed nothing).
func checkServedByInplace(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, name := range framework.APIServiceNames {
		s, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service"); svc == nil {
			t.Fatalf("APIService %s is not inplace's any more", name)
		}
	}
}

// checkBackInCRDs: none of inplace's APIServices is left (apps.kruise.io and policy.kruise.io
// v1alpha1 are kube-apiserver's again, for the CRDs; policy.kruise.io v1beta1, which OpenKruise's
// CRD does not serve, is gone); each object is there
// with a new UID and the spec inplace had (the CloneSet's rolled-out image); the Pods and revisions
// of the workloads are controlled by the new objects (the counts of the workloads' Pods), the
// SidecarSet's revisions are in kruise-system controlled by the new SidecarSet, none left in
// inplace's namespace.
func checkBackInCRDs(t *testing.T, ctx context.Context, ns string, kruise map[string]*kruiseObject, oldUIDs map[string]types.UID, nodes int32) {
	t.Helper()
	for _, name := range framework.APIServiceNames {
		s, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if name == framework.PolicyBetaAPIServiceName && apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service"); svc != nil {
			t.Fatalf("APIService %s is still a Service's (%v), want kube-apiserver's (the CRDs)", name, svc)
		}
	}
	newUIDs := map[types.UID]string{}
	for crd, o := range kruise {
		got, err := framework.DynamicClient.Resource(o.gvr).Namespace(namespaceOf(crd, ns)).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s %s in the CRD: %v", crd, o.name, err)
		}
		if got.GetUID() == oldUIDs[crd] {
			t.Errorf("%s %s: the UID inplace had (%s), want a new object", crd, o.name, got.GetUID())
		}
		newUIDs[got.GetUID()] = crd
		if crd == cloneSetCRD {
			containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
			if len(containers) == 0 || containers[0].(map[string]any)["image"] != framework.AppImageV2 {
				t.Errorf("CloneSet %s: containers %v, want the image rolled out under inplace (%s)", o.name, containers, framework.AppImageV2)
			}
		}
	}
	controlled := func(refs []metav1.OwnerReference) string {
		for _, r := range refs {
			if r.Controller != nil && *r.Controller {
				return newUIDs[r.UID]
			}
		}
		return ""
	}
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podsOf := map[string]int32{}
	for _, p := range pods.Items {
		podsOf[controlled(p.OwnerReferences)]++
	}
	if want := map[string]int32{cloneSetCRD: 2, statefulSetCRD: 1, daemonSetCRD: nodes, "": 1}; !maps.Equal(podsOf, want) {
		t.Errorf("Pods controlled by the re-created objects: %v, want %v (the injected Pod has no owner)", podsOf, want)
	}
	revs, err := framework.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range revs.Items {
		if controlled(r.OwnerReferences) == "" {
			t.Errorf("ControllerRevision %s: owners %v, none of the re-created objects", r.Name, r.OwnerReferences)
		}
	}
	for namespace, want := range map[string]bool{"kruise-system": true, framework.InplaceNamespace: false} {
		list, err := framework.Kube.AppsV1().ControllerRevisions(namespace).List(ctx, metav1.ListOptions{LabelSelector: "kruise.io/sidecarset-name=" + kruise[sidecarSetCRD].name})
		if err != nil {
			t.Fatal(err)
		}
		if want != (len(list.Items) > 0) {
			t.Errorf("the SidecarSet's revisions in %s: %d", namespace, len(list.Items))
		}
		for _, r := range list.Items {
			if want && controlled(r.OwnerReferences) != sidecarSetCRD {
				t.Errorf("the SidecarSet's revision %s/%s: owners %v, want the re-created SidecarSet", namespace, r.Name, r.OwnerReferences)
			}
		}
	}
}
