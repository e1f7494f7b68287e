package strategy

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
)

// specStatus reaches the spec and status of objects of type T, a pointer to a struct with the
// fields Spec and Status that the API conventions give every stored kind. The strategy copies and
// compares the two halves as wholes, so it needs nothing else of the kind; finding them once here
// spares each kind a set of accessors that would all say the same thing.
type specStatus[T runtime.Object] struct {
	typ          reflect.Type // the struct T points to
	spec, status int          // their field indexes
}

// specStatusOf finds the Spec and Status fields of T.
func specStatusOf[T runtime.Object]() (specStatus[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return specStatus[T]{}, fmt.Errorf("%v is not a pointer to a struct", t)
	}
	s := specStatus[T]{typ: t.Elem()}
	for name, index := range map[string]*int{"Spec": &s.spec, "Status": &s.status} {
		f, ok := s.typ.FieldByName(name)
		if !ok || len(f.Index) != 1 {
			return specStatus[T]{}, fmt.Errorf("%v has no field %s of its own", s.typ, name)
		}
		*index = f.Index[0]
	}
	return s, nil
}

// new returns an empty object.
func (s specStatus[T]) new() T { return reflect.New(s.typ).Interface().(T) }

// specOf returns a pointer to the spec of obj.
func (s specStatus[T]) specOf(obj T) any {
	return reflect.ValueOf(obj).Elem().Field(s.spec).Addr().Interface()
}

// copySpec sets the spec of dst to that of src; copyStatus the status.
func (s specStatus[T]) copySpec(dst, src T)   { s.copyField(s.spec, dst, src) }
func (s specStatus[T]) copyStatus(dst, src T) { s.copyField(s.status, dst, src) }

// resetStatus sets the status of obj to its zero value.
func (s specStatus[T]) resetStatus(obj T) { reflect.ValueOf(obj).Elem().Field(s.status).SetZero() }

func (s specStatus[T]) copyField(i int, dst, src T) {
	reflect.ValueOf(dst).Elem().Field(i).Set(reflect.ValueOf(src).Elem().Field(i))
}
