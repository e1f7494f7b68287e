package migrate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// crdsYAML is two of OpenKruise's CRDs (reduced) and an object of another kind, as a chart's
// CRD manifest file may hold: CloneSet stored at v1alpha1, StatefulSet serving both versions and
// stored at v1beta1.
const crdsYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clonesets.apps.kruise.io}
spec:
  group: apps.kruise.io
  scope: Namespaced
  names: {kind: CloneSet, plural: clonesets}
  versions:
  - {name: v1alpha1, served: true, storage: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: statefulsets.apps.kruise.io}
spec:
  group: apps.kruise.io
  scope: Namespaced
  names: {kind: StatefulSet, plural: statefulsets}
  versions:
  - {name: v1alpha1, served: true, storage: false}
  - {name: v1beta1, served: true, storage: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: rollouts.rollouts.kruise.io}
spec:
  group: rollouts.kruise.io
  scope: Namespaced
  names: {kind: Rollout, plural: rollouts}
  versions:
  - {name: v1beta1, served: true, storage: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: kruise-system}
`

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crds.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The --crds file decides the versions; a kind inplace serves that the file has no CRD for is
// kept without a version (preflight refuses when inplace has objects of it); other groups' CRDs
// and other objects are ignored.
func TestBackKindsFromCRDsFile(t *testing.T) {
	kinds, err := backKinds(writeTemp(t, crdsYAML))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Kind{}
	for _, k := range kinds {
		got[k.CRD] = k
	}
	if len(got) != len(kruiseStorageKinds) {
		t.Fatalf("%d kinds, want one per kind inplace serves (%d): %+v", len(got), len(kruiseStorageKinds), kinds)
	}
	if k := got["clonesets.apps.kruise.io"]; k != (Kind{CRD: "clonesets.apps.kruise.io", Group: "apps.kruise.io", Kind: "CloneSet", Plural: "clonesets", Version: "v1alpha1", Namespaced: true}) {
		t.Errorf("CloneSet: %+v", k)
	}
	if k := got["statefulsets.apps.kruise.io"]; k.Version != "v1beta1" {
		t.Errorf("StatefulSet: version %q, want the storage version v1beta1", k.Version)
	}
	if k := got["sidecarsets.apps.kruise.io"]; k.Version != "" || k.Kind != "SidecarSet" {
		t.Errorf("SidecarSet (not in the file): %+v, want no version", k)
	}
	if _, ok := got["rollouts.rollouts.kruise.io"]; ok {
		t.Error("a CRD of another group is carried")
	}
}

func TestBackKindsDefault(t *testing.T) {
	kinds, err := backKinds("")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(kinds, kruiseStorageKinds) {
		t.Errorf("without --crds: %+v, want OpenKruise v1.9's storage versions", kinds)
	}
	for _, k := range kinds {
		if !carried[k.CRD] || k.Version == "" || k.CRD != k.Plural+"."+k.Group {
			t.Errorf("%+v: not a kind inplace serves, or no version", k)
		}
	}
}

func TestLoadCRDsRefusesAFileWithoutKruiseCRDs(t *testing.T) {
	_, err := loadCRDs(writeTemp(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "no CustomResourceDefinition of apps.kruise.io or policy.kruise.io") {
		t.Errorf("err %v, want a refusal", err)
	}
}

func TestServesVersion(t *testing.T) {
	crd := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"versions": []any{
		map[string]any{"name": "v1alpha1", "served": false, "storage": false},
		map[string]any{"name": "v1beta1", "served": true, "storage": true},
	}}}}
	if servesVersion(crd, "v1alpha1") || !servesVersion(crd, "v1beta1") || servesVersion(crd, "v1") {
		t.Error("servesVersion: want only the served v1beta1")
	}
}

func TestKindAPIServices(t *testing.T) {
	got := kindAPIServices([]Kind{{Version: "v1beta1"}, {Version: "v1alpha1"}, {Group: PolicyGroup, Version: "v1alpha1"}, {Group: Group, Version: "v1beta1"}})
	if !reflect.DeepEqual(got, []string{"v1alpha1.apps.kruise.io", "v1alpha1.policy.kruise.io", "v1beta1.apps.kruise.io"}) {
		t.Errorf("kindAPIServices = %v", got)
	}
}

// A state file records one direction: the way back does not resume a migration to inplace (whose
// steps of the same names did other things), nor the other way round.
func TestCheckDirection(t *testing.T) {
	for _, c := range []struct {
		name     string
		recorded string
		resume   bool
		back     bool
		wantErr  string
	}{
		{"new way back", "", false, true, ""},
		{"resume way back", DirectionToOpenKruise, true, true, ""},
		{"resume migration", "", true, false, ""},
		{"way back on a migration's state", "", true, true, "records the migration to inplace"},
		{"migration on a way back's state", DirectionToOpenKruise, true, false, "records the way back"},
	} {
		m := &Migrator{Opts: Options{Backup: "b.yaml", ToOpenKruise: c.back}, state: &State{Direction: c.recorded}, resume: c.resume}
		err := m.checkDirection()
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.wantErr)
			continue
		}
		if err == nil && (m.state.Direction == DirectionToOpenKruise) != c.back {
			t.Errorf("%s: direction %q recorded", c.name, m.state.Direction)
		}
	}
}

func apiService(name string, service bool) *unstructured.Unstructured {
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": name}, "spec": map[string]any{}}}
	if service {
		s.Object["spec"] = map[string]any{"service": map[string]any{"namespace": "inplace-system", "name": "inplace-apiserver"}}
	}
	return s
}

// preflightBack refuses, each with its reason, what would lose something on the way back: a
// rollout in flight under inplace, inplace-controller running (it would act on the orphaned
// Pods), OpenKruise's webhooks installed (failing closed), apps.kruise.io not served by inplace; and when nothing stands in the way it records only
// the kinds that have objects (the CRDs install-crds waits for).
func TestPreflightBack(t *testing.T) {
	rolling := obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(3), "updatedReplicas": int64(1)}})
	done := obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(3), "updatedReplicas": int64(2)}})
	controller := func(replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "inplace-controller", Namespace: "inplace-system"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	}
	for _, c := range []struct {
		name     string
		obj      unstructured.Unstructured
		inplace  bool // the APIServices are inplace's
		replicas int32
		want     []string // substrings of the refusal; none: no refusal
	}{
		{"nothing in the way", done, true, 0, nil},
		{"rollout in flight", rolling, true, 0, []string{"CloneSet ns/web: a rollout is in flight"}},
		{"controller running", done, true, 1, []string{"inplace-controller", "scale it to 0"}},
		{"kruise webhooks", done, true, 0, []string{"OpenKruise's webhook configurations validatingwebhookconfiguration/kruise-validating-webhook-configuration exist"}},
		{"not inplace's", done, false, 0, []string{"APIService v1alpha1.apps.kruise.io is not inplace's", "APIService v1beta1.apps.kruise.io is not inplace's"}},
	} {
		dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), apiService("v1alpha1.apps.kruise.io", c.inplace), apiService("v1beta1.apps.kruise.io", c.inplace))
		kube := kubefake.NewSimpleClientset(controller(c.replicas))
		if c.name == "kruise webhooks" {
			kube = kubefake.NewSimpleClientset(controller(0), &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kruise-validating-webhook-configuration"}})
		}
		m := &Migrator{Dynamic: dyn, Kube: kube,
			Opts:  Options{InplaceNamespace: "inplace-system", ToOpenKruise: true, Out: &strings.Builder{}},
			state: &State{Done: map[string]bool{}, Kinds: append([]Kind(nil), kruiseStorageKinds...)}, objs: []unstructured.Unstructured{c.obj}}
		err := m.preflightBack(context.Background())
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if len(m.state.Kinds) != 1 || m.state.Kinds[0].Kind != "CloneSet" {
				t.Errorf("%s: kinds %+v recorded, want only CloneSet (the one with objects)", c.name, m.state.Kinds)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: not refused", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: refusal %q does not say %q", c.name, err, w)
			}
		}
	}
}

// TestDeleteObjectsReleasesProtectedOnes: on the way back inplace's admission refuses to delete an
// object labelled policy.kruise.io/delete-protection (as OpenKruise's webhook would); the
// migration drops the label (and the finalizers) before deleting it, the backup keeping both for
// the re-created object.
func TestDeleteObjectsReleasesProtectedOnes(t *testing.T) {
	ctx := context.Background()
	cs := obj("CloneSet", nil)
	cs.SetUID("cs-1")
	cs.SetLabels(map[string]string{protectionLabel: "Always", "app": "web"})
	cs.SetFinalizers([]string{"example.com/keep"})
	client := fakeCluster(cs.DeepCopy())
	// What inplace's DeletionProtection admission does with the gate on.
	client.PrependReactor("delete", "clonesets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		got, err := client.Tracker().Get(action.GetResource(), action.GetNamespace(), action.(clienttesting.DeleteAction).GetName())
		if err != nil {
			return false, nil, nil
		}
		if u, ok := got.(*unstructured.Unstructured); ok && u.GetLabels()[protectionLabel] != "" {
			return true, nil, apierrors.NewForbidden(action.GetResource().GroupResource(), u.GetName(), errors.New("forbidden by ResourcesProtectionDeletion"))
		}
		return false, nil, nil
	})
	m := &Migrator{Dynamic: client, Kube: kubefake.NewSimpleClientset(),
		Opts:  Options{Backup: filepath.Join(t.TempDir(), "b.yaml"), Out: &strings.Builder{}, Timeout: 5 * time.Second},
		state: &State{Done: map[string]bool{}, Kinds: kruiseStorageKinds[:1]}, objs: []unstructured.Unstructured{cs}}
	if err := m.deleteObjects(ctx); err != nil {
		t.Fatalf("deleteObjects: %v", err)
	}
	if _, err := client.Resource(kruiseStorageKinds[0].gvr()).Namespace("ns").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the protected CloneSet is still there (%v)", err)
	}
	if cs.GetLabels()[protectionLabel] != "Always" {
		t.Errorf("the saved object lost its label: %v", cs.GetLabels())
	}
}
