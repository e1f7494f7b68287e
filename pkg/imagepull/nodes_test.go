package imagepull

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func podOn(ns, name, nodeName string, phase corev1.PodPhase, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: phase}}
}

func TestTargetNodes(t *testing.T) {
	gpu := map[string]string{"gpu": "true"}
	app := map[string]string{"app": "web"}
	nodes := []*corev1.Node{node("n3", gpu), node("n1", nil), node("n2", gpu), node("n4", nil)}
	terminating := podOn("ns", "gone", "n4", corev1.PodRunning, app)
	terminating.DeletionTimestamp = atp(0)
	pods := []*corev1.Pod{
		podOn("ns", "a", "n2", corev1.PodRunning, app),
		podOn("ns", "b", "n2", corev1.PodPending, app), // same node twice: once
		podOn("ns", "c", "n1", corev1.PodPending, app),
		podOn("ns", "done", "n3", corev1.PodSucceeded, app),
		podOn("ns", "failed", "n3", corev1.PodFailed, app),
		podOn("ns", "unknown", "n3", corev1.PodUnknown, app),
		podOn("ns", "unscheduled", "", corev1.PodPending, app),
		podOn("ns", "other-app", "n3", corev1.PodRunning, map[string]string{"app": "db"}),
		podOn("other", "other-ns", "n3", corev1.PodRunning, app),
		podOn("ns", "no-nodeimage", "n9", corev1.PodRunning, app),
		terminating,
	}
	for _, tc := range []struct {
		name     string
		selector *v1alpha1.ImagePullJobNodeSelector
		pods     *v1alpha1.ImagePullJobPodSelector
		want     []string
		wantErr  bool
	}{
		{name: "no selector: every node", want: []string{"n1", "n2", "n3", "n4"}},
		{name: "names, unknown ones skipped",
			selector: &v1alpha1.ImagePullJobNodeSelector{Names: []string{"n4", "n2", "n9"}}, want: []string{"n2", "n4"}},
		{name: "label selector",
			selector: &v1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: gpu}}, want: []string{"n2", "n3"}},
		{name: "empty label selector: every node",
			selector: &v1alpha1.ImagePullJobNodeSelector{}, want: []string{"n1", "n2", "n3", "n4"}},
		{name: "match expressions",
			selector: &v1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "gpu", Operator: metav1.LabelSelectorOpDoesNotExist}}}}, want: []string{"n1", "n4"}},
		{name: "pod selector: nodes of pending and running pods of the namespace",
			pods: &v1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: app}}, want: []string{"n1", "n2"}},
		{name: "pod selector matching nothing",
			pods: &v1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}}, want: []string{}},
		{name: "invalid selector",
			selector: &v1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "gpu", Operator: "Near"}}}}, wantErr: true},
		{name: "invalid pod selector",
			pods: &v1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("j", "u", "nginx")
			job.Spec.Selector, job.Spec.PodSelector = tc.selector, tc.pods
			got, err := TargetNodes(job, nodes, pods)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParallelism(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *intstr.IntOrString
		want int
	}{
		{"unset is 1", nil, 1},
		{"zero pauses", ptr.To(intstr.FromInt32(0)), 0},
		{"number", ptr.To(intstr.FromInt32(5)), 5},
		{"string of digits", ptr.To(intstr.FromString("3")), 3},
		{"percentage is not a number", ptr.To(intstr.FromString("50%")), 0},
		{"negative", ptr.To(intstr.FromInt32(-2)), 0},
	} {
		job := newJob("j", "u", "nginx")
		job.Spec.Parallelism = tc.p
		if got := Parallelism(job); got != tc.want {
			t.Errorf("%s: Parallelism = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNodesToStart(t *testing.T) {
	notSynced := []string{"n5", "n2", "n9", "n1"}
	for _, tc := range []struct {
		name        string
		parallelism *intstr.IntOrString
		active      int32
		want        []string
	}{
		{"unset: one at a time", nil, 0, []string{"n1"}},
		{"unset, one already active", nil, 1, nil},
		{"room for two of three", ptr.To(intstr.FromInt32(3)), 1, []string{"n1", "n2"}},
		{"more room than nodes", ptr.To(intstr.FromInt32(10)), 2, []string{"n1", "n2", "n5", "n9"}},
		{"more active than allowed (parallelism lowered)", ptr.To(intstr.FromInt32(2)), 5, nil},
		{"paused", ptr.To(intstr.FromInt32(0)), 0, nil},
	} {
		job := newJob("j", "u", "nginx")
		job.Spec.Parallelism = tc.parallelism
		got := NodesToStart(job, tc.active, notSynced)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if !slices.Equal(notSynced, []string{"n5", "n2", "n9", "n1"}) {
		t.Errorf("NodesToStart reordered its input: %v", notSynced)
	}
}
