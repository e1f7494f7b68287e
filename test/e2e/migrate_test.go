package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// `kubectl inplace migrate` on the real cluster, from the state an OpenKruise installation leaves
// (built by hand: inplace's APIServices removed, OpenKruise's CRD clonesets.apps.kruise.io, a
// CloneSet in it owning its Pods and a ControllerRevision written with OpenKruise v1.9's data and
// hash, kruise-* webhook configurations failing closed on a stopped service, a kruise-manager
// Deployment) to inplace, keeping every Pod.

var (
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	cloneSetGVR = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
)

const cloneSetCRD = "clonesets.apps.kruise.io"

// kruiseCloneSetCRD is OpenKruise's CRD of CloneSets, reduced to its names, version and
// subresources (its schema keeps every field).
var kruiseCloneSetCRD = map[string]any{
	"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
	"metadata": map[string]any{"name": cloneSetCRD},
	"spec": map[string]any{
		"group": "apps.kruise.io", "scope": "Namespaced",
		"names": map[string]any{"kind": "CloneSet", "listKind": "CloneSetList", "plural": "clonesets", "singular": "cloneset", "shortNames": []any{"clone"}},
		"versions": []any{map[string]any{
			"name": "v1alpha1", "served": true, "storage": true,
			"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			"subresources": map[string]any{"status": map[string]any{}},
		}},
	},
}

// kubeRevisionHash is kube's controller-history hash (fnv-32, safely encoded), which OpenKruise
// names its revisions with.
func kubeRevisionHash(data []byte) string {
	h := fnv.New32()
	h.Write(data)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// kruiseRevisionData is the data OpenKruise v1.9 (k8s.io/apimachinery v0.32) stores for the
// template inplace stored as data: the same patch, with "creationTimestamp":null in the template's
// metadata, which the older encoder writes.
func kruiseRevisionData(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	tmpl := m["spec"].(map[string]any)["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["creationTimestamp"] = nil
	tmpl["metadata"] = meta
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func controllerRefTo(obj *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(), UID: obj.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func mergePatch(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// restoreInplaceAPIServices undoes the OpenKruise state after the test whatever its outcome:
// the CRD goes, inplace's APIServices come back Available, the kruise webhooks and namespace go.
func restoreInplaceAPIServices(t *testing.T, saved []*unstructured.Unstructured) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		adm := framework.Kube.AdmissionregistrationV1()
		_ = adm.MutatingWebhookConfigurations().Delete(ctx, "kruise-mutating-webhook-configuration", metav1.DeleteOptions{})
		_ = adm.ValidatingWebhookConfigurations().Delete(ctx, "kruise-validating-webhook-configuration", metav1.DeleteOptions{})
		_ = framework.Kube.CoreV1().Namespaces().Delete(ctx, "kruise-system", metav1.DeleteOptions{})
		_ = framework.DynamicClient.Resource(crdGVR).Delete(ctx, cloneSetCRD, metav1.DeleteOptions{})
		framework.Poll(t, ctx, 2*time.Minute, "inplace's APIServices back", func(ctx context.Context) (bool, error) {
			if _, err := framework.DynamicClient.Resource(crdGVR).Get(ctx, cloneSetCRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("CRD still there (%v)", err)
			}
			for _, s := range saved {
				got, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, s.GetName(), metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					c := s.DeepCopy()
					c.SetResourceVersion("")
					c.SetUID("")
					delete(c.Object, "status")
					_, err = framework.DynamicClient.Resource(framework.APIServiceGVR).Create(ctx, c, metav1.CreateOptions{})
					return false, err
				}
				if err != nil {
					return false, err
				}
				if svc, _, _ := unstructured.NestedMap(got.Object, "spec", "service"); svc == nil {
					return false, fmt.Errorf("APIService %s still kube-apiserver's", s.GetName())
				}
			}
			return framework.APIServiceAvailable(ctx)
		})
	})
}

// TestMigrateFromOpenKruise: the migration keeps both Pods (UID, containers, restart counts) and
// OpenKruise's revision; afterwards inplace serves the CloneSet under its name, owns the Pods and
// the revision, and rolls a new image out in place.
func TestMigrateFromOpenKruise(t *testing.T) {
	ctx, ns := framework.Start(t, "migrate")
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})

	// inplace's controller is kept off until the migration is done (the standby of docs/migration.md).
	framework.StartAgainAfter(t, "inplace-controller")
	framework.TakeDown(t, ctx, "inplace-controller")

	revName, saved := buildOpenKruiseState(t, ctx, ns, cs)
	before := snapshotPods(t, ctx, ns)
	if len(before) != 2 {
		t.Fatalf("%d Pods before the migration, want 2", len(before))
	}
	dir := t.TempDir()
	backup := filepath.Join(dir, "kruise-backup.yaml")
	apiservices := filepath.Join(dir, "apiservices.yaml")
	writeAPIServices(t, apiservices, saved)

	// --dry-run prints the plan and changes nothing.
	out := mustKubectlInplace(t, ctx, "migrate", "--backup", backup, "--apiservices", apiservices, "--dry-run", "--scale-down-kruise")
	for _, want := range []string{"plan", "would scale Deployment kruise-system/kruise-manager", cloneSetCRD, "kruise-mutating-webhook-configuration", "2 pods"} {
		if !strings.Contains(out, want) {
			framework.LogLines(t, "dry run", out)
			t.Fatalf("dry run: no %q in its output (logged above)", want)
		}
	}
	if _, err := framework.DynamicClient.Resource(crdGVR).Get(ctx, cloneSetCRD, metav1.GetOptions{}); err != nil {
		t.Fatalf("after --dry-run: CRD %s: %v", cloneSetCRD, err)
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote %s (%v)", backup, err)
	}

	// kruise-manager still running: refused, with the reason.
	out, stderr, err := kubectlInplace(ctx, time.Minute, "migrate", "--backup", backup, "--apiservices", apiservices)
	if err == nil || !strings.Contains(stderr, "kruise-manager") {
		t.Fatalf("migrate with kruise-manager running: err %v, want a refusal naming kruise-manager\nstdout: %s\nstderr: %s", err, out, stderr)
	}

	start := time.Now()
	out = mustKubectlInplace(t, ctx, "migrate", "--backup", backup, "--apiservices", apiservices, "--scale-down-kruise")
	t.Logf("migrate took %.1fs:\n%s", time.Since(start).Seconds(), out)

	if err := framework.RunLocalUpHook(t, framework.ControllerHook); err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, ctx, ns, revName, before)
	checkBackup(t, backup)

	// A rollout afterwards goes in place: the same Pods, the new image.
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	beforePods, err := framework.CloneSetPods(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	framework.UpdateCloneSet(t, ctx, got, framework.SetImage(framework.AppImageV2))
	_, after := framework.WaitRolledOut(t, ctx, got, 2)
	framework.CheckSamePods(t, beforePods, after)
}

// buildOpenKruiseState turns inplace's CloneSet into what OpenKruise leaves: the CloneSet in a
// CRD (inplace's APIServices removed), its Pods and its revision owned by it, the revision named
// and encoded as OpenKruise does, webhooks failing closed, kruise-manager's Deployment. It
// returns the revision's name and inplace's APIServices as they were.
func buildOpenKruiseState(t *testing.T, ctx context.Context, ns string, cs *v1alpha1.CloneSet) (string, []*unstructured.Unstructured) {
	t.Helper()
	dyn := framework.DynamicClient
	obj, err := dyn.Resource(cloneSetGVR).Namespace(ns).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revs, err := framework.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 {
		t.Fatalf("revisions: %v, %d", err, len(revs.Items))
	}
	inplaceRev := revs.Items[0]
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Out of inplace: the Pods orphaned, inplace's revision and CloneSet deleted.
	noOwners := mergePatch(t, map[string]any{"metadata": map[string]any{"ownerReferences": nil}})
	for _, p := range pods.Items {
		if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, noOwners, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.Kube.AppsV1().ControllerRevisions(ns).Delete(ctx, inplaceRev.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(cloneSetGVR).Namespace(ns).Delete(ctx, cs.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, 30*time.Second, "inplace's CloneSet gone", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(cloneSetGVR).Namespace(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	// inplace's APIServices out, OpenKruise's CRD in.
	var saved []*unstructured.Unstructured
	for _, name := range []string{framework.APIServiceName, framework.BetaAPIServiceName} {
		s, err := dyn.Resource(framework.APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		saved = append(saved, s)
	}
	restoreInplaceAPIServices(t, saved)
	for _, s := range saved {
		if err := dyn.Resource(framework.APIServiceGVR).Delete(ctx, s.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: kruiseCloneSetCRD}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The CloneSet in the CRD, as inplace had stored it (spec defaulted as OpenKruise's webhook
	// does), with OpenKruise's revision.
	kruiseData := kruiseRevisionData(t, inplaceRev.Data.Raw)
	revName := cs.Name + "-" + kubeRevisionHash(kruiseData)
	if revName == inplaceRev.Name {
		t.Fatalf("OpenKruise's revision name %s is inplace's: the test would not show that the revision is kept", revName)
	}
	fresh := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "finalizers"} {
		unstructured.RemoveNestedField(fresh.Object, "metadata", f)
	}
	status := fresh.Object["status"].(map[string]any)
	delete(fresh.Object, "status")
	var created *unstructured.Unstructured
	framework.Poll(t, ctx, 60*time.Second, "the CloneSet created in the CRD", func(ctx context.Context) (bool, error) {
		created, err = dyn.Resource(cloneSetGVR).Namespace(ns).Create(ctx, fresh, metav1.CreateOptions{})
		return err == nil, err
	})
	status["currentRevision"], status["updateRevision"], status["observedGeneration"] = revName, revName, created.GetGeneration()
	created.Object["status"] = status
	if created, err = dyn.Resource(cloneSetGVR).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := controllerRefTo(created)
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: revName, Labels: inplaceRev.Labels, Annotations: inplaceRev.Annotations, OwnerReferences: []metav1.OwnerReference{ref}},
		Data:       inplaceRev.Data, Revision: inplaceRev.Revision,
	}
	rev.Data.Raw = kruiseData
	if _, err := framework.Kube.AppsV1().ControllerRevisions(ns).Create(ctx, rev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podPatch := mergePatch(t, map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{ref},
		"labels":          map[string]any{"controller-revision-hash": revName, "pod-template-hash": revName},
	}})
	for _, p := range pods.Items {
		if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, podPatch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createKruiseControlPlane(t, ctx, ns)
	return revName, saved
}

// writeAPIServices writes inplace's APIService manifests (the installation's) for --apiservices.
func writeAPIServices(t *testing.T, path string, saved []*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, s := range saved {
		c := s.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(c.Object, "metadata", "uid")
		unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
		unstructured.RemoveNestedField(c.Object, "metadata", "creationTimestamp")
		delete(c.Object, "status")
		raw, err := yaml.Marshal(c.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// createKruiseControlPlane creates what OpenKruise runs beside its CRDs: kruise-manager's
// Deployment (one replica, never scheduled) and its webhook configurations, failing closed on
// a Service that does not answer, for the test's namespace only.
func createKruiseControlPlane(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	if _, err := framework.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kruise-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"control-plane": "controller-manager"}
	tmpl := framework.PodTemplate(labels, framework.Container("manager", framework.AppImageV1))
	tmpl.Spec.NodeSelector = map[string]string{"inplace.test/nowhere": "true"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-manager"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}
	if _, err := framework.Kube.AppsV1().Deployments("kruise-system").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	service := &admissionv1.ServiceReference{Namespace: "kruise-system", Name: "kruise-webhook-service", Path: ptr.To("/webhook")}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	fail, none := admissionv1.Fail, admissionv1.SideEffectClassNone
	rule := func(group, resource string) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{
			Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
		}}
	}
	adm := framework.Kube.AdmissionregistrationV1()
	if _, err := adm.MutatingWebhookConfigurations().Create(ctx, &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-mutating-webhook-configuration"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name: "mpod.kb.io", ClientConfig: admissionv1.WebhookClientConfig{Service: service}, Rules: rule("", "pods"),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: selector,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-validating-webhook-configuration"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "vcloneset.kb.io", ClientConfig: admissionv1.WebhookClientConfig{Service: service}, Rules: rule("apps.kruise.io", "clonesets"),
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: selector,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podState is what the migration must not change in a Pod.
type podState struct {
	UID      types.UID
	Images   string
	Restarts int32
	Revision string
}

func snapshotPods(t *testing.T, ctx context.Context, ns string) map[string]podState {
	t.Helper()
	pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]podState{}
	for _, p := range pods.Items {
		s := podState{UID: p.UID, Revision: framework.PodRevision(&p)}
		for _, c := range p.Spec.Containers {
			s.Images += c.Name + "=" + c.Image + " "
		}
		for _, c := range p.Status.ContainerStatuses {
			s.Restarts += c.RestartCount
		}
		out[p.Name] = s
	}
	return out
}

// checkMigrated: inplace serves the CloneSet (a new UID), which controls its Pods and OpenKruise's
// revision and takes that revision as current; the Pods stay as they were for 20 s.
func checkMigrated(t *testing.T, ctx context.Context, ns, revName string, before map[string]podState) {
	t.Helper()
	framework.Poll(t, ctx, 60*time.Second, "the CloneSet synced by inplace at OpenKruise's revision", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.UpdateRevision != revName || st.CurrentRevision != revName || st.UpdatedReplicas != 2 || st.ReadyReplicas != 2 {
			return false, fmt.Errorf("status %+v, want revision %s, 2 updated and ready", st, revName)
		}
		pods, err := framework.CloneSetPods(ctx, got)
		if err != nil {
			return false, err
		}
		if len(pods) != 2 {
			return false, fmt.Errorf("the CloneSet controls %d Pods", len(pods))
		}
		rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !metav1.IsControlledBy(rev, got) {
			return false, fmt.Errorf("revision %s owners %v", revName, rev.OwnerReferences)
		}
		return true, nil
	})
	framework.Consistently(t, ctx, 20*time.Second, time.Second, func(ctx context.Context) error {
		now := snapshotPods(t, ctx, ns)
		for name, b := range before {
			if a, ok := now[name]; !ok || a != b {
				return fmt.Errorf("Pod %s: %+v, was %+v", name, now[name], b)
			}
		}
		if len(now) != len(before) {
			return fmt.Errorf("%d Pods, were %d", len(now), len(before))
		}
		revs, err := framework.Kube.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(revs.Items) != 1 {
			return fmt.Errorf("%d revisions: inplace made its own instead of keeping %s", len(revs.Items), revName)
		}
		return nil
	})
}

// checkBackup: the backup holds the CloneSet, as OpenKruise served it.
func checkBackup(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string                   `json:"kind"`
		Items []map[string]interface{} `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "List" || len(list.Items) != 1 {
		t.Fatalf("backup: kind %s, %d items, want a List of the CloneSet", list.Kind, len(list.Items))
	}
	u := unstructured.Unstructured{Object: list.Items[0]}
	if u.GetKind() != "CloneSet" || u.GetName() != "web" || u.Object["spec"] == nil {
		t.Fatalf("backup item: %s %s", u.GetKind(), u.GetName())
	}
}
