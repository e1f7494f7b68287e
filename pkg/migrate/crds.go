package migrate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// deleteCRDs deletes the CRDs of the carried groups, which deletes their objects, and waits until
// they are gone and kube-apiserver's autoregistration has let go of the groups' APIServices. Before,
// it orphans again (a dependent created since) and releases the objects (their finalizers and
// deletion protection dropped; the objects are in the backup).
func (m *Migrator) deleteCRDs(ctx context.Context) error {
	if err := m.orphan(ctx); err != nil {
		return err
	}
	for _, k := range m.state.Kinds {
		if err := m.release(ctx, k); err != nil {
			return err
		}
		if err := m.Dynamic.Resource(crdGVR).Delete(ctx, k.CRD, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CustomResourceDefinition %s: %w", k.CRD, err)
		}
		m.printf("  deleted CustomResourceDefinition %s", k.CRD)
	}
	if err := m.poll(ctx, "the CustomResourceDefinitions of "+kindGroups(m.state.Kinds)+" gone", func(ctx context.Context) (bool, error) {
		for _, k := range m.state.Kinds {
			if _, err := m.Dynamic.Resource(crdGVR).Get(ctx, k.CRD, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("%s still there (%v)", k.CRD, err)
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	return m.poll(ctx, "kube-apiserver's CRD APIServices of "+kindGroups(m.state.Kinds)+" gone", func(ctx context.Context) (bool, error) {
		for _, name := range apiServiceNames(m.state.Kinds) {
			if local, err := m.localAPIService(ctx, name); err != nil || local {
				return false, fmt.Errorf("APIService %s still local (%v)", name, err)
			}
		}
		return true, nil
	})
}

// localAPIService tells whether the APIService exists and is served by kube-apiserver itself (no
// spec.service: a CRD's autoregistered one).
func (m *Migrator) localAPIService(ctx context.Context, name string) (bool, error) {
	s, err := m.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service")
	return svc == nil, nil
}

// servedByInplace tells whether the APIService exists and is served by a Service (inplace's).
func (m *Migrator) servedByInplace(ctx context.Context, name string) (bool, error) {
	s, err := m.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service")
	return svc != nil, nil
}

// protectionLabel is OpenKruise's deletion-protection label (policy.kruise.io/delete-protection).
const protectionLabel = "policy.kruise.io/delete-protection"

// release readies the objects of a kind for their deletion by the migration: it drops their
// finalizers (the controllers that would remove them are stopped) and their deletion-protection
// label (inplace's admission would refuse to delete a protected one on the way back). Both are in
// the backup, which the objects are re-created from on the other side.
func (m *Migrator) release(ctx context.Context, k Kind) error {
	list, err := m.Dynamic.Resource(k.gvr()).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", k.CRD, err)
	}
	for _, o := range list.Items {
		if _, protected := o.GetLabels()[protectionLabel]; len(o.GetFinalizers()) == 0 && !protected {
			continue
		}
		var client dynamic.ResourceInterface = m.Dynamic.Resource(k.gvr())
		if k.Namespaced {
			client = m.Dynamic.Resource(k.gvr()).Namespace(o.GetNamespace())
		}
		patch := `{"metadata":{"finalizers":null,"labels":{"` + protectionLabel + `":null}}}`
		if _, err := client.Patch(ctx, o.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers and deletion protection of %s %s/%s: %w", k.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}
