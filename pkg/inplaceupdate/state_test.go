package inplaceupdate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// OnlyStateChanged lets a completion through pods/status only when nothing but the engine's own
// records changed; any other difference (a user's label, the spec, an owner) needs a Pod update.
func TestOnlyStateChanged(t *testing.T) {
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			Labels:      map[string]string{"app": "web", pub.LifecycleStateKey: "Updating"},
			Annotations: map[string]string{pub.InPlaceUpdateStateKey: "{}"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "a:1"}}},
	}
	cases := map[string]struct {
		change func(*corev1.Pod)
		want   bool
	}{
		"nothing": {func(*corev1.Pod) {}, true},
		"state and lifecycle": {func(p *corev1.Pod) {
			p.Labels[pub.LifecycleStateKey] = "Normal"
			p.Annotations[pub.LifecycleTimestampKey] = "now"
			p.Annotations[pub.InPlaceUpdateStateKey] = `{"completedTimestamp":"now"}`
			p.Annotations[pub.SidecarSetInPlaceUpdateStateKey] = "{}"
		}, true},
		"state annotation removed": {func(p *corev1.Pod) { delete(p.Annotations, pub.InPlaceUpdateStateKey) }, true},
		"a user's label":           {func(p *corev1.Pod) { p.Labels["tier"] = "gold" }, false},
		"a user's annotation":      {func(p *corev1.Pod) { p.Annotations["note"] = "x" }, false},
		"a label removed":          {func(p *corev1.Pod) { delete(p.Labels, "app") }, false},
		"the spec":                 {func(p *corev1.Pod) { p.Spec.Containers[0].Image = "a:2" }, false},
		"an owner": {func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Name: "o"}}
		}, false},
		"the status": {func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.change(updated)
			if got := OnlyStateChanged(base, updated); got != tc.want {
				t.Errorf("OnlyStateChanged = %v, want %v", got, tc.want)
			}
		})
	}
	// Labels emptied by the removal of the lifecycle label compare equal to none at all.
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{pub.LifecycleStateKey: "Updating"}}}
	if !OnlyStateChanged(bare, &corev1.Pod{}) {
		t.Error("a Pod that lost only its lifecycle label counts as changed")
	}
}
