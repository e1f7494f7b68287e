package migrate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	if k := got["clonesets.apps.kruise.io"]; k != (Kind{CRD: "clonesets.apps.kruise.io", Kind: "CloneSet", Plural: "clonesets", Version: "v1alpha1", Namespaced: true}) {
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
		if !carried[k.Plural] || k.Version == "" {
			t.Errorf("%+v: not a kind inplace serves, or no version", k)
		}
	}
}

func TestLoadCRDsRefusesAFileWithoutKruiseCRDs(t *testing.T) {
	_, err := loadCRDs(writeTemp(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), "no CustomResourceDefinition of apps.kruise.io") {
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

func TestKindVersions(t *testing.T) {
	got := kindVersions([]Kind{{Version: "v1beta1"}, {Version: "v1alpha1"}, {Version: "v1beta1"}})
	if !reflect.DeepEqual(got, []string{"v1alpha1", "v1beta1"}) {
		t.Errorf("kindVersions = %v", got)
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
