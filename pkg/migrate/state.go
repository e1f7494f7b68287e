// Package migrate moves a cluster's apps.kruise.io and policy.kruise.io objects from OpenKruise's
// CustomResourceDefinitions to inplace's aggregated API without touching a Pod: it saves every object, orphans the Pods,
// PVCs and ControllerRevisions they own, deletes the CRDs (which frees the APIServices that
// kube-apiserver's CRD autoregistration holds), registers inplace's APIServices, re-creates every
// object under the same name and gives the dependents back their owners (with the new UIDs).
// Each step is idempotent, and the progress is recorded next to the backup so that a re-run
// after a crash carries on. With Options.ToOpenKruise it goes the way back (back.go), through
// the same step machinery. docs/migration.md is the operator's guide.
package migrate

import (
	"encoding/json"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// The API groups the migration carries, OpenKruise's and inplace's.
const (
	// Group is apps.kruise.io: the workloads, SidecarSets, requests and jobs. A Kind recorded
	// without a group (a state file of a version before PolicyGroup was carried) is of this group.
	Group = "apps.kruise.io"
	// PolicyGroup is policy.kruise.io: PodUnavailableBudgets. An older OpenKruise has no CRD of it
	// and an older inplace does not serve it: then there is nothing of it to carry.
	PolicyGroup = "policy.kruise.io"
)

// Groups are the groups carried, in the order their kinds are handled.
var Groups = []string{Group, PolicyGroup}

// The steps, in order. State.Done records each one finished.
const (
	StepBackup      = "backup"
	StepWebhooks    = "webhooks"
	StepOrphan      = "orphan"
	StepCRDs        = "crds"
	StepAPIServices = "apiservices"
	StepRecreate    = "recreate"
	StepAdopt       = "adopt"
	StepVerify      = "verify"
)

// Steps are the steps in the order they run.
var Steps = []string{StepBackup, StepWebhooks, StepOrphan, StepCRDs, StepAPIServices, StepRecreate, StepAdopt, StepVerify}

// Kind is one CRD of a carried group: its group, kind, plural, scope and the version its objects
// are saved and re-created at (the CRD's storage version).
type Kind struct {
	CRD string `json:"crd"`
	// Group is the CRD's group; "" (a state file written before it was recorded) is Group.
	Group      string `json:"group,omitempty"`
	Kind       string `json:"kind"`
	Plural     string `json:"plural"`
	Version    string `json:"version"`
	Namespaced bool   `json:"namespaced"`
}

// Dependent is a Pod, PVC or ControllerRevision whose apps.kruise.io ownerReferences the
// migration removed (Refs, with OpenKruise's UIDs) and gives back with the new owners' UIDs.
type Dependent struct {
	Resource  string                  `json:"resource"` // pods, persistentvolumeclaims, controllerrevisions
	Namespace string                  `json:"namespace"`
	Name      string                  `json:"name"`
	UID       types.UID               `json:"uid"`
	Refs      []metav1.OwnerReference `json:"refs"`
}

// PodSnapshot is what must not change in a Pod: its UID, images and restart counts.
type PodSnapshot struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	UID       types.UID         `json:"uid"`
	Images    map[string]string `json:"images"`
	Restarts  map[string]int32  `json:"restarts"`
}

// State is the migration's progress, written to BACKUP.state.json after every step.
type State struct {
	// Direction is DirectionToOpenKruise for the way back, "" for the migration to inplace: one
	// state file (one --backup) records one of them.
	Direction  string            `json:"direction,omitempty"`
	Done       map[string]bool   `json:"done"`
	Kinds      []Kind            `json:"kinds"`
	Webhooks   []json.RawMessage `json:"webhooks,omitempty"`
	Dependents []Dependent       `json:"dependents,omitempty"`
	Pods       []PodSnapshot     `json:"pods,omitempty"`
	// NewUIDs maps "kind/namespace/name" of a re-created object to its UID in inplace.
	NewUIDs map[string]types.UID `json:"newUIDs,omitempty"`
}

func (s *State) allDone(steps []string) bool {
	for _, step := range steps {
		if !s.Done[step] {
			return false
		}
	}
	return true
}

// StatePath is where the progress of the migration with that backup file is kept.
func StatePath(backup string) string { return backup + ".state.json" }

func loadState(path string) (*State, bool, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return &State{Done: map[string]bool{}, NewUIDs: map[string]types.UID{}}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the migration's progress %s: %w", path, err)
	}
	s := &State{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, false, fmt.Errorf("decoding the migration's progress %s: %w", path, err)
	}
	if s.Done == nil {
		s.Done = map[string]bool{}
	}
	if s.NewUIDs == nil {
		s.NewUIDs = map[string]types.UID{}
	}
	for i := range s.Kinds {
		s.Kinds[i].Group = s.Kinds[i].group()
	}
	return s, true, nil
}

// writeFileAtomic writes through a temporary file and a rename, so that a crash leaves the old
// content or the new, never half of it.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func saveState(path string, s *State) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, raw); err != nil {
		return fmt.Errorf("writing the migration's progress %s: %w", path, err)
	}
	return nil
}

// saveBackup writes the objects as a YAML v1 List: `kubectl apply -f` (after OpenKruise's CRDs
// are back) restores them.
func saveBackup(path string, objs []unstructured.Unstructured) error {
	items := make([]any, 0, len(objs))
	for i := range objs {
		items = append(items, objs[i].Object)
	}
	raw, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return fmt.Errorf("encoding the backup: %w", err)
	}
	if err := writeFileAtomic(path, raw); err != nil {
		return fmt.Errorf("writing the backup %s: %w", path, err)
	}
	return nil
}

// LoadBackup reads a backup file written by the migration.
func LoadBackup(path string) ([]unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the backup %s: %w", path, err)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decoding the backup %s: %w", path, err)
	}
	objs := make([]unstructured.Unstructured, 0, len(list.Items))
	for _, it := range list.Items {
		objs = append(objs, unstructured.Unstructured{Object: it})
	}
	return objs, nil
}

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }
