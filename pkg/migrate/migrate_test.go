package migrate

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"
)

func obj(kind string, fields map[string]any) unstructured.Unstructured {
	o := map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": kind, "metadata": map[string]any{"name": "web", "namespace": "ns", "generation": int64(3)}}
	for k, v := range fields {
		o[k] = v
	}
	return unstructured.Unstructured{Object: o}
}

func TestInFlight(t *testing.T) {
	for _, c := range []struct {
		name string
		o    unstructured.Unstructured
		want string // substring; "" = not in flight
	}{
		{"rolled out", obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(3), "updatedReplicas": int64(2)}}), ""},
		{"rollout in flight", obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(3), "updatedReplicas": int64(1)}}), "rollout is in flight"},
		{"not observed", obj("StatefulSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"observedGeneration": int64(2), "updatedReplicas": int64(2)}}), "not caught up"},
		{"replicas default 1", obj("StatefulSet", map[string]any{"status": map[string]any{"updatedReplicas": int64(1)}}), ""},
		{"daemonset rolling", obj("DaemonSet", map[string]any{"status": map[string]any{"desiredNumberScheduled": int64(2), "updatedNumberScheduled": int64(1)}}), "rollout is in flight"},
		{"recreate running", obj("ContainerRecreateRequest", map[string]any{"status": map[string]any{"phase": "Recreating"}}), "under way"},
		{"recreate done", obj("ContainerRecreateRequest", map[string]any{"status": map[string]any{"phase": "Completed"}}), ""},
		{"sidecarset", obj("SidecarSet", nil), ""},
	} {
		got := inFlight(c.o)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: inFlight = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCleanForCreate(t *testing.T) {
	o := obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}, "status": map[string]any{"replicas": int64(2)}})
	o.SetUID("old")
	o.SetResourceVersion("42")
	o.SetFinalizers([]string{"apps.kruise.io/x"})
	o.SetLabels(map[string]string{"app": "web"})
	o.SetOwnerReferences([]metav1.OwnerReference{
		{APIVersion: "apps.kruise.io/v1alpha1", Kind: "UnitedDeployment", Name: "ud", UID: "u1", Controller: ptr.To(true)},
		{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "r", UID: "r1"},
	})
	c := cleanForCreate(o)
	if c.GetUID() != "" || c.GetResourceVersion() != "" || c.GetGeneration() != 0 || len(c.GetFinalizers()) != 0 || c.Object["status"] != nil {
		t.Errorf("server fields, finalizers or status kept: %v", c.Object)
	}
	if refs := c.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Rollout" {
		t.Errorf("owners %v, want only the Rollout", refs)
	}
	if c.GetLabels()["app"] != "web" || c.Object["spec"] == nil {
		t.Errorf("labels or spec lost: %v", c.Object)
	}
	if o.GetUID() != "old" {
		t.Error("the original was changed")
	}
}

func TestMergeDependents(t *testing.T) {
	ref := func(uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: "CloneSet", Name: "web", UID: types.UID("cs-" + uid)}}
	}
	have := []Dependent{{Name: "a", UID: "a", Refs: ref("1")}}
	got := mergeDependents(have, []Dependent{{Name: "a", UID: "a", Refs: ref("1")}, {Name: "b", UID: "b", Refs: ref("1")}})
	if len(got) != 2 || got[1].Name != "b" {
		t.Errorf("merged %v, want a and b once each", got)
	}
}

func TestBackupRoundTripAndState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.yaml")
	if err := saveBackup(path, []unstructured.Unstructured{obj("CloneSet", map[string]any{"spec": map[string]any{"replicas": int64(2)}})}); err != nil {
		t.Fatal(err)
	}
	objs, err := LoadBackup(path)
	if err != nil || len(objs) != 1 || objs[0].GetName() != "web" || objs[0].GetKind() != "CloneSet" {
		t.Fatalf("LoadBackup = %v, %v", objs, err)
	}
	// The backup is a List that loadManifests (and kubectl apply -f) unpack.
	items, err := loadManifests(path)
	if err != nil || len(items) != 1 {
		t.Fatalf("loadManifests = %v, %v", items, err)
	}
	s, resume, err := loadState(StatePath(path))
	if err != nil || resume {
		t.Fatalf("no state yet: resume %v, %v", resume, err)
	}
	s.Done[StepOrphan] = true
	s.Dependents = []Dependent{{Resource: "pods", Namespace: "ns", Name: "web-a", UID: "p1", Refs: []metav1.OwnerReference{{Kind: "CloneSet", Name: "web", UID: "old"}}}}
	if err := saveState(StatePath(path), s); err != nil {
		t.Fatal(err)
	}
	s2, resume, err := loadState(StatePath(path))
	if err != nil || !resume || !s2.Done[StepOrphan] || len(s2.Dependents) != 1 || s2.Dependents[0].Refs[0].UID != "old" {
		t.Fatalf("state after reload: %+v resume %v err %v", s2, resume, err)
	}
	if _, err := os.Stat(StatePath(path) + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestLoadAPIServices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.yaml")
	doc := "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1alpha1.apps.kruise.io\nspec:\n  service: {namespace: inplace-system, name: inplace-apiserver}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAPIServices(path); err == nil || !strings.Contains(err.Error(), "not an APIService") {
		t.Errorf("a ConfigMap among APIServices: err %v", err)
	}
	if err := os.WriteFile(path, []byte(strings.SplitN(doc, "---", 2)[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := loadAPIServices(path); err != nil || len(s) != 1 || s[0].GetName() != "v1alpha1.apps.kruise.io" {
		t.Errorf("loadAPIServices = %v, %v", s, err)
	}
}

// TestOrphanOnlyMigratingOwners: the orphan step takes the references to the objects being
// migrated and nothing else: a reference to an apps.kruise.io owner that is gone (the garbage
// collector is about to delete its Pod) and a Pod's other owners stay as they are.
func TestOrphanOnlyMigratingOwners(t *testing.T) {
	migrated := obj("CloneSet", nil)
	migrated.SetUID("cs-1")
	kruise := func(uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: types.UID(uid), Controller: ptr.To(true)}
	}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "cm-1"}
	pod := func(name string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
		p := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
		p.SetNamespace("ns")
		p.SetName(name)
		p.SetUID(types.UID("uid-" + name))
		p.SetOwnerReferences(refs)
		return p
	}
	scheme := runtime.NewScheme()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		dependentGVRs["pods"]: "PodList", dependentGVRs["persistentvolumeclaims"]: "PersistentVolumeClaimList",
		dependentGVRs["controllerrevisions"]: "ControllerRevisionList",
	}, pod("mine", kruise("cs-1"), other), pod("dangling", kruise("gone")), pod("plain", other))

	m := &Migrator{Dynamic: client, Opts: Options{Backup: filepath.Join(t.TempDir(), "backup.yaml"), Out: &strings.Builder{}},
		state: &State{Done: map[string]bool{}}, objs: []unstructured.Unstructured{migrated}}
	if err := m.orphan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(m.state.Dependents) != 1 || m.state.Dependents[0].Name != "mine" || len(m.state.Dependents[0].Refs) != 1 || m.state.Dependents[0].Refs[0].UID != "cs-1" {
		t.Fatalf("recorded dependents %+v, want only Pod mine with its reference to cs-1", m.state.Dependents)
	}
	want := map[string][]types.UID{"mine": {"cm-1"}, "dangling": {"gone"}, "plain": {"cm-1"}}
	for name, uids := range want {
		got, err := client.Resource(dependentGVRs["pods"]).Namespace("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var have []types.UID
		for _, r := range got.GetOwnerReferences() {
			have = append(have, r.UID)
		}
		if !reflect.DeepEqual(have, uids) {
			t.Errorf("Pod %s owners %v after orphan, want %v", name, have, uids)
		}
	}
}

// TestRecreateKeepsFinishedRequestsInTheBackup: recreate creates the CloneSet and not the
// finished ContainerRecreateRequest (created without status, it would run again), and says so.
func TestRecreateKeepsFinishedRequestsInTheBackup(t *testing.T) {
	cs := obj("CloneSet", nil)
	cs.SetName("web")
	crr := obj("ContainerRecreateRequest", map[string]any{"status": map[string]any{"phase": "Completed"}})
	crr.SetName("restart")
	kinds := []Kind{
		{CRD: "clonesets.apps.kruise.io", Kind: "CloneSet", Plural: "clonesets", Version: "v1alpha1", Namespaced: true},
		{CRD: "containerrecreaterequests.apps.kruise.io", Kind: "ContainerRecreateRequest", Plural: "containerrecreaterequests", Version: "v1alpha1", Namespaced: true},
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kinds[0].gvr(): "CloneSetList", kinds[1].gvr(): "ContainerRecreateRequestList",
	})
	out := &strings.Builder{}
	m := &Migrator{Dynamic: client, Opts: Options{Backup: filepath.Join(t.TempDir(), "backup.yaml"), Out: out},
		state: &State{Done: map[string]bool{}, Kinds: kinds, NewUIDs: map[string]types.UID{}}, objs: []unstructured.Unstructured{cs, crr}}
	if err := m.recreate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(kinds[0].gvr()).Namespace(cs.GetNamespace()).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the CloneSet was not re-created: %v", err)
	}
	if _, err := client.Resource(kinds[1].gvr()).Namespace(crr.GetNamespace()).Get(context.Background(), "restart", metav1.GetOptions{}); err == nil {
		t.Errorf("the finished ContainerRecreateRequest was re-created")
	}
	if !strings.Contains(out.String(), "ContainerRecreateRequest "+crr.GetNamespace()+"/restart (finished") {
		t.Errorf("output does not say the request stays in the backup:\n%s", out)
	}
	if created, kept := m.carried(); created != 1 || kept != 1 {
		t.Errorf("carried() = %d, %d; want 1 created, 1 kept", created, kept)
	}
}
