package launchpriority

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{}},
		Spec: corev1.PodSpec{Containers: containers}}
}

func ordered(p *corev1.Pod) *corev1.Pod {
	p.Annotations[pub.ContainerLaunchPriorityKey] = pub.ContainerLaunchOrdered
	return p
}

func ctr(name string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Image: "img", Env: env}
}

func prio(v string) corev1.EnvVar {
	return corev1.EnvVar{Name: pub.ContainerLaunchPriorityEnvName, Value: v}
}

func barrierEnv(key string) corev1.EnvVar {
	return corev1.EnvVar{Name: pub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "p-barrier"}, Key: key}}}
}

func TestPriorities(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int
	}{
		{"none", pod(ctr("a"), ctr("b")), map[string]int{}},
		{"the injected barrier env only is read when present",
			ordered(pod(ctr("a", barrierEnv("p_10")), ctr("b", prio("99")), ctr("c", barrierEnv("p_-5")))),
			map[string]int{"a": 10, "c": -5}},
		{"Ordered: the first container is the highest", ordered(pod(ctr("a"), ctr("b"), ctr("c"))),
			map[string]int{"a": 0, "b": -1, "c": -2}},
		{"Ordered with one container is no priority", ordered(pod(ctr("a"))), map[string]int{}},
		{"KRUISE_CONTAINER_PRIORITY: others default to 0", pod(ctr("a"), ctr("b", prio("10"))),
			map[string]int{"a": 0, "b": 10}},
		{"KRUISE_CONTAINER_PRIORITY all equal is no priority", pod(ctr("a", prio("5")), ctr("b", prio("5"))), map[string]int{}},
		{"a priority that is not an integer is 0", pod(ctr("a", prio("high")), ctr("b", prio("1"))),
			map[string]int{"a": 0, "b": 1}},
	}
	for _, tc := range cases {
		if got := Priorities(tc.pod); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func barrierKeys(p *corev1.Pod) []string {
	var keys []string
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == pub.ContainerLaunchBarrierEnvName {
				if e.ValueFrom.ConfigMapKeyRef.Name != BarrierName(p.Name) {
					keys = append(keys, "wrong configmap "+e.ValueFrom.ConfigMapKeyRef.Name)
				}
				keys = append(keys, c.Name+"="+e.ValueFrom.ConfigMapKeyRef.Key)
			}
		}
	}
	return keys
}

func TestAssign(t *testing.T) {
	p := ordered(pod(ctr("a"), ctr("b"), ctr("c")))
	changed, warning := Assign(p)
	if !changed || warning != "" {
		t.Fatalf("Ordered: changed %v, warning %q", changed, warning)
	}
	if got, want := barrierKeys(p), []string{"a=p_0", "b=p_-1", "c=p_-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Ordered: got %v, want %v", got, want)
	}
	if changed, _ := Assign(p); changed {
		t.Error("a Pod already prepared was changed again")
	}
	if got := len(p.Spec.Containers[0].Env); got != 1 {
		t.Errorf("container a has %d env vars after a second Assign, want 1", got)
	}

	p = pod(ctr("a", prio("1")), ctr("b", prio("x")), ctr("c", prio("3")))
	p.Name, p.GenerateName = "", "web-"
	changed, warning = Assign(p)
	if !changed || !strings.Contains(warning, "spec.containers[1].env[0].value") {
		t.Fatalf("env priorities: changed %v, warning %q", changed, warning)
	}
	if !strings.HasPrefix(p.Name, "web-") || len(p.Name) <= len("web-") {
		t.Errorf("generateName: name %q", p.Name)
	}
	if got, want := barrierKeys(p), []string{"a=p_1", "b=p_0", "c=p_3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("env priorities: got %v, want %v", got, want)
	}

	for name, p := range map[string]*corev1.Pod{
		"no priority":   pod(ctr("a"), ctr("b")),
		"one container": ordered(pod(ctr("a"))),
		"all equal":     pod(ctr("a", prio("2")), ctr("b", prio("2"))),
		"Ordered is a value": func() *corev1.Pod {
			p := pod(ctr("a"), ctr("b"))
			p.Annotations[pub.ContainerLaunchPriorityKey] = "ordered"
			return p
		}(),
	} {
		if changed, _ := Assign(p); changed || barrierKeys(p) != nil {
			t.Errorf("%s: changed %v, keys %v", name, changed, barrierKeys(p))
		}
	}
}

func TestNext(t *testing.T) {
	p := ordered(pod(ctr("a"), ctr("b"), ctr("c")))
	Assign(p)
	status := func(ready ...bool) {
		p.Status.ContainerStatuses = nil
		for i, r := range ready {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: p.Spec.Containers[i].Name, Ready: r})
		}
	}
	cases := []struct {
		name    string
		ready   []bool
		barrier map[string]string
		want    Step
	}{
		{"no ConfigMap, no status yet", nil, nil, Step{Release: "p_0"}},
		{"first released, not ready", []bool{false, false, false}, map[string]string{"p_0": "true"}, Step{}},
		{"first ready", []bool{true, false, false}, map[string]string{"p_0": "true"}, Step{Release: "p_-1"}},
		{"second ready: the last is released and the launch completed", []bool{true, true, false},
			map[string]string{"p_0": "true", "p_-1": "true"}, Step{Release: "p_-2", Complete: true}},
		{"the lowest already released", []bool{true, false, false},
			map[string]string{"p_0": "true", "p_-1": "true", "p_-2": "true"}, Step{Complete: true}},
		{"all ready", []bool{true, true, true}, map[string]string{"p_0": "true"}, Step{Complete: true}},
	}
	for _, tc := range cases {
		status(tc.ready...)
		if got := Next(p, tc.barrier); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}

	p.Annotations[pub.ContainerLaunchPriorityCompletedKey] = "true"
	status(false, false, false)
	if got := Next(p, nil); got != (Step{}) {
		t.Errorf("completed Pod: got %+v", got)
	}
	if got := Next(pod(ctr("a"), ctr("b")), nil); got != (Step{}) {
		t.Errorf("Pod without barrier: got %+v", got)
	}
}
