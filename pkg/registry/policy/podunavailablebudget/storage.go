// Package podunavailablebudget describes the PodUnavailableBudget to the shared storage
// (strategy.NewStorage): the podunavailablebudgets resource of policy.kruise.io and its status
// subresource, served at v1alpha1 and v1beta1.
package podunavailablebudget

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/policy/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the PodUnavailableBudget: its names, validation and OpenKruise's printed columns
// (ALLOWED CURRENT DESIRED TOTAL AGE).
var Kind = strategy.Kind[*policy.PodUnavailableBudget]{
	Resource:   "podunavailablebudgets",
	ShortNames: []string{"pub"},
	Validation: strategy.Validate(validation.ValidatePodUnavailableBudget, validation.ValidatePodUnavailableBudgetUpdate,
		validation.ValidatePodUnavailableBudgetStatusUpdate),
	ErrorPaths: errorPaths,
	Table: table.New(
		table.Int("Allowed", "UnavailableAllowed number of pod unavailable that are currently allowed",
			func(p *policy.PodUnavailableBudget) int32 { return p.Status.UnavailableAllowed }),
		table.Int("Current", "CurrentAvailable current number of available pods",
			func(p *policy.PodUnavailableBudget) int32 { return p.Status.CurrentAvailable }),
		table.Int("Desired", "DesiredAvailable minimum desired number of available pods",
			func(p *policy.PodUnavailableBudget) int32 { return p.Status.DesiredAvailable }),
		table.Int("Total", "TotalReplicas total number of pods counted by this budget",
			func(p *policy.PodUnavailableBudget) int32 { return p.Status.TotalReplicas }),
	),
}

// errorPaths names, for a v1alpha1 request, the annotation that holds a field v1alpha1 has no
// field for: the hub's spec.protectOperations is the annotation kruise.io/pub-protect-operations.
func errorPaths(version string, errs field.ErrorList) field.ErrorList {
	if version != v1alpha1.SchemeGroupVersion.Version {
		return errs
	}
	annotations := field.NewPath("metadata", "annotations")
	byField := map[string]string{
		"spec.protectOperations":    v1alpha1.PubProtectOperationAnnotation,
		"spec.protectTotalReplicas": v1alpha1.PubProtectTotalReplicasAnnotation,
		"spec.ignoredPodSelector":   v1alpha1.V1beta1FieldsAnnotation,
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		for f, key := range byField {
			if e.Field == f || strings.HasPrefix(e.Field, f+".") || strings.HasPrefix(e.Field, f+"[") {
				c.Field = annotations.Key(key).String()
			}
		}
		out[i] = &c
	}
	return out
}

// NewStorage is the budgets' store, with its /status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*policy.PodUnavailableBudget], error) {
	return strategy.NewStorage(scheme, optsGetter, Kind)
}

// APIGroup is policy.kruise.io: PodUnavailableBudgets, one store served at v1alpha1 (OpenKruise
// v1.9's version) and v1beta1 (OpenKruise master's).
func APIGroup(scheme *runtime.Scheme, codecs serializer.CodecFactory, pubs strategy.Storage[*policy.PodUnavailableBudget]) *genericapiserver.APIGroupInfo {
	resources := map[string]rest.Storage{
		"podunavailablebudgets":        pubs.Main,
		"podunavailablebudgets/status": pubs.Status,
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(policy.GroupName, scheme, metav1.ParameterCodec, codecs)
	group.VersionedResourcesStorageMap = map[string]map[string]rest.Storage{
		v1alpha1.SchemeGroupVersion.Version: resources,
		v1beta1.SchemeGroupVersion.Version:  resources,
	}
	return &group
}
