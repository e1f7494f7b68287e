package deletionprotection

import (
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
