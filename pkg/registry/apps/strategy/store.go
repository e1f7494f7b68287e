package strategy

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Storage is the REST storage of one kind, as kubernetes' pkg/registry/apps/*/storage returns
// it: the main resource, its /status, and its /scale for the kinds with replicas.
type Storage[T runtime.Object] struct {
	Main   *REST
	Status *StatusREST
	// Scale is nil for a kind without Kind.Scale.
	Scale *ScaleREST[T]
}

// REST is the main resource of a kind, with the short names and categories kubectl finds it by.
type REST struct {
	*genericregistry.Store
	shortNames, categories []string
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames are the kind's Kind.ShortNames; discovery leaves out an empty list.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories are the kind's Kind.Categories; discovery leaves out an empty list.
func (r *REST) Categories() []string { return r.categories }

// NewStorage returns the etcd-backed storage of a kind: its main resource, /status, and /scale
// if the kind has Kind.Scale. The kind's names in the API group, its singular name and its list
// type come from scheme, where the internal type T is registered.
func NewStorage[T runtime.Object](scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, kind Kind[T]) (Storage[T], error) {
	main, err := New(scheme, kind)
	if err != nil {
		return Storage[T]{}, err
	}
	gvk := main.gvk
	newList, err := listOf(scheme, gvk)
	if err != nil {
		return Storage[T]{}, err
	}
	plural := schema.GroupResource{Group: gvk.Group, Resource: kind.Resource}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return main.parts.new() },
		NewListFunc:               newList,
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  plural,
		SingularQualifiedResource: schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)},

		CreateStrategy:      main,
		UpdateStrategy:      main,
		DeleteStrategy:      main,
		ResetFieldsStrategy: main,

		TableConvertor: kind.Table,
	}
	if err := store.CompleteWithOptions(StoreOptions(optsGetter)); err != nil {
		return Storage[T]{}, fmt.Errorf("setting up the storage of %s: %w", plural, err)
	}
	store.Storage.Storage = resourceVersionChecked{store.Storage.Storage}
	status := main.Status()
	statusStore := *store
	statusStore.UpdateStrategy = status
	statusStore.ResetFieldsStrategy = status
	s := Storage[T]{
		Main:   &REST{Store: store, shortNames: kind.ShortNames, categories: kind.Categories},
		Status: &StatusREST{store: &statusStore},
	}
	if kind.Scale != nil {
		s.Scale = newScaleREST(store, schema.GroupResource{Group: gvk.Group, Resource: kind.Resource + "/scale"}, *kind.Scale)
	}
	return s, nil
}

// listOf returns how to make an empty list of the kind gvk: its List type, registered beside it
// in scheme.
func listOf(scheme *runtime.Scheme, gvk schema.GroupVersionKind) (func() runtime.Object, error) {
	list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("finding the list of %s: %w", gvk.Kind, err)
	}
	listType := reflect.TypeOf(list).Elem()
	return func() runtime.Object { return reflect.New(listType).Interface().(runtime.Object) }, nil
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
