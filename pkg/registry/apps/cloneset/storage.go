// Package cloneset is the storage of the clonesets resource and its status and scale subresources.
package cloneset

import (
	"context"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Storage holds the REST storage of clonesets and its subresources.
type Storage struct {
	CloneSet *REST
	Status   *strategy.StatusREST
	Scale    *ScaleREST
}

// REST is the clonesets resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get clone` work, as with OpenKruise.
func (*REST) ShortNames() []string { return []string{"clone"} }

// Categories puts clonesets in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of clonesets, clonesets/status and clonesets/scale.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.CloneSet]{
		Plural:   apps.Resource("clonesets"),
		Singular: apps.Resource("cloneset"),
		NewList:  func() runtime.Object { return &apps.CloneSetList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{CloneSet: &REST{store}, Status: status, Scale: &ScaleREST{store: store}}, nil
}

var tableConvertor = table.New(
	table.Column[*apps.CloneSet]{Name: "Desired", Type: "integer", Description: "The desired number of pods.",
		Cell: func(c *apps.CloneSet) any { return replicas(c) }},
	table.Column[*apps.CloneSet]{Name: "Updated", Type: "integer", Description: "The number of pods updated.",
		Cell: func(c *apps.CloneSet) any { return c.Status.UpdatedReplicas }},
	table.Column[*apps.CloneSet]{Name: "Updated_Ready", Type: "integer", Description: "The number of pods updated and ready.",
		Cell: func(c *apps.CloneSet) any { return c.Status.UpdatedReadyReplicas }},
	table.Column[*apps.CloneSet]{Name: "Ready", Type: "integer", Description: "The number of pods ready.",
		Cell: func(c *apps.CloneSet) any { return c.Status.ReadyReplicas }},
	table.Column[*apps.CloneSet]{Name: "Total", Type: "integer", Description: "The number of pods the CloneSet owns.",
		Cell: func(c *apps.CloneSet) any { return c.Status.Replicas }},
	table.Column[*apps.CloneSet]{Name: "Containers", Type: "string", Priority: 1, Description: "The containers of the pod template.",
		Cell: func(c *apps.CloneSet) any {
			return joinContainers(c, func(i int) string { return c.Spec.Template.Spec.Containers[i].Name })
		}},
	table.Column[*apps.CloneSet]{Name: "Images", Type: "string", Priority: 1, Description: "The images of the pod template.",
		Cell: func(c *apps.CloneSet) any {
			return joinContainers(c, func(i int) string { return c.Spec.Template.Spec.Containers[i].Image })
		}},
	table.Column[*apps.CloneSet]{Name: "Selector", Type: "string", Priority: 1, Description: "The label selector of the pods.",
		Cell: func(c *apps.CloneSet) any { return c.Status.LabelSelector }},
)

func replicas(c *apps.CloneSet) int32 {
	if c.Spec.Replicas == nil {
		return 0
	}
	return *c.Spec.Replicas
}

func joinContainers(c *apps.CloneSet, field func(i int) string) string {
	parts := make([]string, len(c.Spec.Template.Spec.Containers))
	for i := range parts {
		parts[i] = field(i)
	}
	return strings.Join(parts, ",")
}

// ScaleREST is clonesets/scale: it reads spec.replicas and status.replicas/labelSelector as an
// autoscaling/v1 Scale, so `kubectl scale` and a HorizontalPodAutoscaler work.
type ScaleREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// GroupVersionKind says the scale subresource speaks autoscaling/v1 Scale.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// New returns an empty Scale.
func (r *ScaleREST) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy does nothing: the main resource owns the store.
func (r *ScaleREST) Destroy() {}

// Get returns the Scale of a CloneSet.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return scaleOf(obj.(*apps.CloneSet)), nil
}

// Update sets spec.replicas of a CloneSet from a Scale.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name, &scaleUpdatedObjectInfo{name: name, reqObjInfo: objInfo},
		toScaleCreateValidation(createValidation), toScaleUpdateValidation(updateValidation), false, options)
	if err != nil {
		return nil, false, err
	}
	return scaleOf(obj.(*apps.CloneSet)), false, nil
}

// ConvertToTable prints a Scale with the default columns.
func (r *ScaleREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(apps.Resource("clonesets/scale")).ConvertToTable(ctx, object, tableOptions)
}

func scaleOf(cs *apps.CloneSet) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              cs.Name,
			Namespace:         cs.Namespace,
			UID:               cs.UID,
			ResourceVersion:   cs.ResourceVersion,
			CreationTimestamp: cs.CreationTimestamp,
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas(cs)},
		Status: autoscalingv1.ScaleStatus{Replicas: cs.Status.Replicas, Selector: cs.Status.LabelSelector},
	}
}

func toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj runtime.Object) error {
		return f(ctx, scaleOf(obj.(*apps.CloneSet)))
	}
}

func toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj, old runtime.Object) error {
		return f(ctx, scaleOf(obj.(*apps.CloneSet)), scaleOf(old.(*apps.CloneSet)))
	}
}

// scaleUpdatedObjectInfo turns the Scale a client sent into the CloneSet to store.
type scaleUpdatedObjectInfo struct {
	name       string
	reqObjInfo rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.reqObjInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	cs := oldObj.DeepCopyObject().(*apps.CloneSet)
	oldScale := scaleOf(cs)
	obj, err := i.reqObjInfo.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Scale, got %T", obj))
	}
	if errs := validateScale(scale); len(errs) > 0 {
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), scale.Name, errs)
	}
	// A Scale written with a resourceVersion must match the CloneSet it was read from.
	if scale.ResourceVersion != "" {
		cs.ResourceVersion = scale.ResourceVersion
	}
	cs.Spec.Replicas = &scale.Spec.Replicas
	return cs, nil
}

func validateScale(scale *autoscalingv1.Scale) field.ErrorList {
	var errs field.ErrorList
	if scale.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0"))
	}
	return errs
}
