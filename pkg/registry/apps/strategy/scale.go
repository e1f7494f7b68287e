package strategy

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Replicas says where a scalable kind keeps its replica counts and Pod selector.
type Replicas[T runtime.Object] struct {
	// Desired returns spec.replicas (0 when unset); SetDesired sets it.
	Desired    func(obj T) int32
	SetDesired func(obj T, replicas int32)
	// Current returns status.replicas and Selector status.labelSelector.
	Current  func(obj T) int32
	Selector func(obj T) string
}

// ScaleREST is the /scale subresource of a kind: it reads spec.replicas and status.replicas and
// labelSelector as an autoscaling/v1 Scale and writes spec.replicas from one, so `kubectl scale`
// and a HorizontalPodAutoscaler work.
type ScaleREST[T runtime.Object] struct {
	store    *genericregistry.Store
	resource schema.GroupResource // for example clonesets/scale
	replicas Replicas[T]
}

// newScaleREST returns the /scale subresource over the main resource's store.
func newScaleREST[T runtime.Object](store *genericregistry.Store, resource schema.GroupResource, replicas Replicas[T]) *ScaleREST[T] {
	return &ScaleREST[T]{store: store, resource: resource, replicas: replicas}
}

var (
	_ rest.Patcher                  = &ScaleREST[runtime.Object]{}
	_ rest.GroupVersionKindProvider = &ScaleREST[runtime.Object]{}
)

// GroupVersionKind says the scale subresource speaks autoscaling/v1 Scale.
func (r *ScaleREST[T]) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// New returns an empty Scale.
func (r *ScaleREST[T]) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy does nothing: the main resource owns the store.
func (r *ScaleREST[T]) Destroy() {}

// Get returns the Scale of an object.
func (r *ScaleREST[T]) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return r.scaleOf(obj.(T)), nil
}

// Update sets spec.replicas of an object from a Scale.
func (r *ScaleREST[T]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name, &scaleUpdatedObjectInfo[T]{r: r, reqObjInfo: objInfo},
		r.toScaleCreateValidation(createValidation), r.toScaleUpdateValidation(updateValidation), false, options)
	if err != nil {
		return nil, false, err
	}
	return r.scaleOf(obj.(T)), false, nil
}

// ConvertToTable prints a Scale with the default columns.
func (r *ScaleREST[T]) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return rest.NewDefaultTableConvertor(r.resource).ConvertToTable(ctx, object, tableOptions)
}

func (r *ScaleREST[T]) scaleOf(obj T) *autoscalingv1.Scale {
	m := mustAccessor(obj)
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.GetName(),
			Namespace:         m.GetNamespace(),
			UID:               m.GetUID(),
			ResourceVersion:   m.GetResourceVersion(),
			CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: r.replicas.Desired(obj)},
		Status: autoscalingv1.ScaleStatus{Replicas: r.replicas.Current(obj), Selector: r.replicas.Selector(obj)},
	}
}

func (r *ScaleREST[T]) toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj runtime.Object) error {
		return f(ctx, r.scaleOf(obj.(T)))
	}
}

func (r *ScaleREST[T]) toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, obj, old runtime.Object) error {
		return f(ctx, r.scaleOf(obj.(T)), r.scaleOf(old.(T)))
	}
}

// scaleUpdatedObjectInfo turns the Scale a client sent into the object to store.
type scaleUpdatedObjectInfo[T runtime.Object] struct {
	r          *ScaleREST[T]
	reqObjInfo rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo[T]) Preconditions() *metav1.Preconditions {
	return i.reqObjInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo[T]) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj := oldObj.DeepCopyObject().(T)
	newObj, err := i.reqObjInfo.UpdatedObject(ctx, i.r.scaleOf(obj))
	if err != nil {
		return nil, err
	}
	scale, err := Body[*autoscalingv1.Scale](newObj, "a Scale")
	if err != nil {
		return nil, err
	}
	if scale.Spec.Replicas < 0 {
		errs := field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")}
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), scale.Name, errs)
	}
	// A Scale written with a resourceVersion must match the object it was read from.
	if scale.ResourceVersion != "" {
		mustAccessor(obj).SetResourceVersion(scale.ResourceVersion)
	}
	i.r.replicas.SetDesired(obj, scale.Spec.Replicas)
	return obj, nil
}
