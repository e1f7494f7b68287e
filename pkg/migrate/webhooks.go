package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kruiseWebhooks names OpenKruise's webhook configurations (kruise-*).
func (m *Migrator) kruiseWebhooks(ctx context.Context) ([]string, error) {
	var names []string
	mut, err := m.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing MutatingWebhookConfigurations: %w", err)
	}
	for _, w := range mut.Items {
		if strings.HasPrefix(w.Name, "kruise-") {
			names = append(names, "mutatingwebhookconfiguration/"+w.Name)
		}
	}
	val, err := m.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing ValidatingWebhookConfigurations: %w", err)
	}
	for _, w := range val.Items {
		if strings.HasPrefix(w.Name, "kruise-") {
			names = append(names, "validatingwebhookconfiguration/"+w.Name)
		}
	}
	return names, nil
}

// deleteWebhooks deletes OpenKruise's webhook configurations (saved in the progress file): with
// kruise-manager stopped they fail closed and would block the Pod updates that follow.
func (m *Migrator) deleteWebhooks(ctx context.Context) error {
	names, err := m.kruiseWebhooks(ctx)
	if err != nil {
		return err
	}
	adm := m.Kube.AdmissionregistrationV1()
	for _, n := range names {
		kind, name, _ := strings.Cut(n, "/")
		var obj any
		var del func() error
		// The record carries its kind and apiVersion (kubectl apply takes it back as it is).
		typeMeta := metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"}
		if kind == "mutatingwebhookconfiguration" {
			typeMeta.Kind = "MutatingWebhookConfiguration"
			var w *admissionv1.MutatingWebhookConfiguration
			w, err = adm.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				w.TypeMeta, obj = typeMeta, w
			}
			del = func() error { return adm.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}) }
		} else {
			var w *admissionv1.ValidatingWebhookConfiguration
			w, err = adm.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				w.TypeMeta, obj = typeMeta, w
			}
			del = func() error { return adm.ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{}) }
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", n, err)
		}
		// A run that crashed between the record and the delete recorded it already.
		if !webhookRecorded(m.state.Webhooks, typeMeta.Kind, name) {
			raw, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			m.state.Webhooks = append(m.state.Webhooks, raw)
			if err := saveState(StatePath(m.Opts.Backup), m.state); err != nil {
				return err
			}
		}
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", n, err)
		}
		m.printf("  deleted %s", n)
	}
	return nil
}

// webhookRecorded tells whether the webhook configuration of that kind and name is recorded.
func webhookRecorded(records []json.RawMessage, kind, name string) bool {
	for _, raw := range records {
		var r struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Kind == kind && r.Metadata.Name == name {
			return true
		}
	}
	return false
}
