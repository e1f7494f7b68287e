package e2e

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestAdvancedStatefulSetInPlaceResizeAndRollback (OpenKruise InplaceVPA "should perform rolling
// updates(including resources) and roll backs"): with the InPlaceUpdateReady readiness gate and
// InPlaceIfPossible, a change of the resources and of a label main reads through env updates every
// Pod in place (same Pod, the update revision, the new resources in spec and status, the new env
// value); setting both back rolls back to the first revision the same way.
func TestAdvancedStatefulSetInPlaceResizeAndRollback(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-resize")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.OrderedReadyPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.Template.Labels["label-k2"] = "hello"
		s.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
		c := &s.Spec.Template.Spec.Containers[0]
		c.Resources = *resizeOld.DeepCopy()
		c.Env = []corev1.EnvVar{{Name: "TEST_ENV", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['label-k2']"}}}}
		c.Command = []string{"sh", "-c", `echo "label-k2=$TEST_ENV"; exec /app.sh`}
	}))
	before := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	first, _ := setRevisions(t, ctx, set)

	change := func(label string, res corev1.ResourceRequirements) func(*v1beta1.StatefulSet) {
		return func(s *v1beta1.StatefulSet) {
			s.Spec.Template.Labels["label-k2"] = label
			s.Spec.Template.Spec.Containers[0].Resources = *res.DeepCopy()
		}
	}
	check := func(pods map[string]*corev1.Pod, revision, label string, res corev1.ResourceRequirements, restarts int32) {
		t.Helper()
		framework.CheckSamePods(t, before, pods)
		for name, p := range pods {
			s := framework.ContainerStatus(t, p, "main")
			spec := p.Spec.Containers[0].Resources
			switch {
			case p.Labels[appsv1.StatefulSetRevisionLabel] != revision:
				t.Errorf("pod %s at revision %s, want %s", name, p.Labels[appsv1.StatefulSetRevisionLabel], revision)
			case framework.SpecImage(p, "main") != framework.AppImageV1:
				t.Errorf("pod %s runs %s, want %s", name, framework.SpecImage(p, "main"), framework.AppImageV1)
			case !sameResources(&spec, &res) || !sameResources(s.Resources, &spec):
				t.Errorf("pod %s resources: spec %+v, status %+v; want both %+v", name, spec, s.Resources, res)
			case s.RestartCount != restarts:
				t.Errorf("pod %s: main restarted %d times, want %d (once per env change)", name, s.RestartCount, restarts)
			}
			if out := framework.PodLog(t, ctx, ns, name, "main"); !strings.Contains(out, "label-k2="+label) {
				t.Errorf("pod %s: main logged %q, want label-k2=%s", name, out, label)
			}
		}
	}

	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, change("test", resizeNew))
	updated := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	current, update := setRevisions(t, ctx, set)
	if update == first {
		t.Fatalf("update revision %s is still the first one", update)
	}
	check(updated, update, "test", resizeNew, 1)
	if current != update {
		t.Errorf("current revision %s, want the update revision %s once every Pod is updated", current, update)
	}

	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, change("hello", resizeOld))
	rolledBack := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	if _, update := setRevisions(t, ctx, set); update != first {
		t.Errorf("rolled back: update revision %s, want the first revision %s again", update, first)
	}
	check(rolledBack, first, "hello", resizeOld, 2)
	if t.Failed() {
		for name, p := range rolledBack {
			t.Logf("pod %s: %s", name, fmt.Sprint(p.Annotations[pub.InPlaceUpdateStateKey]))
		}
	}
}
