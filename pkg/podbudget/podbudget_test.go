package podbudget

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

func TestDesiredAvailable(t *testing.T) {
	for _, c := range []struct {
		name      string
		max, min  *intstr.IntOrString
		total     int32
		want      int32
		wantError bool
	}{
		{"max count", ptr.To(intstr.FromInt32(1)), nil, 10, 9, false},
		{"max percent rounds up", ptr.To(intstr.FromString("25%")), nil, 10, 7, false}, // 2.5 -> 3 unavailable
		{"max above total", ptr.To(intstr.FromInt32(20)), nil, 10, 0, false},
		{"min count", nil, ptr.To(intstr.FromInt32(4)), 10, 4, false},
		{"min percent rounds up", nil, ptr.To(intstr.FromString("25%")), 10, 3, false},
		{"max wins", ptr.To(intstr.FromInt32(2)), ptr.To(intstr.FromInt32(1)), 10, 8, false},
		{"bad percent", ptr.To(intstr.FromString("x%")), nil, 10, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DesiredAvailable(&policy.PodUnavailableBudgetSpec{MaxUnavailable: c.max, MinAvailable: c.min}, c.total)
			if (err != nil) != c.wantError || got != c.want {
				t.Errorf("DesiredAvailable = %d, %v; want %d (error %v)", got, err, c.want, c.wantError)
			}
		})
	}
}

func TestProtectsAndIgnored(t *testing.T) {
	spec := &policy.PodUnavailableBudgetSpec{}
	for op, want := range map[policy.PubOperation]bool{"DELETE": true, "UPDATE": true, "EVICT": true, "RESIZE": false} {
		if Protects(spec, op) != want {
			t.Errorf("default operations: Protects(%s) = %v", op, !want)
		}
	}
	spec.ProtectOperations = []policy.PubOperation{"EVICT"}
	if Protects(spec, "DELETE") || !Protects(spec, "EVICT") {
		t.Errorf("protectOperations [EVICT]: DELETE %v, EVICT %v", Protects(spec, "DELETE"), Protects(spec, "EVICT"))
	}
	spec.IgnoredPodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
	for _, c := range []struct {
		pod  corev1.Pod
		want bool
	}{
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"canary": "true"}}}, true},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{policy.PodPubNoProtectionAnnotation: "true"}}}, true},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}, false},
	} {
		if got, err := Ignored(spec, &c.pod); err != nil || got != c.want {
			t.Errorf("Ignored(%v) = %v, %v; want %v", c.pod.ObjectMeta, got, err, c.want)
		}
	}
}

func pod(name string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

// TestAvailable: running and Ready, no unavailable-pod.kruise.io/ label, no in-place update under
// way; and Related reads either related-pub key, the new one first.
func TestAvailable(t *testing.T) {
	unlabelled, labelled, updating := pod("a", true), pod("b", true), pod("c", true)
	labelled.Labels = map[string]string{"unavailable-pod.kruise.io/offline": "true"}
	updating.Annotations = map[string]string{"apps.kruise.io/inplace-update-grace": "{}"}
	for _, c := range []struct {
		pod  *corev1.Pod
		want bool
	}{{unlabelled, true}, {pod("d", false), false}, {labelled, false}, {updating, false}} {
		if got := Available(c.pod); got != c.want {
			t.Errorf("Available(%s) = %v, want %v", c.pod.Name, got, c.want)
		}
	}
	p := pod("e", true)
	p.Annotations = map[string]string{"kruise.io/related-pub": "old"}
	if got := Related(p); got != "old" {
		t.Errorf("Related with the v1.9 key = %q, want old", got)
	}
	p.Annotations["pub.kruise.io/related-pub"] = "new"
	if got := Related(p); got != "new" {
		t.Errorf("Related with both keys = %q, want new", got)
	}
}

// TestStatus: recorded Pods count as unavailable until their timeout, then are dropped (and the
// earliest timeout is when to look again); terminating Pods and Pods gone drop out; allowed is
// available minus desired, not below 0.
func TestStatus(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	terminating := pod("d", true)
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	pub := &policy.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: policy.PodUnavailableBudgetStatus{
		DisruptedPods:   map[string]metav1.Time{"a": at(5 * time.Second), "gone": at(time.Second), "d": at(time.Second)},
		UnavailablePods: map[string]metav1.Time{"b": at(2 * time.Second), "c": at(11 * time.Second)},
	}}
	pods := []*corev1.Pod{pod("a", true), pod("b", true), pod("c", true), terminating, pod("e", false), pod("f", true)}
	st, recheck := Status(pub, pods, 6, 1, now)
	if len(st.DisruptedPods) != 1 || st.DisruptedPods["a"] != at(5*time.Second) {
		t.Errorf("disruptedPods %v, want only a (gone and terminating dropped)", st.DisruptedPods)
	}
	if len(st.UnavailablePods) != 1 || st.UnavailablePods["b"] != at(2*time.Second) {
		t.Errorf("unavailablePods %v, want only b (c timed out)", st.UnavailablePods)
	}
	// c (timed out, ready) and f count; a and b are recorded; d terminating; e not ready.
	if st.CurrentAvailable != 2 || st.UnavailableAllowed != 1 || st.DesiredAvailable != 1 || st.TotalReplicas != 6 || st.ObservedGeneration != 3 {
		t.Errorf("status %+v: want current 2, allowed 1, desired 1, total 6, generation 3", st)
	}
	if want := now.Add(UpdateTimeout - 2*time.Second); recheck == nil || !recheck.Equal(want) {
		t.Errorf("recheck %v, want %v (b's timeout, the earliest)", recheck, want)
	}
	if st, _ := Status(pub, pods, 6, 5, now); st.UnavailableAllowed != 0 {
		t.Errorf("desired above available: allowed %d, want 0", st.UnavailableAllowed)
	}
}

// TestCharge: a charge takes one unit and records the Pod where its operation belongs; the last
// unit goes once; a Pod already recorded is not charged again; a budget not yet counted at its
// generation refuses.
func TestCharge(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	pub := &policy.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
		Status: policy.PodUnavailableBudgetStatus{ObservedGeneration: 1, UnavailableAllowed: 1, CurrentAvailable: 3, DesiredAvailable: 2}}
	st, charged, err := Charge(pub, "p1", policy.PubUpdateOperation, now)
	if err != nil || !charged || st.UnavailableAllowed != 0 || !st.UnavailablePods["p1"].Time.Equal(now) || len(st.DisruptedPods) != 0 {
		t.Fatalf("first charge: %+v, %v, %v; want allowed 0 and p1 unavailable", st, charged, err)
	}
	pub.Status = st
	if _, _, err := Charge(pub, "p2", policy.PubDeleteOperation, now); !errors.As(err, new(*ErrNoBudget)) {
		t.Errorf("a charge past the budget: %v, want ErrNoBudget", err)
	}
	if st, charged, err := Charge(pub, "p1", policy.PubUpdateOperation, now); err != nil || charged || st.UnavailableAllowed != 0 {
		t.Errorf("charging p1 again: %+v, %v, %v; want no change and no error", st, charged, err)
	}
	pub.Status.UnavailableAllowed = 1
	if st, _, err := Charge(pub, "p3", policy.PubEvictOperation, now); err != nil || len(st.DisruptedPods) != 1 {
		t.Errorf("an eviction: %+v, %v; want p3 in disruptedPods", st, err)
	}
	pub.Generation = 2
	if _, _, err := Charge(pub, "p4", policy.PubUpdateOperation, now); !errors.As(err, new(*ErrNoBudget)) {
		t.Errorf("a budget whose new generation is not counted: %v, want ErrNoBudget", err)
	}
}

// TestConflict holds Conflict to OpenKruise's rule: one budget per workload, and selectors that
// overlap loosely (the same keys, each satisfiable at once) conflict.
func TestConflict(t *testing.T) {
	sel := func(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
	}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	ref := func(apiVersion, kind, name string) *policy.TargetReference {
		return &policy.TargetReference{APIVersion: apiVersion, Kind: kind, Name: name}
	}
	pub := func(name string, s *metav1.LabelSelector, r *policy.TargetReference) *policy.PodUnavailableBudget {
		return &policy.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: policy.PodUnavailableBudgetSpec{Selector: s, TargetReference: r}}
	}
	for _, c := range []struct {
		name      string
		new, old  *policy.PodUnavailableBudget
		wantField string
	}{
		{"same labels", pub("a", sel(map[string]string{"app": "web"}), nil), pub("b", sel(map[string]string{"app": "web"}), nil), "spec.selector"},
		{"other value", pub("a", sel(map[string]string{"app": "web"}), nil), pub("b", sel(map[string]string{"app": "db"}), nil), ""},
		{"more keys (loose: no conflict)", pub("a", sel(map[string]string{"app": "web"}), nil), pub("b", sel(map[string]string{"app": "web", "tier": "x"}), nil), ""},
		{"In overlapping", pub("a", sel(nil, req("app", metav1.LabelSelectorOpIn, "web", "db")), nil), pub("b", sel(map[string]string{"app": "db"}), nil), "spec.selector"},
		{"NotIn excluding", pub("a", sel(nil, req("app", metav1.LabelSelectorOpNotIn, "web")), nil), pub("b", sel(map[string]string{"app": "web"}), nil), ""},
		{"Exists against In", pub("a", sel(nil, req("app", metav1.LabelSelectorOpExists)), nil), pub("b", sel(map[string]string{"app": "web"}), nil), "spec.selector"},
		{"DoesNotExist against In", pub("a", sel(nil, req("app", metav1.LabelSelectorOpDoesNotExist)), nil), pub("b", sel(map[string]string{"app": "web"}), nil), ""},
		{"same workload, other version", pub("a", nil, ref("apps.kruise.io/v1alpha1", "CloneSet", "web")), pub("b", nil, ref("apps.kruise.io/v1beta1", "CloneSet", "web")), "spec.targetRef"},
		{"other workload", pub("a", nil, ref("apps/v1", "Deployment", "web")), pub("b", nil, ref("apps.kruise.io/v1alpha1", "CloneSet", "web")), ""},
		{"itself", pub("a", sel(map[string]string{"app": "web"}), nil), pub("a", sel(map[string]string{"app": "web"}), nil), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			name, field := Conflict(c.new, []*policy.PodUnavailableBudget{c.old})
			if field != c.wantField || (field != "" && name != c.old.Name) {
				t.Errorf("Conflict = %q, %q; want field %q", name, field, c.wantField)
			}
		})
	}
}

// TestOperation: what an in-place update does to a Pod, as a budget protects it.
func TestOperation(t *testing.T) {
	p := pod("a", true)
	p.Spec.Containers = []corev1.Container{
		{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
		{Name: "db", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}},
	}
	cpu := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	mem := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}
	for _, c := range []struct {
		name string
		spec inplaceupdate.UpdateSpec
		want policy.PubOperation
	}{
		{"image", inplaceupdate.UpdateSpec{ContainerImages: map[string]string{"app": "v2"}}, policy.PubUpdateOperation},
		{"env from metadata", inplaceupdate.UpdateSpec{UpdateEnvFromMetadata: true}, policy.PubUpdateOperation},
		{"labels", inplaceupdate.UpdateSpec{Metadata: &inplaceupdate.MetadataChange{Labels: map[string]string{"x": "y"}}}, ""},
		{"unavailable label", inplaceupdate.UpdateSpec{Metadata: &inplaceupdate.MetadataChange{
			Labels: map[string]string{"unavailable-pod.kruise.io/drain": "true"}}}, policy.PubUpdateOperation},
		{"resize without restart", inplaceupdate.UpdateSpec{ContainerResources: map[string]corev1.ResourceRequirements{"app": cpu}}, policy.PubResizeOperation},
		{"resize with restart", inplaceupdate.UpdateSpec{ContainerResources: map[string]corev1.ResourceRequirements{"db": mem}}, policy.PubUpdateOperation},
	} {
		got, disrupts := Operation(p, &c.spec)
		if got != c.want || disrupts != (c.want != "") {
			t.Errorf("%s: %q, %v; want %q", c.name, got, disrupts, c.want)
		}
	}
}

// A Pod charged for an in-place change counts as unavailable until it shows the change (a state
// whose updateTimestamp is the charge's time or later): from then its own state decides — here
// the update completed and the Pod is ready, so the unit is back before the 10 s timeout. A Pod
// whose state is older (the cache has not seen the change yet) keeps its entry.
func TestStatusReleasesObservedChange(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	charged := metav1.NewTime(now.Add(-2 * time.Second))
	state := func(at time.Time) string {
		return `{"revision":"r2","updateTimestamp":"` + at.Format(time.RFC3339) + `","completedTimestamp":"` + now.Format(time.RFC3339) + `"}`
	}
	done, stale := pod("done", true), pod("stale", true)
	done.Annotations = map[string]string{"apps.kruise.io/inplace-update-state": state(charged.Time)}
	stale.Annotations = map[string]string{"apps.kruise.io/inplace-update-state": state(charged.Add(-time.Minute))}
	pub := &policy.PodUnavailableBudget{Status: policy.PodUnavailableBudgetStatus{
		UnavailablePods: map[string]metav1.Time{"done": charged, "stale": charged}}}
	st, _ := Status(pub, []*corev1.Pod{done, stale}, 2, 1, now)
	if _, ok := st.UnavailablePods["done"]; ok || st.CurrentAvailable != 1 {
		t.Errorf("unavailable %v, current %d: want done released and counted, stale kept", st.UnavailablePods, st.CurrentAvailable)
	}
	if _, ok := st.UnavailablePods["stale"]; !ok {
		t.Errorf("unavailable %v: want stale kept until the cache shows its change", st.UnavailablePods)
	}
}

// What a direct write of a Pod does, as OpenKruise's webhook judges it.
func TestUpdateOperation(t *testing.T) {
	base := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "app:v1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
		}}},
	}
	with := func(change func(*corev1.Pod)) *corev1.Pod {
		p := base.DeepCopy()
		change(p)
		return p
	}
	for _, tc := range []struct {
		name string
		new  *corev1.Pod
		want policy.PubOperation // "" for no operation
	}{
		{"nothing", with(func(*corev1.Pod) {}), ""},
		{"labels and annotations", with(func(p *corev1.Pod) {
			p.Labels["tier"] = "front"
			p.Annotations = map[string]string{"a": "b"}
		}), ""},
		{"the same quantity written another way", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
		}), ""},
		{"an unavailable-pod label added", with(func(p *corev1.Pod) { p.Labels[policy.PubUnavailablePodLabelPrefix+"hold"] = "true" }), policy.PubUpdateOperation},
		{"an image", with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "app:v2" }), policy.PubUpdateOperation},
		{"cpu (no resize policy: NotRequired)", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		}), policy.PubResizeOperation},
		{"cpu limit set", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), policy.PubResizeOperation},
		{"memory, whose policy restarts the container", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}), policy.PubUpdateOperation},
		{"ephemeral storage (not resized in place)", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}), policy.PubUpdateOperation},
		{"cpu and an image", with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			p.Spec.Containers[0].Image = "app:v2"
		}), policy.PubUpdateOperation},
	} {
		op, ok := UpdateOperation(base, tc.new)
		if ok != (tc.want != "") || op != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.name, op, ok, tc.want)
		}
	}
}
