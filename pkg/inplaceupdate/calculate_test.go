package inplaceupdate

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/inplace-dev/inplace/pkg/features"
)

func template(labels map[string]string, containers ...corev1.Container) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func TestCalculateSpecInPlace(t *testing.T) {
	app := func(opts ...containerOpt) corev1.Container { return ctr("app", "app:v1", opts...) }
	burstable := res("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi")
	cases := []struct {
		name     string
		old, new *corev1.PodTemplateSpec
		want     *UpdateSpec
	}{{
		name: "nothing changed",
		old:  template(map[string]string{"a": "1"}, app()),
		new:  template(map[string]string{"a": "1"}, app()),
		want: &UpdateSpec{Revision: "rev-2"},
	}, {
		name: "image of one container",
		old:  template(nil, app(), ctr("sidecar", "sidecar:v1")),
		new:  template(nil, app(), ctr("sidecar", "sidecar:v2")),
		want: &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"sidecar": "sidecar:v2"}},
	}, {
		name: "labels and annotations set and removed, no container reads them",
		old: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{"a": "1", "gone": "x"}, Annotations: map[string]string{"n": "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{app()}}},
		new: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{"a": "2", "b": "new"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{app()}}},
		want: &UpdateSpec{Revision: "rev-2", Metadata: &MetadataChange{
			Labels: map[string]string{"a": "2", "b": "new"}, RemoveLabels: []string{"gone"}, RemoveAnnotations: []string{"n"}}},
	}, {
		name: "label read through env: recorded for that container and restarted by the daemon",
		old:  template(map[string]string{"version": "1", "other": "x"}, app(envLabel("VERSION", "version")), ctr("sidecar", "sidecar:v1")),
		new:  template(map[string]string{"version": "2", "other": "y"}, app(envLabel("VERSION", "version")), ctr("sidecar", "sidecar:v1")),
		want: &UpdateSpec{Revision: "rev-2",
			ContainerRefMetadata:  map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "2"}}},
			Metadata:              &MetadataChange{Labels: map[string]string{"other": "y"}},
			UpdateEnvFromMetadata: true},
	}, {
		name: "annotation read through env by two containers",
		old: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cfg": "1"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{app(envAnnotation("CFG", "cfg")), ctr("sidecar", "s:1", envAnnotation("C", "cfg"))}}},
		new: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"cfg": "2"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{app(envAnnotation("CFG", "cfg")), ctr("sidecar", "s:1", envAnnotation("C", "cfg"))}}},
		want: &UpdateSpec{Revision: "rev-2",
			ContainerRefMetadata: map[string]metav1.ObjectMeta{
				"app":     {Annotations: map[string]string{"cfg": "2"}},
				"sidecar": {Annotations: map[string]string{"cfg": "2"}}},
			UpdateEnvFromMetadata: true},
	}, {
		// OpenKruise #1239: the image change restarts the container, which then reads the new
		// label; no second (daemon) restart is recorded for it.
		name: "image and env-from-metadata of the same container: one restart",
		old:  template(map[string]string{"version": "1"}, app(envLabel("VERSION", "version"))),
		new:  template(map[string]string{"version": "2"}, ctr("app", "app:v2", envLabel("VERSION", "version"))),
		want: &UpdateSpec{Revision: "rev-2",
			ContainerImages:      map[string]string{"app": "app:v2"},
			ContainerRefMetadata: map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "2"}}}},
	}, {
		// OpenKruise restarts for replaced or added keys only.
		name: "removed label read through env: removed, the reader not restarted",
		old:  template(map[string]string{"version": "1"}, app(envLabel("VERSION", "version"))),
		new:  template(nil, app(envLabel("VERSION", "version"))),
		want: &UpdateSpec{Revision: "rev-2",
			Metadata: &MetadataChange{RemoveLabels: []string{"version"}}},
	}, {
		name: "removed annotation read through env, another label replaced: only the replaced key restarts",
		old: func() *corev1.PodTemplateSpec {
			t := template(map[string]string{"version": "1"}, app(envLabel("VERSION", "version"), envAnnotation("NOTE", "note")))
			t.Annotations = map[string]string{"note": "x"}
			return t
		}(),
		new: template(map[string]string{"version": "2"}, app(envLabel("VERSION", "version"), envAnnotation("NOTE", "note"))),
		want: &UpdateSpec{Revision: "rev-2",
			ContainerRefMetadata:  map[string]metav1.ObjectMeta{"app": {Labels: map[string]string{"version": "2"}}},
			Metadata:              &MetadataChange{RemoveAnnotations: []string{"note"}},
			UpdateEnvFromMetadata: true},
	}, {
		name: "cpu resize within Burstable",
		old:  template(nil, app(burstable)),
		new:  template(nil, app(res("cpu=300m,memory=64Mi", "cpu=500m,memory=128Mi"))),
		want: &UpdateSpec{Revision: "rev-2", ContainerResources: map[string]corev1.ResourceRequirements{
			"app": resources("cpu=300m,memory=64Mi", "cpu=500m,memory=128Mi")}},
	}, {
		name: "resize within Guaranteed when the template has limits only (requests default to them)",
		old:  template(nil, app(res("", "cpu=1,memory=1Gi"))),
		new:  template(nil, app(res("", "cpu=2,memory=2Gi"))),
		want: &UpdateSpec{Revision: "rev-2", ContainerResources: map[string]corev1.ResourceRequirements{
			"app": resources("", "cpu=2,memory=2Gi")}},
	}, {
		name: "a request added (cpu) keeping Burstable",
		old:  template(nil, app(res("memory=64Mi", "memory=128Mi"))),
		new:  template(nil, app(res("cpu=100m,memory=64Mi", "memory=128Mi"))),
		want: &UpdateSpec{Revision: "rev-2", ContainerResources: map[string]corev1.ResourceRequirements{
			"app": resources("cpu=100m,memory=64Mi", "memory=128Mi")}},
	}, {
		name: "same quantities written differently is no change",
		old:  template(nil, app(res("cpu=1", "memory=1Gi"))),
		new:  template(nil, app(res("cpu=1000m", "memory=1024Mi"))),
		want: &UpdateSpec{Revision: "rev-2"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldCopy, newCopy := tc.old.DeepCopy(), tc.new.DeepCopy()
			got, err := CalculateSpec(tc.old, tc.new, "rev-2")
			if err != nil {
				t.Fatalf("not in place: %v", err)
			}
			if got.String() != tc.want.String() {
				t.Fatalf("spec\n got %s\nwant %s", got, tc.want)
			}
			if !reflect.DeepEqual(tc.old, oldCopy) || !reflect.DeepEqual(tc.new, newCopy) {
				t.Fatal("CalculateSpec modified its input")
			}
		})
	}
}

func TestCalculateSpecNotInPlace(t *testing.T) {
	app := func(opts ...containerOpt) corev1.Container { return ctr("app", "app:v1", opts...) }
	guaranteed := res("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")
	withInit := func(image string) *corev1.PodTemplateSpec {
		tpl := template(nil, app())
		tpl.Spec.InitContainers = []corev1.Container{ctr("init", image)}
		return tpl
	}
	cases := []struct {
		name      string
		old, new  *corev1.PodTemplateSpec
		wantField string
		wantWords string
	}{
		{"env value changed", template(nil, app(envValue("MODE", "a"))), template(nil, app(envValue("MODE", "b"))),
			"spec.containers[0].env[0].value", "only container images and resources"},
		{"env added", template(nil, app()), template(nil, app(envValue("MODE", "a"))),
			"spec.containers[0].env", "only container images and resources"},
		{"command changed", template(nil, app()), template(nil, ctr("app", "app:v1", func(c *corev1.Container) { c.Command = []string{"run"} })),
			"spec.containers[0].command", "can change in place"},
		{"port changed", template(nil, ctr("app", "app:v1", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80}} })),
			template(nil, ctr("app", "app:v1", func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 8080}} })),
			"spec.containers[0].ports[0].containerPort", "can change in place"},
		{"container added", template(nil, app()), template(nil, app(), ctr("sidecar", "s:1")),
			"spec.containers", "cannot be added or removed"},
		{"containers reordered", template(nil, app(), ctr("sidecar", "s:1")), template(nil, ctr("sidecar", "s:1"), app()),
			"spec.containers[0].name", "renamed or reordered"},
		{"init container image", withInit("init:v1"), withInit("init:v2"),
			"spec.initContainers[0].image", "init containers cannot be updated in place"},
		{"init container resources", func() *corev1.PodTemplateSpec {
			tpl := withInit("init:v1")
			tpl.Spec.InitContainers[0].Resources = resources("cpu=1", "")
			return tpl
		}(), func() *corev1.PodTemplateSpec {
			tpl := withInit("init:v1")
			tpl.Spec.InitContainers[0].Resources = resources("cpu=2", "")
			return tpl
		}(), "spec.initContainers[0].resources", "init containers cannot be resized"},
		{"volume added", template(nil, app()), &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{app()},
			Volumes: []corev1.Volume{{Name: "data"}}}}, "spec.volumes", "can change in place"},
		{"finalizers", template(nil, app()), &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"x/y"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{app()}}}, "metadata.finalizers", "can change in place"},
		{"QoS Guaranteed to Burstable", template(nil, app(guaranteed)), template(nil, app(res("cpu=1,memory=1Gi", "cpu=2,memory=1Gi"))),
			"spec.containers[0].resources", "QoS class from Guaranteed to Burstable"},
		{"QoS BestEffort to Burstable", template(nil, app()), template(nil, app(res("cpu=100m", ""))),
			"spec.containers[0].resources", "QoS class from BestEffort to Burstable"},
		{"limit removed", template(nil, app(res("cpu=100m", "cpu=1"))), template(nil, app(res("cpu=100m", ""))),
			"spec.containers[0].resources.limits[cpu]", "cannot be removed"},
		{"non-resizable resource", template(nil, app(res("ephemeral-storage=1Gi", ""))), template(nil, app(res("ephemeral-storage=2Gi", ""))),
			"spec.containers[0].resources.requests[ephemeral-storage]", "only cpu and memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := CalculateSpec(tc.old, tc.new, "rev-2")
			if spec != nil {
				t.Fatalf("want not in place, got %s", spec)
			}
			mustNotInPlace(t, err, tc.wantField)
			if !strings.Contains(err.Error(), tc.wantWords) {
				t.Fatalf("reason %q does not say %q", err, tc.wantWords)
			}
		})
	}
}

func TestCalculateSpecEnvReason(t *testing.T) {
	// The reason of the most common refusal, in full.
	_, err := CalculateSpec(template(nil, ctr("app", "a", envValue("X", "1"))), template(nil, ctr("app", "a", envValue("X", "2"))), "r")
	want := "spec.containers[0].env[0].value changed: only container images and resources, and Pod labels and annotations, can change in place"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestFirstDifference(t *testing.T) {
	cases := []struct {
		a, b any
		want string
	}{
		{map[string]any{"x": 1}, map[string]any{"x": 1}, ""},
		{map[string]any{"x": map[string]any{"y": []any{1, 2}}}, map[string]any{"x": map[string]any{"y": []any{1, 3}}}, "x.y[1]"},
		{map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, "b"},
		{map[string]any{"l": map[string]any{"nvidia.com/gpu": "1"}}, map[string]any{"l": map[string]any{"nvidia.com/gpu": "2"}}, "l[nvidia.com/gpu]"},
		{map[string]any{"a": []any{1}}, map[string]any{"a": map[string]any{}}, "a"},
	}
	for _, tc := range cases {
		if got, err := firstDifference(tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("firstDifference(%v, %v) = %q, %v; want %q", tc.a, tc.b, got, err, tc.want)
		}
	}
}

// TestCalculateSpecVerticalScalingGate: with InPlaceWorkloadVerticalScaling set to false
// (OpenKruise's default), a change of resources is not in place; an image change still is.
func TestCalculateSpecVerticalScalingGate(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.InPlaceWorkloadVerticalScaling, false)
	old := template(nil, ctr("app", "app:v1", res("cpu=100m", "cpu=1")))
	spec, err := CalculateSpec(old, template(nil, ctr("app", "app:v1", res("cpu=200m", "cpu=1"))), "rev-2")
	if spec != nil {
		t.Fatalf("want not in place, got %s", spec)
	}
	mustNotInPlace(t, err, "spec.containers[0].resources")
	if !strings.Contains(err.Error(), "feature gate InPlaceWorkloadVerticalScaling is off") {
		t.Errorf("reason %q does not name the gate", err)
	}
	if _, err := CalculateSpec(old, template(nil, ctr("app", "app:v2", res("cpu=100m", "cpu=1"))), "rev-2"); err != nil {
		t.Errorf("an image change with the gate off: %v", err)
	}
}
