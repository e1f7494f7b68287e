package deletionprotection

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

func TestCheck(t *testing.T) {
	meta := func(value string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Labels: map[string]string{Label: value}}
	}
	deleting := meta(Always)
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, c := range []struct {
		name string
		obj  runtime.Object
		want string // substring of the refusal; "" = allowed
	}{
		{"always", &apps.CloneSet{ObjectMeta: meta(Always), Spec: apps.CloneSetSpec{Replicas: ptr.To[int32](0)}}, "policy.kruise.io/delete-protection=Always"},
		{"always, already deleting", &apps.CloneSet{ObjectMeta: deleting}, ""},
		{"cascading with replicas", &apps.CloneSet{ObjectMeta: meta(Cascading), Spec: apps.CloneSetSpec{Replicas: ptr.To[int32](2)}}, "replicas 2>0"},
		{"cascading, replicas unset (1)", &apps.StatefulSet{ObjectMeta: meta(Cascading)}, "replicas 1>0"},
		{"cascading, scaled to 0", &apps.StatefulSet{ObjectMeta: meta(Cascading), Spec: apps.StatefulSetSpec{Replicas: ptr.To[int32](0)}}, ""},
		{"cascading daemonset with pods", &apps.DaemonSet{ObjectMeta: meta(Cascading), Status: apps.DaemonSetStatus{DesiredNumberScheduled: 3}}, "desiredNumberScheduled 3>0"},
		{"cascading daemonset without pods", &apps.DaemonSet{ObjectMeta: meta(Cascading)}, ""},
		{"cascading sidecarset matching pods", &apps.SidecarSet{ObjectMeta: meta(Cascading), Status: apps.SidecarSetStatus{MatchedPods: 1}}, "matchedPods 1>0"},
		{"other value", &apps.CloneSet{ObjectMeta: meta("Never")}, ""},
		{"no label", &apps.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.obj)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), forbidden)):
				t.Errorf("got %v, want a refusal starting %q and saying %q", err, forbidden, c.want)
			}
		})
	}
}

// TestRefusal: the rule for any kind, given how to count what a Cascading deletion takes.
func TestRefusal(t *testing.T) {
	meta := func(value string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "x", Labels: map[string]string{Label: value}}
	}
	counted := func(n int64, err error) func() (Dependents, error) {
		return func() (Dependents, error) {
			return Dependents{What: "active pods", N: n, Remedy: "delete them first"}, err
		}
	}
	for _, c := range []struct {
		name  string
		meta  *metav1.ObjectMeta
		count func() (Dependents, error)
		want  string // substring of the refusal; "" = allowed
	}{
		{"cascading with dependents", meta(Cascading), counted(3, nil), "active pods 3>0: delete them first"},
		{"cascading without", meta(Cascading), counted(0, nil), ""},
		{"cascading, the count fails: refused", meta(Cascading), counted(0, errors.New("etcd is down")), "cannot tell what its deletion would take with it: etcd is down"},
		{"cascading, no rule for the kind", meta(Cascading), nil, ""},
		{"always, no rule for the kind", meta(Always), nil, "=Always: remove the label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Refusal(c.meta, c.count)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), forbidden)):
				t.Errorf("got %v, want a refusal starting %q and saying %q", err, forbidden, c.want)
			}
		})
	}
}
