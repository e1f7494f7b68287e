package migrate

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// recreate creates every saved object through inplace under the same name, with its spec,
// labels, annotations and non-apps.kruise.io owners, then writes its status when inplace takes it.
func (m *Migrator) recreate(ctx context.Context) error {
	for _, o := range m.objs {
		if finishedRequest(o) {
			m.printf("  kept in %s only: %s %s/%s (finished; created again it would run again)", m.Opts.Backup, o.GetKind(), o.GetNamespace(), o.GetName())
			continue
		}
		k, ok := m.kindOfObject(o)
		if !ok {
			return fmt.Errorf("%s %s/%s: no CRD recorded for its kind", o.GetKind(), o.GetNamespace(), o.GetName())
		}
		var client dynamic.ResourceInterface = m.Dynamic.Resource(k.gvr())
		if k.Namespaced {
			client = m.Dynamic.Resource(k.gvr()).Namespace(o.GetNamespace())
		}
		created, err := client.Create(ctx, cleanForCreate(o), metav1.CreateOptions{})
		fresh := err == nil
		if apierrors.IsAlreadyExists(err) {
			// Created by an earlier run (whose status write, if it crashed before, the controller
			// makes up for).
			created, err = client.Get(ctx, o.GetName(), metav1.GetOptions{})
		}
		if err != nil {
			return fmt.Errorf("re-creating %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		m.state.NewUIDs[objectKey(o.GetKind(), o.GetNamespace(), o.GetName())] = created.GetUID()
		if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
			return err
		}
		if status := o.Object["status"]; fresh && !isEmpty(status) {
			created.Object["status"] = status
			if _, err := client.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				m.printf("  note: status of %s %s/%s not written (%v): its controller writes it", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
		m.printf("  re-created %s %s/%s (uid %s)", o.GetKind(), o.GetNamespace(), o.GetName(), created.GetUID())
	}
	return nil
}

// finishedRequest is true for a ContainerRecreateRequest (the preflight lets only Completed ones
// through). It is not re-created: an object is created without its status, and a request without
// status is new work to the daemon that serves it, which would recreate the containers again
// before the status could be written. The backup keeps it.
func finishedRequest(o unstructured.Unstructured) bool {
	return o.GetKind() == "ContainerRecreateRequest"
}

// carried counts the objects recreate creates (the saved ones but the finished requests).
func (m *Migrator) carried() (created, kept int) {
	for _, o := range m.objs {
		if finishedRequest(o) {
			kept++
		} else {
			created++
		}
	}
	return created, kept
}

func isEmpty(v any) bool {
	mv, ok := v.(map[string]any)
	return v == nil || ok && len(mv) == 0
}

// cleanForCreate is the object without what the server owns (uid, resourceVersion, timestamps,
// generation, managed fields), OpenKruise's finalizers (its controllers are gone), its
// apps.kruise.io owners (given UIDs that no longer exist) and its status (written afterwards).
func cleanForCreate(o unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	var refs []metav1.OwnerReference
	for _, r := range o.GetOwnerReferences() {
		if !isKruiseRef(r) {
			refs = append(refs, r)
		}
	}
	c.SetOwnerReferences(refs)
	delete(c.Object, "status")
	return c
}

// adopt gives each dependent its apps.kruise.io owners back, with the UIDs of the re-created
// objects, so that inplace's controllers find their Pods, PVCs and revisions as theirs.
func (m *Migrator) adopt(ctx context.Context) error {
	adopted := 0
	for _, d := range m.state.Dependents {
		var add []metav1.OwnerReference
		for _, r := range d.Refs {
			uid, ok := m.state.NewUIDs[m.ownerKey(r, d.Namespace)]
			if !ok {
				m.printf("  warning: %s %s/%s: its owner %s %s was not re-created; left without it", d.Resource, d.Namespace, d.Name, r.Kind, r.Name)
				continue
			}
			r.UID = uid
			add = append(add, r)
		}
		if len(add) == 0 {
			continue
		}
		if d.Resource == "controllerrevisions" && ownedBy(add, "SidecarSet") && d.Namespace != m.revisionNamespace() {
			if err := m.moveRevision(ctx, d, add); err != nil {
				return err
			}
			adopted++
			continue
		}
		if err := m.setOwners(ctx, d, func(refs []metav1.OwnerReference) []metav1.OwnerReference {
			out := append([]metav1.OwnerReference(nil), refs...)
			for _, a := range add {
				if hasRef(out, a) {
					continue
				}
				if a.Controller != nil && *a.Controller && metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: out}) != nil {
					m.printf("  warning: %s %s/%s has another controller now; %s %s not made its owner", d.Resource, d.Namespace, d.Name, a.Kind, a.Name)
					continue
				}
				out = append(out, a)
			}
			return out
		}); err != nil {
			return err
		}
		adopted++
	}
	m.printf("  gave %d dependents their owners back", adopted)
	return nil
}

// ownerKey is the NewUIDs key of the dependent's owner r: a cluster-scoped owner (a SidecarSet,
// whose revisions live in a namespace) is keyed without the dependent's namespace.
func (m *Migrator) ownerKey(r metav1.OwnerReference, dependentNamespace string) string {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	if k, ok := m.kindOf(gv.Group, r.Kind); ok && !k.Namespaced {
		return objectKey(r.Kind, "", r.Name)
	}
	return objectKey(r.Kind, dependentNamespace, r.Name)
}

func ownedBy(refs []metav1.OwnerReference, kind string) bool {
	for _, r := range refs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// revisionNamespace is where the SidecarSet controller of the side being migrated to keeps the
// SidecarSets' ControllerRevisions.
func (m *Migrator) revisionNamespace() string {
	if m.Opts.ToOpenKruise {
		return m.Opts.KruiseNamespace
	}
	return m.Opts.InplaceNamespace
}

// moveRevision moves a SidecarSet's ControllerRevision from OpenKruise's namespace to inplace's
// (or back), where the SidecarSet controller looks for the SidecarSet's revisions: the same name, labels,
// annotations, data and number (so a Pod's recorded controllerRevision still names it, and the
// controller finds its current spec recorded instead of writing a new revision), owned by the
// re-created SidecarSet. The copy is created before the original (tested by UID) is deleted: a
// re-run after a crash finds the copy there, or the original gone.
func (m *Migrator) moveRevision(ctx context.Context, d Dependent, owners []metav1.OwnerReference) error {
	from := m.Kube.AppsV1().ControllerRevisions(d.Namespace)
	old, err := from.Get(ctx, d.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // moved by an earlier run
	}
	if err != nil {
		return fmt.Errorf("reading ControllerRevision %s/%s: %w", d.Namespace, d.Name, err)
	}
	if old.UID != d.UID {
		m.printf("  warning: controllerrevisions %s/%s is another object now (UID %s, was %s): left alone", d.Namespace, d.Name, old.UID, d.UID)
		return nil
	}
	refs := owners
	for _, r := range old.OwnerReferences {
		if !isKruiseRef(r) && !hasRef(refs, r) {
			refs = append(refs, r)
		}
	}
	moved := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: m.revisionNamespace(), Labels: old.Labels, Annotations: old.Annotations, OwnerReferences: refs},
		Data:       old.Data,
		Revision:   old.Revision,
	}
	if _, err := m.Kube.AppsV1().ControllerRevisions(m.revisionNamespace()).Create(ctx, moved, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("copying ControllerRevision %s/%s to %s: %w", d.Namespace, d.Name, m.revisionNamespace(), err)
	}
	err = from.Delete(ctx, d.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &d.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ControllerRevision %s/%s (moved to %s): %w", d.Namespace, d.Name, m.revisionNamespace(), err)
	}
	m.printf("  moved ControllerRevision %s/%s of SidecarSet to %s", d.Namespace, d.Name, m.revisionNamespace())
	return nil
}

func hasRef(refs []metav1.OwnerReference, r metav1.OwnerReference) bool {
	for _, x := range refs {
		if x.UID == r.UID {
			return true
		}
	}
	return false
}

// verify checks that every Pod the objects owned is the same Pod, with the same images and
// restart counts.
func (m *Migrator) verify(ctx context.Context) error {
	var problems []string
	for _, s := range m.state.Pods {
		p, err := m.Kube.CoreV1().Pods(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("Pod %s/%s: %v", s.Namespace, s.Name, err))
			continue
		}
		if p.UID != s.UID {
			problems = append(problems, fmt.Sprintf("Pod %s/%s was recreated (UID %s, was %s)", s.Namespace, s.Name, p.UID, s.UID))
			continue
		}
		for _, c := range p.Spec.Containers {
			if c.Image != s.Images[c.Name] {
				problems = append(problems, fmt.Sprintf("Pod %s/%s container %s: image %s, was %s", s.Namespace, s.Name, c.Name, c.Image, s.Images[c.Name]))
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount != s.Restarts[c.Name] {
				problems = append(problems, fmt.Sprintf("Pod %s/%s container %s: restartCount %d, was %d", s.Namespace, s.Name, c.Name, c.RestartCount, s.Restarts[c.Name]))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the migrated Pods changed:\n  %s", strings.Join(problems, "\n  "))
	}
	m.printf("  %d Pods unchanged", len(m.state.Pods))
	return nil
}
