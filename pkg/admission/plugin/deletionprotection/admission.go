// Package deletionprotection is the built-in admission plugin of OpenKruise's deletion protection
// (feature gate ResourcesDeletionProtection, off by default as in OpenKruise v1.9) for the kinds
// inplace-apiserver stores. An object labelled policy.kruise.io/delete-protection:
//
//   - Always cannot be deleted;
//   - Cascading cannot be deleted while it still has Pods: a CloneSet or Advanced StatefulSet
//     whose spec.replicas is above 0 (OpenKruise's rule), an Advanced DaemonSet that still
//     schedules Pods (status.desiredNumberScheduled above 0) and a SidecarSet that still matches
//     Pods (status.matchedPods above 0) — the last two OpenKruise does not protect.
//
// The refusal is a 403 whose message starts "forbidden by ResourcesProtectionDeletion", as
// OpenKruise's, and says what to do. An object already being deleted is not held back, nor is any
// other value of the label. Refusal is the same rule for any kind: the deletion-protection
// webhook (package deletionwebhook) applies it to Namespaces, CustomResourceDefinitions and kube's
// own workloads, Services and Ingresses. The plugin needs nothing of the cluster and runs in
// standalone mode too.
package deletionprotection

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/features"
)

// PluginName is the plugin's name in --enable-admission-plugins and --disable-admission-plugins.
const PluginName = "DeletionProtection"

const (
	// Label is OpenKruise's deletion-protection label.
	Label = "policy.kruise.io/delete-protection"
	// Always refuses every deletion.
	Always = "Always"
	// Cascading refuses a deletion that would take Pods with it.
	Cascading = "Cascading"
	// forbidden starts every refusal, as OpenKruise's (its e2e tests look for it).
	forbidden = "forbidden by ResourcesProtectionDeletion"
)

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin refuses deletions of protected objects.
type Plugin struct {
	*admission.Handler
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin; it acts on DELETE.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Delete)}
}

// Validate refuses the deletion of an object its label protects.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || !features.Enabled(features.ResourcesDeletionProtection) {
		return nil
	}
	obj := a.GetOldObject()
	if obj == nil {
		return nil
	}
	if err := Check(obj); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// Check returns why obj, one of inplace's kinds, may not be deleted, or nil.
func Check(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	what, n, known := pods(obj)
	if !known {
		return Refusal(m, nil)
	}
	return Refusal(m, func() (Dependents, error) {
		return Dependents{What: what, N: int64(n), Remedy: "scale it to 0 (or remove the label) first"}, nil
	})
}

// Dependents is what deleting an object would take with it, in the words of its kind.
type Dependents struct {
	// What is counted: "replicas", "active pods", ...
	What string
	// N is how many there are.
	N int64
	// Remedy says what to do before the deletion can go.
	Remedy string
}

// Refusal is the rule of the label for any kind: why an object with this metadata may not be
// deleted, or nil. count says what a Cascading deletion would take with it; nil means the kind
// has no Cascading rule (as OpenKruise's Services and Ingresses: only Always protects them). A
// count that fails refuses the deletion: protection that holds only while the count works is
// none. An object already being deleted is not held back, nor is any other value of the label.
func Refusal(m metav1.Object, count func() (Dependents, error)) error {
	if m.GetDeletionTimestamp() != nil {
		return nil
	}
	switch value := m.GetLabels()[Label]; value {
	case Always:
		return fmt.Errorf("%s for %s=%s: remove the label first to delete it", forbidden, Label, value)
	case Cascading:
		if count == nil {
			return nil
		}
		d, err := count()
		if err != nil {
			return fmt.Errorf("%s for %s=%s: cannot tell what its deletion would take with it: %w", forbidden, Label, value, err)
		}
		if d.N > 0 {
			return fmt.Errorf("%s for %s=%s and %s %d>0: %s", forbidden, Label, value, d.What, d.N, d.Remedy)
		}
	}
	return nil
}

// pods says how many Pods deleting obj would take with it, in the words of its kind.
func pods(obj runtime.Object) (what string, n int32, known bool) {
	switch o := obj.(type) {
	case *apps.CloneSet:
		return "replicas", replicas(o.Spec.Replicas), true
	case *apps.StatefulSet:
		return "replicas", replicas(o.Spec.Replicas), true
	case *apps.DaemonSet:
		return "desiredNumberScheduled", o.Status.DesiredNumberScheduled, true
	case *apps.SidecarSet:
		return "matchedPods", o.Status.MatchedPods, true
	}
	return "", 0, false
}

// replicas is spec.replicas, 1 when unset (the default).
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
