package migrate

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// recreate creates every saved object through inplace under the same name, with its spec,
// labels, annotations and non-apps.kruise.io owners, then writes its status when inplace takes it.
func (m *Migrator) recreate(ctx context.Context) error {
	for _, o := range m.objs {
		k, ok := m.kindOf(o.GetKind())
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
			uid, ok := m.state.NewUIDs[objectKey(r.Kind, d.Namespace, r.Name)]
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
