package table

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

var convertor = New(
	Column[*apps.CloneSet]{Name: "Total", Type: "integer", Cell: func(c *apps.CloneSet) any { return c.Status.Replicas }},
	Column[*apps.CloneSet]{Name: "Wide", Type: "string", Priority: 1, Cell: func(*apps.CloneSet) any { return "w" }},
	Column[*apps.CloneSet]{Name: "Message", Type: "string", AfterAge: true, Cell: func(*apps.CloneSet) any { return "m" }},
)

func TestConvertList(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-90 * time.Second))
	list := &apps.CloneSetList{
		ListMeta: metav1.ListMeta{ResourceVersion: "17", Continue: "next"},
		Items: []apps.CloneSet{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: created}, Status: apps.CloneSetStatus{Replicas: 3}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		},
	}
	tbl, err := convertor.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got, want := names, []string{"Name", "Total", "Age", "Message", "Wide"}; !slices.Equal(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	if tbl.ColumnDefinitions[4].Priority != 1 {
		t.Errorf("wide column priority %d, want 1", tbl.ColumnDefinitions[4].Priority)
	}
	if len(tbl.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(tbl.Rows))
	}
	if got := tbl.Rows[0].Cells; got[0] != "a" || got[1] != int32(3) || got[2] != "90s" || got[3] != "m" || got[4] != "w" {
		t.Errorf("row a = %v", got)
	}
	if got := tbl.Rows[1].Cells[2]; got != "<unknown>" {
		t.Errorf("age of an object without creationTimestamp = %v", got)
	}
	if tbl.ResourceVersion != "17" || tbl.Continue != "next" {
		t.Errorf("list metadata not carried: %+v", tbl.ListMeta)
	}
	if tbl.Rows[0].Object.Object == nil {
		t.Error("row does not carry its object (needed for -o wide / custom columns)")
	}
}

func TestConvertOneAndWrongType(t *testing.T) {
	tbl, err := convertor.ConvertToTable(context.Background(), &apps.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "one", ResourceVersion: "5"}}, nil)
	if err != nil || len(tbl.Rows) != 1 || tbl.ResourceVersion != "5" {
		t.Fatalf("table %+v, err %v", tbl, err)
	}
	if _, err := convertor.ConvertToTable(context.Background(), &apps.SidecarSet{}, nil); err == nil {
		t.Error("printing a SidecarSet with CloneSet columns should fail")
	}
}

// TestColumnVersions: a column with Versions prints only at those API versions, and its cells go
// with it; a request without a version (an internal caller) prints every column.
func TestColumnVersions(t *testing.T) {
	c := New(
		Column[*apps.CloneSet]{Name: "Total", Type: "integer", Cell: func(c *apps.CloneSet) any { return c.Status.Replicas }},
		Column[*apps.CloneSet]{Name: "Message", Type: "string", AfterAge: true, Versions: []string{"v1alpha1"}, Cell: func(*apps.CloneSet) any { return "m" }},
	)
	obj := &apps.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	for version, want := range map[string][]string{"v1alpha1": {"Name", "Total", "Age", "Message"}, "v1beta1": {"Name", "Total", "Age"}, "": {"Name", "Total", "Age", "Message"}} {
		ctx := context.Background()
		if version != "" {
			ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{APIVersion: version})
		}
		tbl, err := c.ConvertToTable(ctx, obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range tbl.ColumnDefinitions {
			names = append(names, d.Name)
		}
		if !slices.Equal(names, want) || len(tbl.Rows[0].Cells) != len(want) {
			t.Errorf("at %q: columns %v and %d cells, want %v", version, names, len(tbl.Rows[0].Cells), want)
		}
	}
}

// TestIntAndPodTemplateColumns: Int prints an int32 cell typed integer; Containers and Images
// print the Pod template's containers, comma-separated, in -o wide only.
func TestIntAndPodTemplateColumns(t *testing.T) {
	podSpec := func(c *apps.CloneSet) *corev1.PodSpec { return &c.Spec.Template.Spec }
	c := New(Int("Ready", "ready pods", func(c *apps.CloneSet) int32 { return c.Status.ReadyReplicas }), Containers(podSpec), Images(podSpec))
	obj := &apps.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: apps.CloneSetStatus{ReadyReplicas: 2}}
	obj.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "app:v1"}, {Name: "proxy", Image: "proxy:v2"}}
	tbl, err := c.ConvertToTable(context.Background(), obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	defs := tbl.ColumnDefinitions
	if len(defs) != 5 || defs[1].Name != "Ready" || defs[1].Type != "integer" || defs[1].Description != "ready pods" ||
		defs[3].Name != "Containers" || defs[3].Priority != 1 || defs[4].Name != "Images" || defs[4].Priority != 1 {
		t.Fatalf("columns %+v, want Name Ready(integer) Age Containers(wide) Images(wide)", defs)
	}
	if got := tbl.Rows[0].Cells; got[1] != int32(2) || got[3] != "main,proxy" || got[4] != "app:v1,proxy:v2" {
		t.Errorf("cells %v, want 2, main,proxy and app:v1,proxy:v2", got)
	}
}
