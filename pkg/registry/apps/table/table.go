// Package table turns objects and lists of one kind into the metav1.Table that kubectl prints,
// with the kind's own columns between NAME and AGE, like OpenKruise's printer columns.
package table

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Column is one printed column of a kind.
type Column[T runtime.Object] struct {
	Name string
	// Type is the OpenAPI type of the cells: integer, string, date...
	Type        string
	Description string
	// Priority 0 columns always print; 1 only with -o wide.
	Priority int32
	// AfterAge prints a priority 0 column after AGE, as OpenKruise's ImagePullJob prints MESSAGE.
	AfterAge bool
	// Versions, when set, are the only API versions that print the column: OpenKruise's CRDs
	// have per-version columns (ImagePullJob's MESSAGE is v1alpha1's only).
	Versions []string
	Cell     func(obj T) any
}

// Convertor prints objects of type T with the given columns.
type Convertor[T runtime.Object] struct {
	columns []Column[T]
}

var _ rest.TableConvertor = Convertor[runtime.Object]{}

// New returns a convertor printing NAME, the columns, AGE, the columns marked AfterAge, and then
// the wide (priority > 0) columns, the order kubectl shows for built-in workloads and for
// OpenKruise's CRDs.
func New[T runtime.Object](columns ...Column[T]) Convertor[T] {
	age := Column[T]{
		Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
		Cell: func(obj T) any {
			m, err := meta.Accessor(obj)
			if err != nil {
				return "<unknown>"
			}
			return Age(m.GetCreationTimestamp())
		},
	}
	ordered := make([]Column[T], 0, len(columns)+1)
	for _, c := range columns {
		if c.Priority == 0 && !c.AfterAge {
			ordered = append(ordered, c)
		}
	}
	ordered = append(ordered, age)
	for _, c := range columns {
		if c.Priority == 0 && c.AfterAge {
			ordered = append(ordered, c)
		}
	}
	for _, c := range columns {
		if c.Priority > 0 {
			ordered = append(ordered, c)
		}
	}
	return Convertor[T]{columns: ordered}
}

// ConvertToTable prints one object or a list of them.
func (c Convertor[T]) ConvertToTable(ctx context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	c = c.forVersion(ctx)
	t := &metav1.Table{ColumnDefinitions: c.definitions()}
	if meta.IsListType(object) {
		items, err := meta.ExtractList(object)
		if err != nil {
			return nil, fmt.Errorf("printing %T: %w", object, err)
		}
		for _, item := range items {
			row, err := c.row(item)
			if err != nil {
				return nil, err
			}
			t.Rows = append(t.Rows, row)
		}
		if l, err := meta.ListAccessor(object); err == nil {
			t.ResourceVersion = l.GetResourceVersion()
			t.Continue = l.GetContinue()
			t.RemainingItemCount = l.GetRemainingItemCount()
		}
		return t, nil
	}
	row, err := c.row(object)
	if err != nil {
		return nil, err
	}
	t.Rows = []metav1.TableRow{row}
	if m, err := meta.Accessor(object); err == nil {
		t.ResourceVersion = m.GetResourceVersion()
	}
	return t, nil
}

// forVersion keeps the columns printed at the API version of the request (all of them when the
// request has none).
func (c Convertor[T]) forVersion(ctx context.Context) Convertor[T] {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok || info.APIVersion == "" {
		return c
	}
	kept := make([]Column[T], 0, len(c.columns))
	for _, col := range c.columns {
		if len(col.Versions) == 0 || slices.Contains(col.Versions, info.APIVersion) {
			kept = append(kept, col)
		}
	}
	return Convertor[T]{columns: kept}
}

func (c Convertor[T]) definitions() []metav1.TableColumnDefinition {
	defs := []metav1.TableColumnDefinition{{
		Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"],
	}}
	for _, col := range c.columns {
		defs = append(defs, metav1.TableColumnDefinition{
			Name: col.Name, Type: col.Type, Description: col.Description, Priority: col.Priority,
		})
	}
	return defs
}

func (c Convertor[T]) row(object runtime.Object) (metav1.TableRow, error) {
	obj, ok := object.(T)
	if !ok {
		var want T
		return metav1.TableRow{}, fmt.Errorf("cannot print %T as %T", object, want)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return metav1.TableRow{}, fmt.Errorf("printing %T: %w", object, err)
	}
	cells := []any{m.GetName()}
	for _, col := range c.columns {
		cells = append(cells, col.Cell(obj))
	}
	return metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: object}}, nil
}

// Age prints how long ago t was, the way kubectl does ("<unknown>" for a zero time).
func Age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// Int is a priority 0 column of integers, such as the replica counts of a status.
func Int[T runtime.Object](name, description string, cell func(obj T) int32) Column[T] {
	return Column[T]{Name: name, Type: "integer", Description: description, Cell: func(obj T) any { return cell(obj) }}
}

// Containers and Images are the wide CONTAINERS and IMAGES columns of a workload, read from its
// Pod template (podSpec), comma-separated as kubectl prints them for Deployments.
func Containers[T runtime.Object](podSpec func(T) *corev1.PodSpec) Column[T] {
	return Column[T]{Name: "Containers", Type: "string", Priority: 1, Description: "The containers of the pod template.",
		Cell: func(obj T) any {
			return joinContainers(podSpec(obj), func(c *corev1.Container) string { return c.Name })
		}}
}

// Images: see Containers.
func Images[T runtime.Object](podSpec func(T) *corev1.PodSpec) Column[T] {
	return Column[T]{Name: "Images", Type: "string", Priority: 1, Description: "The images of the pod template.",
		Cell: func(obj T) any {
			return joinContainers(podSpec(obj), func(c *corev1.Container) string { return c.Image })
		}}
}

func joinContainers(spec *corev1.PodSpec, field func(*corev1.Container) string) string {
	parts := make([]string, len(spec.Containers))
	for i := range spec.Containers {
		parts[i] = field(&spec.Containers[i])
	}
	return strings.Join(parts, ",")
}
