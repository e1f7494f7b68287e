package inplaceupdate

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestComputeQOSClass(t *testing.T) {
	cases := []struct {
		name string
		spec corev1.PodSpec
		want corev1.PodQOSClass
	}{
		{"no resources", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i")}}, corev1.PodQOSBestEffort},
		{"zero quantities", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i", res("cpu=0", ""))}}, corev1.PodQOSBestEffort},
		{"only non-compute resources", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i", res("ephemeral-storage=1Gi", ""))}}, corev1.PodQOSBestEffort},
		{"requests only", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i", res("cpu=1", ""))}}, corev1.PodQOSBurstable},
		{"requests equal limits", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i", res("cpu=1,memory=1Gi", "cpu=1,memory=1Gi"))}}, corev1.PodQOSGuaranteed},
		{"limits only (requests defaulted)", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i", res("", "cpu=1,memory=1Gi"))}}, corev1.PodQOSGuaranteed},
		{"cpu limit only", corev1.PodSpec{Containers: []corev1.Container{ctr("a", "i", res("", "cpu=1"))}}, corev1.PodQOSBurstable},
		{"one container without limits", corev1.PodSpec{Containers: []corev1.Container{
			ctr("a", "i", res("cpu=1,memory=1Gi", "cpu=1,memory=1Gi")), ctr("b", "i")}}, corev1.PodQOSBurstable},
		{"init container counts", corev1.PodSpec{
			Containers:     []corev1.Container{ctr("a", "i", res("cpu=1,memory=1Gi", "cpu=1,memory=1Gi"))},
			InitContainers: []corev1.Container{ctr("init", "i", res("cpu=1", ""))}}, corev1.PodQOSBurstable},
		{"pod-level resources decide", corev1.PodSpec{
			Containers: []corev1.Container{ctr("a", "i")},
			Resources:  &corev1.ResourceRequirements{Requests: list("cpu=1,memory=1Gi"), Limits: list("cpu=1,memory=1Gi")}}, corev1.PodQOSGuaranteed},
	}
	for _, tc := range cases {
		if got := ComputeQOSClass(&tc.spec); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
	pod := runningPod(ctr("a", "i"))
	pod.Status.QOSClass = corev1.PodQOSBurstable
	if got := PodQOSClass(pod); got != corev1.PodQOSBurstable {
		t.Errorf("PodQOSClass must prefer status.qosClass, got %s", got)
	}
}

func TestSameImage(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"nginx", "nginx:latest", true},
		{"nginx", "docker.io/library/nginx:latest", true},
		{"library/nginx:1.29", "docker.io/library/nginx:1.29", true},
		{"index.docker.io/library/nginx", "nginx", true},
		{"nginx:1.29", "nginx:latest", false},
		{"nginx", "nginx:1.29", false},
		{"inplace.local/app", "inplace.local/app:latest", true},
		{"inplace.local/app:v1", "inplace.local/app:v2", false},
		{"localhost:5000/app", "localhost:5000/app:latest", true},
		{"localhost:5000/app:v1", "localhost:5000/app", false},
		{"nginx@sha256:abc", "docker.io/library/nginx@sha256:abc", true},
		{"nginx@sha256:abc", "nginx:latest", false},
		{"example.com/team/app", "team/app", false},
	}
	for _, tc := range cases {
		if got := SameImage(tc.a, tc.b); got != tc.want {
			t.Errorf("SameImage(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestEnvFromMetadataHash(t *testing.T) {
	c := ctr("app", "i", envLabel("VERSION", "version"), envAnnotation("CFG", "cfg"),
		envValue("PLAIN", "x"), envField("NODE", "spec.nodeName"),
		func(c *corev1.Container) { // excluded: SidecarSet hot-upgrade version
			c.Env = append(c.Env, corev1.EnvVar{Name: "SIDECARSET_VERSION", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['version.sidecarset.kruise.io/app']"}}})
		})
	meta := &metav1.ObjectMeta{Labels: map[string]string{"version": "1"}, Annotations: map[string]string{"cfg": "a"}}
	base := EnvFromMetadataHash(&c, meta)

	if got := RuntimeEnvFromMetadataHash(&c, map[string]string{"VERSION": "1", "CFG": "a", "PLAIN": "x", "NODE": "n1", "SIDECARSET_VERSION": "7"}); got != base {
		t.Errorf("the runtime hash of the same values differs: %d != %d", got, base)
	}
	if got := EnvFromMetadataHash(&c, &metav1.ObjectMeta{Labels: map[string]string{"version": "2"}, Annotations: map[string]string{"cfg": "a"}}); got == base {
		t.Error("a new label value must change the hash")
	}
	if got := EnvFromMetadataHash(&c, &metav1.ObjectMeta{Labels: map[string]string{"version": "1", "other": "z"},
		Annotations: map[string]string{"cfg": "a", "version.sidecarset.kruise.io/app": "9"}}); got != base {
		t.Error("keys no env reads, and excluded env, must not change the hash")
	}
	// Names and values are delimited: moving characters between them changes the hash.
	a := ctr("a", "i", envLabel("AB", "k"))
	b := ctr("a", "i", envLabel("A", "k"))
	if RuntimeEnvFromMetadataHash(&a, map[string]string{"AB": "c"}) == RuntimeEnvFromMetadataHash(&b, map[string]string{"A": "bc"}) {
		t.Error("different pairs hash alike")
	}
	if h := EnvFromMetadataHash(&corev1.Container{}, meta); h == 0 {
		t.Error("the hash must never be 0")
	}
}

// TestSelectBatch follows OpenKruise's four-container case: c1 (p20), c2 (p10), c3 (p0) and
// c4 (p0); c1 and c3 read label-k1 / label-k2, c2 reads label-k2, c4 an annotation.
func TestSelectBatch(t *testing.T) {
	pod := runningPod(
		ctr("c1", "c1", barrier("20"), envLabel("CFG", "label-k1")),
		ctr("c2", "c2", barrier("10"), envLabel("CFG", "label-k2")),
		ctr("c3", "c3", barrier("0"), envLabel("CFG", "label-k2")),
		ctr("c4", "c4", barrier("0"), envAnnotation("CFG", "annotation-k1")),
	)
	k2 := metav1.ObjectMeta{Labels: map[string]string{"label-k2": "bar"}}
	cases := []struct {
		name string
		spec UpdateSpec
		want []string
	}{
		{"one container", UpdateSpec{ContainerImages: map[string]string{"c1": "x"}}, []string{"c1"}},
		{"same priority together", UpdateSpec{ContainerImages: map[string]string{"c3": "x", "c4": "y"}}, []string{"c3", "c4"}},
		{"highest priority first", UpdateSpec{ContainerImages: map[string]string{"c1": "x", "c2": "y", "c4": "z"}}, []string{"c1"}},
		{"a shared changed label pulls a lower priority in", UpdateSpec{
			ContainerImages:      map[string]string{"c2": "y", "c4": "z"},
			ContainerRefMetadata: map[string]metav1.ObjectMeta{"c2": k2, "c3": k2}}, []string{"c2", "c3"}},
		{"resources count too", UpdateSpec{ContainerResources: map[string]corev1.ResourceRequirements{"c2": {}, "c3": {}}}, []string{"c2"}},
	}
	for _, tc := range cases {
		if got := sortedKeys(selectBatch(pod, &tc.spec)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}

	// Containers without a priority always go first, with the highest group.
	mixed := runningPod(ctr("plain", "p"), ctr("hi", "h", barrier("5")), ctr("lo", "l", barrier("1")))
	spec := &UpdateSpec{ContainerImages: map[string]string{"plain": "p2", "hi": "h2", "lo": "l2"}}
	if got := sortedKeys(selectBatch(mixed, spec)); !reflect.DeepEqual(got, []string{"hi", "plain"}) {
		t.Errorf("containers without priority: got %v", got)
	}
}
