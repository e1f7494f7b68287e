package kubectlplugin

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRefs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []Ref
		wantErr string
	}{
		{args: []string{"clone/sample"}, want: []Ref{{CloneSet, "sample"}}},
		{args: []string{"cloneset/sample"}, want: []Ref{{CloneSet, "sample"}}},
		{args: []string{"clonesets.apps.kruise.io/sample"}, want: []Ref{{CloneSet, "sample"}}},
		{args: []string{"CloneSet.v1alpha1.apps.kruise.io/sample"}, want: []Ref{{CloneSet, "sample"}}},
		{args: []string{"asts/db"}, want: []Ref{{StatefulSet, "db"}}},
		{args: []string{"statefulsets.apps.kruise.io/db"}, want: []Ref{{StatefulSet, "db"}}},
		{args: []string{"ads/agent"}, want: []Ref{{DaemonSet, "agent"}}},
		{args: []string{"daemonset.apps.kruise.io/agent"}, want: []Ref{{DaemonSet, "agent"}}},
		{args: []string{"clone", "a", "b"}, want: []Ref{{CloneSet, "a"}, {CloneSet, "b"}}},
		{args: []string{"clone/a", "asts/b"}, want: []Ref{{CloneSet, "a"}, {StatefulSet, "b"}}},
		{args: nil, wantErr: "you must specify a workload"},
		{args: []string{"clone"}, wantErr: "you must specify the name"},
		{args: []string{"clone", "clone/a"}, wantErr: "no need to specify a resource type"},
		{args: []string{"clone/"}, wantErr: "single resource and name"},
		{args: []string{"clone/a/b"}, wantErr: "single resource and name"},
		{args: []string{"sts/web"}, wantErr: "apps/v1 kind"},
		{args: []string{"deployment/web"}, wantErr: "apps/v1 kind"},
		{args: []string{"pods/web"}, wantErr: "unknown kind"},
	} {
		got, err := ParseRefs(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseRefs(%q) = %v, %v; want error containing %q", tc.args, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseRefs(%q) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
	if r, _ := ParseRef([]string{"clone/a"}); r.Resource() != "cloneset.apps.kruise.io/a" {
		t.Errorf("Resource() = %q", r.Resource())
	}
	if _, err := ParseRef([]string{"clone/a", "clone/b"}); err == nil {
		t.Errorf("ParseRef of two workloads: no error")
	}
}
