package strategy

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Resource names a stored resource and says how to list and print it.
type Resource[T runtime.Object] struct {
	// Plural and Singular are the resource names, for example clonesets and cloneset.
	Plural, Singular schema.GroupResource
	// NewList returns an empty list of the kind.
	NewList func() runtime.Object
	// Table prints objects for kubectl.
	Table rest.TableConvertor
}

// NewStores returns the etcd-backed store of a kind's main resource and its /status subresource.
func NewStores[T runtime.Object](scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, kind Kind[T], res Resource[T]) (*genericregistry.Store, *StatusREST, error) {
	main := New(scheme, kind)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return kind.New() },
		NewListFunc:               res.NewList,
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  res.Plural,
		SingularQualifiedResource: res.Singular,

		CreateStrategy:      main,
		UpdateStrategy:      main,
		DeleteStrategy:      main,
		ResetFieldsStrategy: main,

		TableConvertor: res.Table,
	}
	if err := store.CompleteWithOptions(StoreOptions(optsGetter)); err != nil {
		return nil, nil, fmt.Errorf("setting up the storage of %s: %w", res.Plural, err)
	}
	store.Storage.Storage = resourceVersionChecked{store.Storage.Storage}
	status := NewStatus(scheme, kind)
	statusStore := *store
	statusStore.UpdateStrategy = status
	statusStore.ResetFieldsStrategy = status
	return store, &StatusREST{store: &statusStore}, nil
}

// StatusREST is the /status subresource of a kind: GET, PUT and PATCH of the whole object, of
// which only status is written.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
	_ rest.TableConvertor      = &StatusREST{}
)

// New returns an empty object of the kind.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main resource owns the store.
func (r *StatusREST) Destroy() {}

// Get returns the object, for PATCH of its status.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the status of an object; it never creates one.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields says which fields a status write leaves untouched.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object like the main resource does.
func (r *StatusREST) ConvertToTable(ctx context.Context, object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
