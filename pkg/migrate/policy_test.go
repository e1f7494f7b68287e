package migrate

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

// PodUnavailableBudgets (policy.kruise.io) are carried both ways as the apps.kruise.io kinds are.

var (
	pubKind     = Kind{CRD: "podunavailablebudgets.policy.kruise.io", Group: PolicyGroup, Kind: "PodUnavailableBudget", Plural: "podunavailablebudgets", Version: "v1alpha1", Namespaced: true}
	cloneSetKnd = Kind{CRD: "clonesets.apps.kruise.io", Group: Group, Kind: "CloneSet", Plural: "clonesets", Version: "v1alpha1", Namespaced: true}
)

// crd is a CRD object of the kind, at its version (served and stored).
func crd(k Kind) *unstructured.Unstructured {
	scope := "Cluster"
	if k.Namespaced {
		scope = "Namespaced"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": k.CRD},
		"spec": map[string]any{"group": k.group(), "scope": scope, "names": map[string]any{"kind": k.Kind, "plural": k.Plural},
			"versions": []any{map[string]any{"name": k.Version, "served": true, "storage": true}}},
	}}
}

// budget is OpenKruise's PodUnavailableBudget "web-pub" at v1alpha1: a targetRef, maxUnavailable,
// the protect-operations annotation, a label and a status.
func budget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
		"metadata": map[string]any{"name": "web-pub", "namespace": "ns", "uid": "pub-1", "resourceVersion": "7",
			"labels":      map[string]any{"team": "a"},
			"annotations": map[string]any{"kruise.io/pub-protect-operations": "DELETE,EVICT"}},
		"spec": map[string]any{"targetRef": map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web"},
			"maxUnavailable": int64(1)},
		"status": map[string]any{"observedGeneration": int64(1), "unavailableAllowed": int64(1), "currentAvailable": int64(2),
			"desiredAvailable": int64(1), "totalReplicas": int64(2)},
	}}
}

// fakeCluster is a dynamic client that lists every resource the migration lists.
func fakeCluster(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{
		crdGVR: "CustomResourceDefinitionList", apiServiceGVR: "APIServiceList",
		dependentGVRs["pods"]: "PodList", dependentGVRs["persistentvolumeclaims"]: "PersistentVolumeClaimList",
		dependentGVRs["controllerrevisions"]: "ControllerRevisionList",
	}
	for _, k := range kruiseStorageKinds {
		for _, v := range []string{"v1alpha1", "v1beta1"} {
			gvr := k.gvr()
			gvr.Version = v
			listKinds[gvr] = k.Kind + "List"
		}
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
}

// The migration to inplace finds OpenKruise's PodUnavailableBudget CRD beside the apps.kruise.io
// ones, saves its budgets at the CRD's storage version and counts them in the dry run's plan; it
// waits for inplace's policy.kruise.io APIServices too. An OpenKruise without the CRD has no
// budgets to carry and no policy.kruise.io APIService to wait for.
func TestDiscoverAndPlanCarryPodUnavailableBudgets(t *testing.T) {
	ctx := context.Background()
	cs := obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(3), "updatedReplicas": int64(2)}})
	rollouts := crd(Kind{CRD: "rollouts.rollouts.kruise.io", Group: "rollouts.kruise.io", Kind: "Rollout", Plural: "rollouts", Version: "v1beta1", Namespaced: true})
	for _, c := range []struct {
		name     string
		withPUB  bool
		wantObjs int
	}{{"with the PodUnavailableBudget CRD", true, 2}, {"an older OpenKruise without it", false, 1}} {
		objs := []runtime.Object{crd(cloneSetKnd), rollouts, &cs}
		if c.withPUB {
			objs = append(objs, crd(pubKind), budget())
		}
		out := &strings.Builder{}
		m := &Migrator{Dynamic: fakeCluster(objs...), Kube: kubefake.NewSimpleClientset(),
			Opts: Options{Backup: "b.yaml", Out: out}, state: &State{Done: map[string]bool{}}}
		if err := m.discover(ctx); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(m.objs) != c.wantObjs {
			t.Errorf("%s: %d objects found, want %d", c.name, len(m.objs), c.wantObjs)
		}
		_, hasPUB := m.kindOf(PolicyGroup, "PodUnavailableBudget")
		if hasPUB != c.withPUB {
			t.Errorf("%s: kinds %+v", c.name, m.state.Kinds)
		}
		if _, ok := m.kindOf("rollouts.kruise.io", "Rollout"); ok {
			t.Errorf("%s: a CRD of another group is carried: %+v", c.name, m.state.Kinds)
		}
		if err := m.plan(ctx); err != nil {
			t.Fatal(err)
		}
		plan := out.String()
		wantAPIServices := []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io"}
		if c.withPUB {
			wantAPIServices = []string{"v1alpha1.apps.kruise.io", "v1alpha1.policy.kruise.io", "v1beta1.apps.kruise.io", "v1beta1.policy.kruise.io"}
			for _, want := range []string{"save 2 objects of apps.kruise.io and policy.kruise.io", "delete clonesets.apps.kruise.io, podunavailablebudgets.policy.kruise.io and wait"} {
				if !strings.Contains(plan, want) {
					t.Errorf("%s: the plan does not say %q:\n%s", c.name, want, plan)
				}
			}
			if !regexp.MustCompile(`podunavailablebudgets\.policy\.kruise\.io\s+1 at v1alpha1`).MatchString(plan) {
				t.Errorf("%s: the plan does not count the budget:\n%s", c.name, plan)
			}
		} else if strings.Contains(plan, "policy.kruise.io") {
			t.Errorf("%s: the plan names policy.kruise.io:\n%s", c.name, plan)
		}
		if got := apiServiceNames(m.state.Kinds); !reflect.DeepEqual(got, wantAPIServices) {
			t.Errorf("%s: APIServices waited for: %v, want %v", c.name, got, wantAPIServices)
		}
	}
}

// recreate creates the budget in inplace's policy.kruise.io at the saved version with its spec,
// labels and annotations, then its status, and records its new UID; the server's fields go.
func TestRecreatePodUnavailableBudget(t *testing.T) {
	ctx := context.Background()
	saved := budget()
	client := fakeCluster()
	m := &Migrator{Dynamic: client, Opts: Options{Backup: filepath.Join(t.TempDir(), "b.yaml"), Out: &strings.Builder{}},
		state: &State{Done: map[string]bool{}, Kinds: []Kind{cloneSetKnd, pubKind}, NewUIDs: map[string]types.UID{}}, objs: []unstructured.Unstructured{*saved}}
	if err := m.recreate(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := client.Resource(schema.GroupVersionResource{Group: "policy.kruise.io", Version: "v1alpha1", Resource: "podunavailablebudgets"}).Namespace("ns").Get(ctx, "web-pub", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the budget was not re-created in policy.kruise.io/v1alpha1: %v", err)
	}
	for _, f := range []string{"spec", "status"} {
		if !reflect.DeepEqual(got.Object[f], saved.Object[f]) {
			t.Errorf("%s %v, want %v", f, got.Object[f], saved.Object[f])
		}
	}
	if !reflect.DeepEqual(got.GetLabels(), saved.GetLabels()) || !reflect.DeepEqual(got.GetAnnotations(), saved.GetAnnotations()) {
		t.Errorf("labels %v annotations %v, want %v %v", got.GetLabels(), got.GetAnnotations(), saved.GetLabels(), saved.GetAnnotations())
	}
	if got.GetUID() == "pub-1" {
		t.Error("the budget kept OpenKruise's UID")
	}
	if _, ok := m.state.NewUIDs[objectKey("PodUnavailableBudget", "ns", "web-pub")]; !ok {
		t.Errorf("no new UID recorded: %v", m.state.NewUIDs)
	}
}

// deleteCRDs deletes the PodUnavailableBudget CRD with the apps.kruise.io ones and waits until
// kube-apiserver's autoregistered APIService of policy.kruise.io is gone too (inplace's could not
// be registered beside it).
func TestDeleteCRDsWaitsForPolicyAPIServices(t *testing.T) {
	ctx := context.Background()
	client := fakeCluster(crd(cloneSetKnd), crd(pubKind), apiService("v1alpha1.policy.kruise.io", false))
	m := &Migrator{Dynamic: client, Opts: Options{Backup: filepath.Join(t.TempDir(), "b.yaml"), Out: &strings.Builder{}, Timeout: 1500 * time.Millisecond},
		state: &State{Done: map[string]bool{}, Kinds: []Kind{cloneSetKnd, pubKind}}}
	err := m.deleteCRDs(ctx)
	if err == nil || !strings.Contains(err.Error(), "APIService v1alpha1.policy.kruise.io still local") {
		t.Fatalf("with the CRD's APIService of policy.kruise.io still there: err %v, want a wait naming it", err)
	}
	for _, k := range []Kind{cloneSetKnd, pubKind} {
		if _, err := client.Resource(crdGVR).Get(ctx, k.CRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s: %v, want it deleted", k.CRD, err)
		}
	}
	// kube-apiserver lets go of it: the step ends.
	if err := client.Resource(apiServiceGVR).Delete(ctx, "v1alpha1.policy.kruise.io", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.deleteCRDs(ctx); err != nil {
		t.Errorf("re-run once the APIService is gone: %v", err)
	}
}

// With OpenKruise's PodUnavailableBudget CRD there, an --apiservices file without inplace's
// policy.kruise.io APIServices (an older inplace) is refused before anything changes.
func TestPreflightWantsPolicyAPIServices(t *testing.T) {
	ctx := context.Background()
	doc := func(names ...string) string {
		var docs []string
		for _, n := range names {
			docs = append(docs, "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: "+n+"\nspec:\n  service: {namespace: inplace-system, name: inplace-apiserver}\n")
		}
		return strings.Join(docs, "---\n")
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "inplace-apiserver", Namespace: "inplace-system"}}
	for _, c := range []struct {
		name  string
		kinds []Kind
		file  []string
		want  string
	}{
		{"budgets, apps APIServices only", []Kind{cloneSetKnd, pubKind}, []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io"}, "has no APIService v1alpha1.policy.kruise.io"},
		{"budgets, all four", []Kind{cloneSetKnd, pubKind}, []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io", "v1alpha1.policy.kruise.io", "v1beta1.policy.kruise.io"}, ""},
		{"no budget CRD, apps APIServices only", []Kind{cloneSetKnd}, []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io"}, ""},
	} {
		path := filepath.Join(t.TempDir(), "apiservices.yaml")
		if err := os.WriteFile(path, []byte(doc(c.file...)), 0o600); err != nil {
			t.Fatal(err)
		}
		m := &Migrator{Kube: kubefake.NewSimpleClientset(svc), Opts: Options{APIServices: path, Out: &strings.Builder{}}, state: &State{Kinds: c.kinds}}
		err := m.preflight(ctx)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

// A state file written before kinds had a group resumes: its kinds are apps.kruise.io's.
func TestLoadStateWithoutGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.yaml.state.json")
	old := `{"done":{"backup":true},"kinds":[{"crd":"clonesets.apps.kruise.io","kind":"CloneSet","plural":"clonesets","version":"v1alpha1","namespaced":true}]}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, resume, err := loadState(path)
	if err != nil || !resume {
		t.Fatalf("loadState: resume %v, %v", resume, err)
	}
	if len(s.Kinds) != 1 || s.Kinds[0].Group != Group || s.Kinds[0].gvr() != (schema.GroupVersionResource{Group: Group, Version: "v1alpha1", Resource: "clonesets"}) {
		t.Errorf("kinds %+v, want CloneSet of apps.kruise.io", s.Kinds)
	}
	s.Kinds = append(s.Kinds, pubKind)
	if err := saveState(path, s); err != nil {
		t.Fatal(err)
	}
	if s, _, err = loadState(path); err != nil || len(s.Kinds) != 2 || s.Kinds[1] != pubKind {
		t.Errorf("after saving the budget's kind: %+v, %v", s.Kinds, err)
	}
	m := &Migrator{state: s}
	if k, ok := m.kindOfObject(*budget()); !ok || k.CRD != pubKind.CRD {
		t.Errorf("kindOfObject(budget) = %+v, %v", k, ok)
	}
	cs := obj("CloneSet", nil)
	cs.SetAPIVersion("policy.kruise.io/v1alpha1")
	if _, ok := m.kindOfObject(cs); ok {
		t.Error("a CloneSet of policy.kruise.io is taken for apps.kruise.io's")
	}
}

// The way back reads the budgets from inplace at OpenKruise's storage version v1alpha1, counts them
// in its plan, records their kind (install-crds waits for its CRD) and removes inplace's
// policy.kruise.io APIServices with the apps.kruise.io ones. An inplace that does not serve
// policy.kruise.io (no APIService, or a CRD's) has no budgets to carry back.
func TestBackCarriesPodUnavailableBudgets(t *testing.T) {
	ctx := context.Background()
	cs := obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(3), "updatedReplicas": int64(2)}})
	for _, c := range []struct {
		name    string
		policy  []runtime.Object // the policy.kruise.io APIServices
		wantPUB bool
	}{
		{"inplace serves policy.kruise.io", []runtime.Object{apiService("v1alpha1.policy.kruise.io", true), apiService("v1beta1.policy.kruise.io", true)}, true},
		{"an older inplace", nil, false},
		{"a CRD serves policy.kruise.io", []runtime.Object{apiService("v1alpha1.policy.kruise.io", false)}, false},
	} {
		objs := append([]runtime.Object{apiService("v1alpha1.apps.kruise.io", true), apiService("v1beta1.apps.kruise.io", true), &cs, budget()}, c.policy...)
		client := fakeCluster(objs...)
		out := &strings.Builder{}
		m := &Migrator{Dynamic: client, Kube: kubefake.NewSimpleClientset(),
			Opts:  Options{Backup: filepath.Join(t.TempDir(), "b.yaml"), InplaceNamespace: "inplace-system", ToOpenKruise: true, Out: out},
			state: &State{Done: map[string]bool{}, NewUIDs: map[string]types.UID{}}}
		var err error
		if m.state.Kinds, err = backKinds(""); err != nil {
			t.Fatal(err)
		}
		if err := m.discoverBack(ctx); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := m.preflightBack(ctx); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		k, ok := m.kindOf(PolicyGroup, "PodUnavailableBudget")
		if ok != c.wantPUB || ok && k.Version != "v1alpha1" {
			t.Errorf("%s: kinds recorded %+v", c.name, m.state.Kinds)
		}
		if want := map[bool]int{true: 2, false: 1}[c.wantPUB]; len(m.objs) != want {
			t.Errorf("%s: %d objects to carry back, want %d", c.name, len(m.objs), want)
		}
		if err := m.planBack(ctx); err != nil {
			t.Fatal(err)
		}
		counted := regexp.MustCompile(`podunavailablebudgets\.policy\.kruise\.io\s+1 at v1alpha1`).MatchString(out.String())
		if counted != c.wantPUB {
			t.Errorf("%s: the plan counts the budget: %v, want %v:\n%s", c.name, counted, c.wantPUB, out)
		}
		if err := m.removeAPIServices(ctx); err != nil {
			t.Fatal(err)
		}
		for _, name := range groupAPIServices(Groups...) {
			s, err := client.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
			if err == nil && s.Object["spec"].(map[string]any)["service"] != nil {
				t.Errorf("%s: inplace's APIService %s left", c.name, name)
			}
		}
		if c.name == "a CRD serves policy.kruise.io" {
			if _, err := client.Resource(apiServiceGVR).Get(ctx, "v1alpha1.policy.kruise.io", metav1.GetOptions{}); err != nil {
				t.Errorf("%s: the CRD's APIService was deleted: %v", c.name, err)
			}
		}
	}
}

// install-crds creates the PodUnavailableBudget CRD of the --crds file and, with budgets to carry,
// waits until kube-apiserver serves policy.kruise.io/v1alpha1 from it.
func TestInstallCRDsWaitsForPolicy(t *testing.T) {
	ctx := context.Background()
	var docs []string
	for _, k := range []Kind{cloneSetKnd, pubKind} {
		raw, err := yaml.Marshal(crd(k).Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	path := writeTemp(t, strings.Join(docs, "---\n"))
	kinds, err := backKinds(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds[len(kinds)-1]; got != pubKind {
		t.Fatalf("the budget's kind from the file: %+v, want %+v", got, pubKind)
	}
	client := fakeCluster(apiService("v1alpha1.apps.kruise.io", false))
	m := &Migrator{Dynamic: client, Kube: kubefake.NewSimpleClientset(),
		Opts:  Options{CRDs: path, ToOpenKruise: true, Out: &strings.Builder{}, Timeout: 1500 * time.Millisecond},
		state: &State{Kinds: []Kind{cloneSetKnd, pubKind}}}
	err = m.installCRDs(ctx)
	if err == nil || !strings.Contains(err.Error(), "APIService v1alpha1.policy.kruise.io not kube-apiserver's yet") {
		t.Fatalf("no APIService of policy.kruise.io yet: err %v, want a wait naming it", err)
	}
	if _, err := client.Resource(crdGVR).Get(ctx, pubKind.CRD, metav1.GetOptions{}); err != nil {
		t.Errorf("the PodUnavailableBudget CRD of the file: %v", err)
	}
	// kube-apiserver's autoregistration serves the CRD's group: the step ends.
	if _, err := client.Resource(apiServiceGVR).Create(ctx, apiService("v1alpha1.policy.kruise.io", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.installCRDs(ctx); err != nil {
		t.Errorf("once policy.kruise.io is served from the CRD: %v", err)
	}
}
