package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// migrating holds the UIDs of the apps.kruise.io objects being migrated. Only references to them
// are orphaned and given back: an apps.kruise.io reference to anything else (an owner already
// deleted, whose dependents the garbage collector is about to delete, or an object that is not
// stored in the CRDs being migrated) is left as it is, so a migration never rescues a Pod from
// its owner's cascading deletion nor takes Pods that are not its own.
type migrating map[types.UID]bool

func (m *Migrator) migrating() migrating {
	set := migrating{}
	for _, o := range m.objs {
		set[o.GetUID()] = true
	}
	return set
}

func (set migrating) owns(r metav1.OwnerReference) bool {
	return isKruiseRef(r) && set[r.UID]
}

func (set migrating) ownsAny(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if set.owns(r) {
			return true
		}
	}
	return false
}

// isKruiseRef tells whether the reference is to an object of a carried group.
func isKruiseRef(r metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && carriedGroup(gv.Group)
}

// findDependents lists the Pods, PVCs and ControllerRevisions owned by the objects being migrated.
func (m *Migrator) findDependents(ctx context.Context) ([]Dependent, error) {
	set := m.migrating()
	var deps []Dependent
	for _, res := range dependentOrder {
		list, err := m.Dynamic.Resource(dependentGVRs[res]).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", res, err)
		}
		for _, o := range list.Items {
			var refs []metav1.OwnerReference
			for _, r := range o.GetOwnerReferences() {
				if set.owns(r) {
					refs = append(refs, r)
				}
			}
			if len(refs) > 0 {
				deps = append(deps, Dependent{Resource: res, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID(), Refs: refs})
			}
		}
	}
	return deps, nil
}

// orphan removes the apps.kruise.io ownerReferences of the Pods, PVCs and ControllerRevisions,
// recording each first: deleting the CRDs then deletes the objects and the garbage collector has
// nothing to cascade to.
func (m *Migrator) orphan(ctx context.Context) error {
	deps, err := m.findDependents(ctx)
	if err != nil {
		return err
	}
	if len(deps) == 0 {
		return nil
	}
	// Record before changing anything: a crash after a patch must still know the owner.
	m.state.Dependents = mergeDependents(m.state.Dependents, deps)
	if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
		return err
	}
	set := m.migrating()
	for _, d := range deps {
		if err := m.setOwners(ctx, d, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			var kept []metav1.OwnerReference
			for _, r := range refs {
				if !set.owns(r) {
					kept = append(kept, r)
				}
			}
			return kept
		}); err != nil {
			return err
		}
	}
	m.printf("  orphaned %d dependents", len(deps))
	return nil
}

// mergeDependents adds the newly found dependents (a re-run finds only those not orphaned yet).
func mergeDependents(have, found []Dependent) []Dependent {
	seen := map[types.UID]int{}
	for i, d := range have {
		seen[d.UID] = i
	}
	for _, d := range found {
		if i, ok := seen[d.UID]; ok {
			have[i].Refs = d.Refs
			continue
		}
		have = append(have, d)
	}
	return have
}

// setOwners rewrites the dependent's ownerReferences with a JSON patch that tests the UID and the
// references it read: nothing else of the object is written (a Pod is not updated), and a
// concurrent change of its owners makes it read again.
func (m *Migrator) setOwners(ctx context.Context, d Dependent, change func([]metav1.OwnerReference) []metav1.OwnerReference) error {
	client := m.Dynamic.Resource(dependentGVRs[d.Resource]).Namespace(d.Namespace)
	for attempt := 0; ; attempt++ {
		obj, err := client.Get(ctx, d.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			m.printf("  warning: %s %s/%s is gone", d.Resource, d.Namespace, d.Name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", d.Resource, d.Namespace, d.Name, err)
		}
		if obj.GetUID() != d.UID {
			m.printf("  warning: %s %s/%s is another object now (UID %s, was %s): left alone", d.Resource, d.Namespace, d.Name, obj.GetUID(), d.UID)
			return nil
		}
		old := obj.GetOwnerReferences()
		updated := change(old)
		if equalRefs(old, updated) {
			return nil
		}
		if updated == nil {
			updated = []metav1.OwnerReference{}
		}
		patch := []map[string]any{
			{"op": "test", "path": "/metadata/uid", "value": d.UID},
			{"op": "test", "path": "/metadata/ownerReferences", "value": old},
			{"op": "replace", "path": "/metadata/ownerReferences", "value": updated},
		}
		if old == nil {
			patch = []map[string]any{
				{"op": "test", "path": "/metadata/uid", "value": d.UID},
				{"op": "add", "path": "/metadata/ownerReferences", "value": updated},
			}
		}
		raw, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, d.Name, types.JSONPatchType, raw, metav1.PatchOptions{})
		if err == nil {
			return nil
		}
		if (apierrors.IsInvalid(err) || apierrors.IsConflict(err) || strings.Contains(err.Error(), "test")) && attempt < 5 {
			continue
		}
		return fmt.Errorf("setting the ownerReferences of %s %s/%s: %w", d.Resource, d.Namespace, d.Name, err)
	}
}

func equalRefs(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID || a[i].Kind != b[i].Kind || a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}
