package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// registerAPIServices applies inplace's APIServices (when given) and waits until each APIService
// of the carried kinds' groups (apps.kruise.io, and policy.kruise.io when OpenKruise had its CRD)
// and each one applied is served by a Service and Available.
func (m *Migrator) registerAPIServices(ctx context.Context) error {
	names := apiServiceNames(m.state.Kinds)
	if m.Opts.APIServices != "" {
		services, err := loadAPIServices(m.Opts.APIServices)
		if err != nil {
			return err
		}
		for _, s := range services {
			if err := m.applyAPIService(ctx, s); err != nil {
				return err
			}
			if !slices.Contains(names, s.GetName()) {
				names = append(names, s.GetName())
			}
		}
	}
	return m.poll(ctx, "inplace's APIServices Available", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			s, err := m.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("APIService %s: %w", name, err)
			}
			if svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service"); svc == nil {
				return false, fmt.Errorf("APIService %s is not inplace's (no service)", name)
			}
			if !available(s) {
				return false, fmt.Errorf("APIService %s not Available", name)
			}
		}
		return true, nil
	})
}

func available(s *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Available" && cm["status"] == "True" {
			return true
		}
	}
	return false
}

func (m *Migrator) applyAPIService(ctx context.Context, s unstructured.Unstructured) error {
	client := m.Dynamic.Resource(apiServiceGVR)
	s = *s.DeepCopy()
	s.SetResourceVersion("")
	s.SetUID("")
	delete(s.Object, "status")
	_, err := client.Create(ctx, &s, metav1.CreateOptions{})
	if err == nil {
		m.printf("  registered APIService %s", s.GetName())
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating APIService %s: %w", s.GetName(), err)
	}
	existing, err := client.Get(ctx, s.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading APIService %s: %w", s.GetName(), err)
	}
	existing.Object["spec"] = s.Object["spec"]
	if _, err := client.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating APIService %s: %w", s.GetName(), err)
	}
	return nil
}

// loadAPIServices reads APIService manifests: YAML documents, each an APIService or a List of them.
func loadAPIServices(path string) ([]unstructured.Unstructured, error) {
	objs, err := loadManifests(path)
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "APIService" {
			return nil, fmt.Errorf("%s: %s %s is not an APIService", path, o.GetKind(), o.GetName())
		}
		out = append(out, o)
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no APIService")
	}
	return out, nil
}
