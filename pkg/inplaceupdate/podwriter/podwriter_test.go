package podwriter

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// The last step of an update that also sets a label or annotation of the user's writes the Pod
// (state completed) before the condition that puts it back in service, with the condition patch
// bound to the Pod it just wrote, and sends no dry run.
func TestCompleteWritesPodThenConditions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7"}}
	kube := fake.NewClientset(pod)
	kube.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).DeepCopy()
		p.ResourceVersion = "8"
		return true, p, nil
	})
	done := pod.DeepCopy()
	done.Annotations = map[string]string{"state": "completed"}
	step := &inplaceupdate.Step{
		Pod:  done,
		Done: true,
		Conditions: []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue,
			Reason: inplaceupdate.ReasonInPlaceUpdateCompleted}},
	}
	if _, _, err := ApplyTo(context.Background(), kube.CoreV1().Pods("ns"), pod, func(*corev1.Pod) (*inplaceupdate.Step, error) {
		return step, nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range kube.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetSubresource())
		if p, ok := a.(k8stesting.PatchAction); ok && !strings.Contains(string(p.GetPatch()), `"resourceVersion":"8"`) {
			t.Errorf("condition patch not bound to the written Pod: %s", p.GetPatch())
		}
		if u, ok := a.(k8stesting.UpdateAction); ok && len(u.GetObject().(*corev1.Pod).Annotations) == 0 {
			t.Errorf("update without the completed state")
		}
	}
	if strings.Join(got, ",") != "update ,patch status" {
		t.Errorf("writes %v, want the Pod update then the status patch (and no dry run)", got)
	}
}

// A completing step with no condition to set (inplace-daemon set InPlaceUpdateReady True already)
// writes the Pod and succeeds; it used to fail on an empty status patch after writing the Pod.
func TestCompleteWithoutConditions(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7"}}
	kube := fake.NewClientset(pod)
	done := pod.DeepCopy()
	done.Annotations = map[string]string{"state": "completed"}
	_, _, err := ApplyTo(context.Background(), kube.CoreV1().Pods("ns"), pod, func(*corev1.Pod) (*inplaceupdate.Step, error) {
		return &inplaceupdate.Step{Pod: done, Done: true}, nil
	})
	if err != nil {
		t.Fatalf("completing without conditions: %v", err)
	}
	var got []string
	for _, a := range kube.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetSubresource())
	}
	if strings.Join(got, ",") != "update " {
		t.Errorf("writes %v, want the Pod update only", got)
	}
}

// The last step of an update that changes only the engine's records (the state annotation, the
// lifecycle label and its timestamp) writes them with the condition in one pods/status update,
// bound to the Pod as read, and sends nothing else.
func TestCompleteRecordsOnlyInOneStatusWrite(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7",
			Labels:      map[string]string{"app": "web", pub.LifecycleStateKey: string(pub.LifecycleStateUpdating)},
			Annotations: map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2"}`}},
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: inplaceupdate.ReasonStartInPlaceUpdate},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		}},
	}
	kube := fake.NewClientset(pod)
	done := pod.DeepCopy()
	done.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateNormal)
	done.Annotations[pub.LifecycleTimestampKey] = "2026-11-26T00:00:00Z"
	done.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"r2","completedTimestamp":"2026-11-26T00:00:00Z"}`
	step := &inplaceupdate.Step{
		Pod:  done,
		Done: true,
		Conditions: []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue,
			Reason: inplaceupdate.ReasonInPlaceUpdateCompleted}},
	}
	written, _, err := ApplyTo(context.Background(), kube.CoreV1().Pods("ns"), pod, func(*corev1.Pod) (*inplaceupdate.Step, error) {
		return step, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range kube.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetSubresource())
		u, ok := a.(k8stesting.UpdateAction)
		if !ok {
			continue
		}
		sent := u.GetObject().(*corev1.Pod)
		if sent.ResourceVersion != "7" {
			t.Errorf("status update bound to resourceVersion %q, want the Pod as read (7)", sent.ResourceVersion)
		}
		if sent.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || sent.Annotations[pub.InPlaceUpdateStateKey] != done.Annotations[pub.InPlaceUpdateStateKey] {
			t.Errorf("status update without the completed records: labels %v, annotations %v", sent.Labels, sent.Annotations)
		}
		if len(sent.Status.Conditions) != 2 || sent.Status.Conditions[0].Status != corev1.ConditionTrue || sent.Status.Conditions[1].Type != corev1.PodReady {
			t.Errorf("status update conditions %+v, want InPlaceUpdateReady True and the rest kept", sent.Status.Conditions)
		}
	}
	if strings.Join(got, ",") != "update status" {
		t.Errorf("writes %v, want one pods/status update", got)
	}
	if written.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) {
		t.Errorf("returned Pod labels %v, want the written ones", written.Labels)
	}
	// The Pod it started from is not modified.
	if pod.Status.Conditions[0].Status != corev1.ConditionFalse || pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateUpdating) {
		t.Errorf("input Pod modified: %+v", pod)
	}
}

// A completion whose condition inplace-daemon set True already, and that changes only the
// engine's records, is one pods/status update too, not a Pod update.
func TestCompleteRecordsWithoutConditionsInOneStatusWrite(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7",
		Annotations: map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2"}`}}}
	kube := fake.NewClientset(pod)
	done := pod.DeepCopy()
	done.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"r2","completedTimestamp":"2026-11-26T00:00:00Z"}`
	if _, _, err := ApplyTo(context.Background(), kube.CoreV1().Pods("ns"), pod, func(*corev1.Pod) (*inplaceupdate.Step, error) {
		return &inplaceupdate.Step{Pod: done, Done: true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range kube.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetSubresource())
	}
	if strings.Join(got, ",") != "update status" {
		t.Errorf("writes %v, want one pods/status update", got)
	}
	stored, err := kube.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Annotations[pub.InPlaceUpdateStateKey] != done.Annotations[pub.InPlaceUpdateStateKey] {
		t.Errorf("stored state %q, want the completed one", stored.Annotations[pub.InPlaceUpdateStateKey])
	}
}

// A step that restarts a container (a new image) and resizes it sends the resize first, then the
// Pod update, rebased on the Pod the resize returned: its resourceVersion and its new resources
// (a Pod update may not change resources, and must not undo them). The kubelet then lowers a
// memory limit on the container that runs, not on the one it has just restarted.
func TestResizeBeforePodUpdate(t *testing.T) {
	old := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	smaller := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("800Mi")}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "app:v1", Resources: old}}},
	}
	kube := fake.NewClientset(pod)
	kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "resize" {
			return false, nil, nil
		}
		p := pod.DeepCopy()
		p.Spec.Containers[0].Resources = smaller
		p.ResourceVersion = "8"
		return true, p, nil
	})
	update := pod.DeepCopy()
	update.Spec.Containers[0].Image = "app:v2"
	_, _, err := ApplyTo(context.Background(), kube.CoreV1().Pods("ns"), pod, func(*corev1.Pod) (*inplaceupdate.Step, error) {
		return &inplaceupdate.Step{Pod: update, Resize: map[string]corev1.ResourceRequirements{"main": smaller}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range kube.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetSubresource())
		u, ok := a.(k8stesting.UpdateAction)
		if !ok {
			continue
		}
		sent := u.GetObject().(*corev1.Pod)
		if sent.ResourceVersion != "8" {
			t.Errorf("Pod update bound to resourceVersion %q, want the resized Pod's (8)", sent.ResourceVersion)
		}
		if c := sent.Spec.Containers[0]; c.Image != "app:v2" || !c.Resources.Limits.Memory().Equal(resource.MustParse("800Mi")) {
			t.Errorf("Pod update sends %s with limits %v, want app:v2 with the resized 800Mi", c.Image, c.Resources.Limits)
		}
	}
	if strings.Join(got, ",") != "patch resize,update " {
		t.Errorf("writes %v, want the resize then the Pod update", got)
	}
	if update.ResourceVersion != "7" || !update.Spec.Containers[0].Resources.Limits.Memory().Equal(resource.MustParse("1Gi")) {
		t.Errorf("the step's Pod was modified: %+v", update)
	}
}
