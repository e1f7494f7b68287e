// Package deletionwebhook is OpenKruise's deletion protection (the label
// policy.kruise.io/delete-protection, feature gate ResourcesDeletionProtection) for what
// inplace-apiserver does not store: Namespaces, CustomResourceDefinitions, kube's Deployments,
// ReplicaSets and StatefulSets, Services and Ingresses. kube-apiserver calls it through the
// ValidatingWebhookConfiguration inplace-deletion-protection-webhook
// (artifacts/deploy/base/deletion-protection-webhook.yaml) for the DELETE of an object that
// carries the label, and nothing else; inplace's own kinds are protected by the built-in
// admission plugin (package deletionprotection), with the same rule.
//
// What Cascading protects, as OpenKruise v1.9:
//   - a Namespace while it holds active Pods or bound PersistentVolumeClaims;
//   - a Deployment, ReplicaSet or StatefulSet while its spec.replicas is above 0;
//   - a CustomResourceDefinition while objects of it exist (with the feature gate
//     DeletionProtectionForCRDCascadingGate; without it Cascading refuses every deletion, as
//     OpenKruise's). inplace-apiserver lists them with its own identity: grant its service
//     account list on the resource, or the deletion is refused saying so;
//   - Services and Ingresses only by Always.
//
// The configuration fails closed, as OpenKruise's: a protected object is not deleted while
// inplace-apiserver does not answer (remove the label to delete it then).
package deletionwebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/admission/plugin/deletionprotection"
	"github.com/inplace-dev/inplace/pkg/admission/review"
	"github.com/inplace-dev/inplace/pkg/features"
)

// Path is where inplace-apiserver serves the webhook.
const Path = "/admission/deletion-protection"

// Handler answers the AdmissionReviews of DELETE of protected objects.
type Handler struct {
	// Kube lists a Namespace's Pods and PersistentVolumeClaims.
	Kube kubernetes.Interface
	// Metadata lists the objects of a CustomResourceDefinition.
	Metadata metadata.Interface
}

// ServeHTTP decodes the review, admits its request and writes the review back.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review.Serve(w, r, h.Admit)
}

// object is what the rule reads of the deleted object: its metadata, a workload's replicas, a
// CustomResourceDefinition's resource.
type object struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32 `json:"replicas"`
		Group    string `json:"group"`
		Names    struct {
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
		} `json:"versions"`
	} `json:"spec"`
}

// Admit allows the request unless it deletes an object its label protects.
func (h *Handler) Admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Delete || req.SubResource != "" || !features.Enabled(features.ResourcesDeletionProtection) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	obj := &object{}
	if err := json.Unmarshal(req.OldObject.Raw, obj); err != nil || len(req.OldObject.Raw) == 0 {
		// kube-apiserver sends the object being deleted; without it nothing says it is not
		// protected.
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("the deletion-protection webhook needs the object being deleted (oldObject): %v", err))
	}
	gr := schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}
	err := deletionprotection.Refusal(obj, h.dependents(ctx, gr, obj))
	if err == nil {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	refusals.WithLabelValues(resourceLabel(gr)).Inc()
	klog.FromContext(ctx).Info("Deletion refused by its delete-protection label", "resource", gr.String(),
		"namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username, "reason", err.Error())
	return deny(http.StatusForbidden, metav1.StatusReasonForbidden, err.Error())
}

// protectedResources are the resources inplace-deletion-protection-webhook registers for, the
// values of the refusals metric's label.
var protectedResources = map[schema.GroupResource]bool{
	{Resource: "namespaces"}: true, {Resource: "services"}: true,
	{Group: "apps", Resource: "deployments"}: true, {Group: "apps", Resource: "replicasets"}: true,
	{Group: "apps", Resource: "statefulsets"}: true, {Group: "networking.k8s.io", Resource: "ingresses"}: true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// resourceLabel is gr as the metric's label, "other" for a resource the webhook is not registered
// for: a forged review's resource must neither grow the series nor reach the metric unchecked
// (a label that is not UTF-8 panics).
func resourceLabel(gr schema.GroupResource) string {
	if protectedResources[gr] {
		return gr.String()
	}
	return "other"
}

func deny(code int32, reason metav1.StatusReason, message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message,
	}}
}

// dependents returns how to count what a Cascading deletion of obj would take with it, nil for a
// resource Cascading does not protect.
func (h *Handler) dependents(ctx context.Context, gr schema.GroupResource, obj *object) func() (deletionprotection.Dependents, error) {
	switch gr {
	case schema.GroupResource{Resource: "namespaces"}:
		return func() (deletionprotection.Dependents, error) { return h.namespaceDependents(ctx, obj.Name) }
	case schema.GroupResource{Group: "apps", Resource: "deployments"},
		schema.GroupResource{Group: "apps", Resource: "replicasets"},
		schema.GroupResource{Group: "apps", Resource: "statefulsets"}:
		return func() (deletionprotection.Dependents, error) {
			n := int64(1) // the default of spec.replicas
			if obj.Spec.Replicas != nil {
				n = int64(*obj.Spec.Replicas)
			}
			return deletionprotection.Dependents{What: "replicas", N: n, Remedy: "scale it to 0 (or remove the label) first"}, nil
		}
	case schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:
		return func() (deletionprotection.Dependents, error) { return h.customResources(ctx, obj) }
	}
	return nil
}

// namespaceDependents counts a Namespace's active Pods (not terminated, not being deleted) and,
// when there are none, its bound PersistentVolumeClaims, from kube-apiserver's watch cache.
func (h *Handler) namespaceDependents(ctx context.Context, namespace string) (deletionprotection.Dependents, error) {
	remedy := "delete them (or remove the label) first"
	pods, err := h.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return deletionprotection.Dependents{}, fmt.Errorf("listing its Pods: %w", err)
	}
	active := int64(0)
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			active++
		}
	}
	if active > 0 {
		return deletionprotection.Dependents{What: "active pods", N: active, Remedy: remedy}, nil
	}
	claims, err := h.Kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return deletionprotection.Dependents{}, fmt.Errorf("listing its PersistentVolumeClaims: %w", err)
	}
	bound := int64(0)
	for i := range claims.Items {
		if c := &claims.Items[i]; c.DeletionTimestamp == nil && c.Status.Phase == corev1.ClaimBound {
			bound++
		}
	}
	return deletionprotection.Dependents{What: "bound PersistentVolumeClaims", N: bound, Remedy: remedy}, nil
}

// customResources counts the objects of a CustomResourceDefinition not being deleted.
func (h *Handler) customResources(ctx context.Context, crd *object) (deletionprotection.Dependents, error) {
	if !features.Enabled(features.DeletionProtectionForCRDCascadingGate) {
		return deletionprotection.Dependents{}, fmt.Errorf("protecting a CustomResourceDefinition by Cascading needs inplace-apiserver's feature gate %s", features.DeletionProtectionForCRDCascadingGate)
	}
	version := servedVersion(crd)
	if version == "" {
		// No version is served: no object of it can be read, nor can a client have any in use.
		return deletionprotection.Dependents{What: "objects of served versions", Remedy: "delete them (or remove the label) first"}, nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	list, err := h.Metadata.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return deletionprotection.Dependents{}, fmt.Errorf("inplace-apiserver may not list %s (grant its service account list on them): %w", gvr.GroupResource(), err)
	}
	if err != nil {
		return deletionprotection.Dependents{}, fmt.Errorf("listing its %s: %w", gvr.GroupResource(), err)
	}
	active := int64(0)
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			active++
		}
	}
	return deletionprotection.Dependents{What: "active " + gvr.GroupResource().String(), N: active, Remedy: "delete them (or remove the label) first"}, nil
}

// servedVersion is the version to list a CustomResourceDefinition's objects at: the storage
// version when it is served, else the first served one ("" when none is: kube-apiserver serves
// no objects of it then). A storage version that is not served cannot be listed.
func servedVersion(crd *object) string {
	version := ""
	for _, v := range crd.Spec.Versions {
		switch {
		case !v.Served:
		case v.Storage:
			return v.Name
		case version == "":
			version = v.Name
		}
	}
	return version
}
