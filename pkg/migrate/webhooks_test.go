package migrate

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// TestDeleteWebhooksRecordsOnce: each kruise-* webhook configuration is recorded once, with its
// kind and apiVersion, then deleted; a re-run after a crash between the record and the delete
// deletes it without recording it twice.
func TestDeleteWebhooksRecordsOnce(t *testing.T) {
	ctx := context.Background()
	mutating := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kruise-mutating-webhook-configuration"}}
	validating := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "kruise-validating-webhook-configuration"}}
	other := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "istio-validator"}}
	kube := kubefake.NewSimpleClientset(mutating, validating, other)
	m := &Migrator{Kube: kube, Opts: Options{Backup: filepath.Join(t.TempDir(), "b.yaml"), Out: io.Discard}, state: &State{}}

	// The crashed run recorded the mutating one (with its kind) and did not delete it.
	crashed := mutating.DeepCopy()
	crashed.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"}
	raw, _ := json.Marshal(crashed)
	m.state.Webhooks = []json.RawMessage{raw}

	if err := m.deleteWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range m.state.Webhooks {
		var tm struct {
			metav1.TypeMeta
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(r, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.APIVersion != "admissionregistration.k8s.io/v1" {
			t.Errorf("record of %s: apiVersion %q", tm.Metadata.Name, tm.APIVersion)
		}
		kinds = append(kinds, tm.Kind+"/"+tm.Metadata.Name)
	}
	want := []string{"MutatingWebhookConfiguration/kruise-mutating-webhook-configuration", "ValidatingWebhookConfiguration/kruise-validating-webhook-configuration"}
	if len(kinds) != len(want) || kinds[0] != want[0] || kinds[1] != want[1] {
		t.Errorf("records %v, want %v (each once)", kinds, want)
	}
	adm := kube.AdmissionregistrationV1()
	if _, err := adm.MutatingWebhookConfigurations().Get(ctx, mutating.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: %v, want it deleted", mutating.Name, err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Get(ctx, validating.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: %v, want it deleted", validating.Name, err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Get(ctx, other.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("%s (not OpenKruise's): %v, want it kept", other.Name, err)
	}
}
