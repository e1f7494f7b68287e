package statefulset

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// TestRevisionChangeCause: the revision created for the workload's template carries its
// kubernetes.io/change-cause, which `kubectl inplace rollout history` shows, and none of its other
// annotations.
func TestRevisionChangeCause(t *testing.T) {
	set := testSet(1, "Parallel")
	set.Annotations = map[string]string{history.ChangeCauseAnnotation: "set image main=app:v2", "team": "web"}
	f := newFixture(t, set)
	f.sync(t, set)
	var created []*appsv1.ControllerRevision
	for _, a := range f.kube.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "controllerrevisions" {
			created = append(created, c.GetObject().(*appsv1.ControllerRevision))
		}
	}
	want := map[string]string{history.ChangeCauseAnnotation: "set image main=app:v2"}
	if len(created) != 1 || !maps.Equal(created[0].Annotations, want) {
		for _, r := range created {
			t.Logf("created revision %s: annotations %v", r.Name, r.Annotations)
		}
		t.Errorf("created %d revisions, want one annotated %v", len(created), want)
	}
}
