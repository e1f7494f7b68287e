package launchpriority

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// hookPaths returns container: hook path of the Pod's barrier hooks.
func hookPaths(p *corev1.Pod) map[string]string {
	paths := map[string]string{}
	for _, c := range p.Spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PostStart != nil && c.Lifecycle.PostStart.HTTPGet != nil {
			paths[c.Name] = c.Lifecycle.PostStart.HTTPGet.Path
		}
	}
	return paths
}

func withPostStart(c corev1.Container) corev1.Container {
	c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	return c
}

// TestAssignBarrierPostStart: the last container of every priority but the lowest gets the hook;
// whenever the hook could not keep the order exactly, the Pod gets the ConfigMap barrier instead.
func TestAssignBarrierPostStart(t *testing.T) {
	cases := []struct {
		name      string
		pod       *corev1.Pod
		want      Barrier
		hooks     map[string]string
		barrierOf []string // with the ConfigMap barrier
	}{
		{"Ordered: every container but the last", ordered(pod(ctr("a"), ctr("b"), ctr("c"))), BarrierPostStart,
			map[string]string{"a": "/launch-barrier/v1/ns/p/a", "b": "/launch-barrier/v1/ns/p/b"}, nil},
		{"env priorities non-increasing: the last of each level but the lowest",
			pod(ctr("a", prio("3")), ctr("b", prio("3")), ctr("c", prio("1")), ctr("d"), ctr("e")), BarrierPostStart,
			map[string]string{"b": "/launch-barrier/v1/ns/p/b", "c": "/launch-barrier/v1/ns/p/c"}, nil},
		{"env priorities out of spec order: ConfigMap", pod(ctr("low", prio("1")), ctr("high", prio("3"))), BarrierConfigMap,
			map[string]string{}, []string{"low=p_1", "high=p_3"}},
		{"a hooked container has its own postStart: ConfigMap", ordered(pod(withPostStart(ctr("a")), ctr("b"))), BarrierConfigMap,
			map[string]string{}, []string{"a=p_0", "b=p_-1"}},
		{"the lowest container's own postStart is no matter", ordered(pod(ctr("a"), withPostStart(ctr("b")))), BarrierPostStart,
			map[string]string{"a": "/launch-barrier/v1/ns/p/a"}, nil},
	}
	for _, tc := range cases {
		p := tc.pod
		p.Namespace = "ns"
		lowest := p.Spec.Containers[len(p.Spec.Containers)-1].Lifecycle
		if changed, _ := AssignBarrier(p, BarrierPostStart, 10393); !changed {
			t.Errorf("%s: not changed", tc.name)
		}
		if got := p.Annotations[BarrierAnnotation]; got != string(tc.want) {
			t.Errorf("%s: barrier %q, want %q", tc.name, got, tc.want)
		}
		if got := hookPaths(p); !reflect.DeepEqual(got, tc.hooks) && (tc.want == BarrierPostStart || len(got) > 0) {
			t.Errorf("%s: hooks %v, want %v", tc.name, got, tc.hooks)
		}
		if got := barrierKeys(p); !reflect.DeepEqual(got, tc.barrierOf) {
			t.Errorf("%s: barrier env %v, want %v", tc.name, got, tc.barrierOf)
		}
		if got := p.Spec.Containers[len(p.Spec.Containers)-1].Lifecycle; !reflect.DeepEqual(got, lowest) {
			t.Errorf("%s: the lowest container's lifecycle changed to %+v", tc.name, got)
		}
		if changed, _ := AssignBarrier(p, BarrierPostStart, 10393); changed {
			t.Errorf("%s: a Pod already prepared changed again", tc.name)
		}
	}
}

func TestAssignBarrierHook(t *testing.T) {
	p := ordered(pod(ctr("a"), ctr("b")))
	p.Name, p.GenerateName, p.Namespace = "", "web-", "ns"
	AssignBarrier(p, BarrierPostStart, 4321)
	if p.Name == "" || p.Name == "web-" {
		t.Fatalf("name %q, want one generated from web-", p.Name)
	}
	g := p.Spec.Containers[0].Lifecycle.PostStart.HTTPGet
	if g.Host != "127.0.0.1" || g.Port.IntValue() != 4321 || g.Scheme != corev1.URISchemeHTTP || g.Path != HookPath("ns", p.Name, "a") {
		t.Errorf("hook %+v, want GET http://127.0.0.1:4321%s", g, HookPath("ns", p.Name, "a"))
	}
	if Priorities(p)["a"] != 0 || Priorities(p)["b"] != -1 {
		t.Errorf("priorities %v after the postStart barrier, want a 0, b -1", Priorities(p))
	}
	if HasBarrier(p) {
		t.Error("HasBarrier: the postStart barrier is not launchrelease's")
	}
}

func TestAssignBarrierConfigMapWanted(t *testing.T) {
	p := ordered(pod(ctr("a"), ctr("b")))
	if changed, _ := AssignBarrier(p, BarrierConfigMap, 10393); !changed || len(hookPaths(p)) != 0 {
		t.Fatalf("changed %v, hooks %v", changed, hookPaths(p))
	}
	if got := barrierKeys(p); !reflect.DeepEqual(got, []string{"a=p_0", "b=p_-1"}) || p.Annotations[BarrierAnnotation] != "ConfigMap" {
		t.Errorf("barrier env %v, annotations %v: want OpenKruise's ConfigMap barrier", got, p.Annotations)
	}
	if changed, _ := AssignBarrier(pod(ctr("a"), ctr("b")), BarrierPostStart, 10393); changed {
		t.Error("a Pod without priorities changed")
	}
}

func TestHookPath(t *testing.T) {
	path := HookPath("ns", "web-0", "app")
	if path != "/launch-barrier/v1/ns/web-0/app" {
		t.Errorf("HookPath %q", path)
	}
	if ns, p, c, ok := ParseHookPath(path); !ok || ns != "ns" || p != "web-0" || c != "app" {
		t.Errorf("ParseHookPath(%q) = %q %q %q %v", path, ns, p, c, ok)
	}
	for _, bad := range []string{"/launch-barrier/v1/ns/p", "/launch-barrier/v1/ns/p/c/d", "/other/ns/p/c", "/launch-barrier/v1/ns//c"} {
		if _, _, _, ok := ParseHookPath(bad); ok {
			t.Errorf("ParseHookPath(%q) ok", bad)
		}
	}
}

func TestGateOf(t *testing.T) {
	p := pod(ctr("a", prio("3")), ctr("b", prio("3")), ctr("c", prio("1")), ctr("d"))
	if _, ok := GateOf(p, "b"); ok {
		t.Error("a Pod without the postStart barrier has a gate")
	}
	AssignBarrier(p, BarrierPostStart, 10393)
	if g, ok := GateOf(p, "b"); !ok || !reflect.DeepEqual(g, Gate{Wait: []string{"a", "b"}, Later: []string{"c", "d"}}) {
		t.Errorf("gate of b %+v %v", g, ok)
	}
	if g, ok := GateOf(p, "c"); !ok || !reflect.DeepEqual(g, Gate{Wait: []string{"a", "b", "c"}, Later: []string{"d"}}) {
		t.Errorf("gate of c %+v %v", g, ok)
	}
	if _, ok := GateOf(p, "nope"); ok {
		t.Error("an unknown container has a gate")
	}
}
