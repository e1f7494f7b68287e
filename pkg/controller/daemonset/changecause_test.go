package daemonset

import (
	"testing"

	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// TestRevisionChangeCause: the revision created for the workload's template carries its
// kubernetes.io/change-cause, which `kubectl inplace rollout history` shows, and none of its other
// annotations.
func TestRevisionChangeCause(t *testing.T) {
	set := testDaemonSet()
	set.Annotations = map[string]string{history.ChangeCauseAnnotation: "set image main=app:v2", "team": "web"}
	f := newFixture(t, set)
	f.sync(t, set)
	want := map[string]string{history.ChangeCauseAnnotation: "set image main=app:v2"}
	controllertest.CheckCreatedRevision(t, f.Kube.Actions(), want)
}
