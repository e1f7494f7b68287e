// Package strategy holds the storage and the create/update/status strategy every stored kind of
// apps.kruise.io shares: status is not writable through the main resource, spec is not writable
// through /status, metadata.generation counts spec changes, and validation runs on every write.
// Each resource package describes its kind with a Kind value (names, validation, columns,
// replicas); NewStorage turns it into the etcd-backed main resource, /status and /scale, as
// kubernetes' pkg/registry/apps/*/storage packages each build theirs. The behaviour lives here once.
package strategy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Kind describes one stored kind: its resource names, how to validate and print it, and its
// subresources. The strategy finds the kind's spec and status itself (see specStatus).
type Kind[T runtime.Object] struct {
	// Resource is the plural resource name, for example clonesets; the singular one is the kind's
	// name in lower case.
	Resource string
	// ClusterScoped is true for kinds whose objects live outside namespaces.
	ClusterScoped bool
	// ShortNames and Categories are the other names kubectl finds the resource by
	// (`kubectl get clone`, `kubectl get all`).
	ShortNames, Categories []string
	// Validation is the kind's validation.
	Validation Validation[T]
	// ErrorPaths, if set, rewrites the field paths of validation errors, which name the hub's
	// fields, into those of the API version of the request (version), for the kinds whose
	// versions differ in shape.
	ErrorPaths func(version string, errs field.ErrorList) field.ErrorList
	// Table prints objects for kubectl.
	Table rest.TableConvertor
	// Scale, if set, says where the kind keeps its replicas, and the kind gets a /scale
	// subresource.
	Scale *Replicas[T]
}

// Validation is the validation of a kind: of a new object, of an update, and of a status update.
type Validation[T runtime.Object] struct {
	Create       func(obj T) field.ErrorList
	Update       func(obj, old T) field.ErrorList
	StatusUpdate func(obj, old T) field.ErrorList
}

// Validate returns the validation of a kind from the three functions the validation package has
// for each kind: ValidateX, ValidateXUpdate and ValidateXStatusUpdate.
func Validate[T runtime.Object](create func(T) field.ErrorList, update, statusUpdate func(obj, old T) field.ErrorList) Validation[T] {
	return Validation[T]{Create: create, Update: update, StatusUpdate: statusUpdate}
}

// Strategy is the main-resource strategy of a kind: it owns spec and metadata, never status.
type Strategy[T runtime.Object] struct {
	runtime.ObjectTyper
	names.NameGenerator
	kind  Kind[T]
	parts specStatus[T]
	// gvk is the internal kind of T; versions are the group's versions that serve it, for which
	// the reset fields of server-side apply are declared.
	gvk      schema.GroupVersionKind
	versions []string
}

// New returns the main-resource strategy of kind, whose internal type T is registered in scheme
// with its versions.
func New[T runtime.Object](scheme *runtime.Scheme, kind Kind[T]) (Strategy[T], error) {
	parts, err := specStatusOf[T]()
	if err != nil {
		return Strategy[T]{}, fmt.Errorf("stored kinds have a spec and a status: %w", err)
	}
	gvks, _, err := scheme.ObjectKinds(parts.new())
	if err != nil {
		return Strategy[T]{}, fmt.Errorf("finding the kind of %v: %w", parts.typ, err)
	}
	s := Strategy[T]{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator, kind: kind, parts: parts, gvk: gvks[0]}
	// Every version of the kind in scheme is served, from the one store.
	for _, gv := range scheme.VersionsForGroupKind(s.gvk.GroupKind()) {
		s.versions = append(s.versions, gv.String())
	}
	if len(s.versions) == 0 {
		return Strategy[T]{}, fmt.Errorf("%s has no version in the scheme", s.gvk.Kind)
	}
	return s, nil
}

var (
	_ rest.RESTCreateStrategy              = Strategy[runtime.Object]{}
	_ rest.RESTUpdateStrategy              = Strategy[runtime.Object]{}
	_ rest.RESTDeleteStrategy              = Strategy[runtime.Object]{}
	_ rest.ResetFieldsStrategy             = Strategy[runtime.Object]{}
	_ rest.RESTUpdateStrategy              = StatusStrategy[runtime.Object]{}
	_ rest.ResetFieldsStrategy             = StatusStrategy[runtime.Object]{}
	_ rest.GarbageCollectionDeleteStrategy = Strategy[runtime.Object]{}
)

// NamespaceScoped tells whether objects of the kind live in a namespace.
func (s Strategy[T]) NamespaceScoped() bool { return !s.kind.ClusterScoped }

// GetResetFields says which fields a write through the main resource leaves untouched.
func (s Strategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.versions, "status")
}

// DefaultGarbageCollectionPolicy deletes dependents in the background, as for apps/v1 kinds.
func (s Strategy[T]) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate drops any status the client sent and starts the generation at 1.
func (s Strategy[T]) PrepareForCreate(_ context.Context, obj runtime.Object) {
	o := obj.(T)
	s.parts.resetStatus(o)
	mustAccessor(o).SetGeneration(1)
}

// PrepareForUpdate keeps the stored status and counts a spec change in metadata.generation.
func (s Strategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	o, prev := obj.(T), old.(T)
	s.parts.copyStatus(o, prev)
	generation := mustAccessor(prev).GetGeneration()
	if !equality.Semantic.DeepEqual(s.parts.specOf(o), s.parts.specOf(prev)) {
		generation++
	}
	mustAccessor(o).SetGeneration(generation)
}

// Validate validates a new object.
func (s Strategy[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return s.errorPaths(ctx, s.kind.Validation.Create(obj.(T)))
}

// ValidateUpdate validates an update of an object.
func (s Strategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.errorPaths(ctx, s.kind.Validation.Update(obj.(T), old.(T)))
}

// errorPaths names the fields of errs as the request's API version does.
func (s Strategy[T]) errorPaths(ctx context.Context, errs field.ErrorList) field.ErrorList {
	if len(errs) == 0 || s.kind.ErrorPaths == nil {
		return errs
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return errs
	}
	return s.kind.ErrorPaths(info.APIVersion, errs)
}

// WarningsOnCreate returns no warnings: nothing served is deprecated.
func (s Strategy[T]) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings: nothing served is deprecated.
func (s Strategy[T]) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// AllowCreateOnUpdate is false: a PUT of a missing object is a 404, as for apps/v1 kinds.
func (s Strategy[T]) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate lets a PUT without resourceVersion through, as for apps/v1 kinds.
func (s Strategy[T]) AllowUnconditionalUpdate(context.Context) bool { return true }

// Canonicalize leaves objects as they are.
func (s Strategy[T]) Canonicalize(runtime.Object) {}

// StatusStrategy is the /status strategy of a kind: it owns status, never spec.
type StatusStrategy[T runtime.Object] struct {
	Strategy[T]
}

// Status returns the /status strategy of the kind.
func (s Strategy[T]) Status() StatusStrategy[T] { return StatusStrategy[T]{Strategy: s} }

// GetResetFields says which fields a write through /status leaves untouched.
func (s StatusStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.versions, "spec")
}

// PrepareForUpdate keeps the stored spec; the generation does not move.
func (s StatusStrategy[T]) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	o, prev := obj.(T), old.(T)
	s.parts.copySpec(o, prev)
	mustAccessor(o).SetGeneration(mustAccessor(prev).GetGeneration())
}

// ValidateUpdate validates a status update.
func (s StatusStrategy[T]) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return s.kind.Validation.StatusUpdate(obj.(T), old.(T))
}

// GetAttrs returns the labels and the fields (metadata.name, metadata.namespace) an object is
// selected by in list and watch.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("selecting %T: %w", obj, err)
	}
	fs := fields.Set{"metadata.name": m.GetName()}
	if ns := m.GetNamespace(); ns != "" {
		fs["metadata.namespace"] = ns
	}
	return labels.Set(m.GetLabels()), fs, nil
}

// Matcher returns the selection predicate of list and watch.
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// StoreOptions returns the store options every kind uses.
func StoreOptions(optsGetter generic.RESTOptionsGetter) *generic.StoreOptions {
	return &generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}
}

func resetFields(versions []string, top string) map[fieldpath.APIVersion]*fieldpath.Set {
	fs := make(map[fieldpath.APIVersion]*fieldpath.Set, len(versions))
	for _, v := range versions {
		fs[fieldpath.APIVersion(v)] = fieldpath.NewSet(fieldpath.MakePathOrDie(top))
	}
	return fs
}

func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		// Every stored kind embeds ObjectMeta; reaching this is a programming error.
		panic(fmt.Sprintf("%T has no object metadata: %v", obj, err))
	}
	return m
}
