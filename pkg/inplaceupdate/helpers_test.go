package inplaceupdate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// t0 is the time updates begin in the tests (whole seconds: the state keeps seconds).
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// ---- containers ----

type containerOpt func(*corev1.Container)

func ctr(name, image string, opts ...containerOpt) corev1.Container {
	c := corev1.Container{Name: name, Image: image}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// envLabel makes the container read label key through env var name.
func envLabel(name, key string) containerOpt {
	return envField(name, "metadata.labels['"+key+"']")
}

func envAnnotation(name, key string) containerOpt {
	return envField(name, "metadata.annotations['"+key+"']")
}

func envField(name, path string) containerOpt {
	return func(c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}})
	}
}

func envValue(name, value string) containerOpt {
	return func(c *corev1.Container) { c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value}) }
}

// barrier is the env OpenKruise's webhook injects for launch priority p.
func barrier(p string) containerOpt {
	return func(c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: pub.ContainerLaunchBarrierEnvName, ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "web-0-barrier"}, Key: "p_" + p}}})
	}
}

// res sets requests and limits: res("cpu=100m,memory=64Mi", "cpu=200m") ("" for none).
func res(requests, limits string) containerOpt {
	return func(c *corev1.Container) { c.Resources = resources(requests, limits) }
}

func resources(requests, limits string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

func list(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	l := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		l[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return l
}

func resizePolicy(name corev1.ResourceName, p corev1.ResourceResizeRestartPolicy) containerOpt {
	return func(c *corev1.Container) {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: name, RestartPolicy: p})
	}
}

// ---- pods ----

func imageIDOf(image string) string { return "sha256:id-of-" + image }

// runningPod is a scheduled, running, ready Pod at revision rev-1 whose container statuses match
// its containers (instance 1 of each).
func runningPod(containers ...corev1.Container) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "default",
			Labels:      map[string]string{"app": "web", RevisionLabelKey: "rev-1"},
			Annotations: map[string]string{"note": "x"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: containers},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
		},
	}
	for _, c := range containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageIDOf(c.Image),
			ContainerID: "containerd://" + c.Name + "-1", Ready: true,
			Resources: c.Resources.DeepCopy(),
		})
	}
	return pod
}

// withGate adds the InPlaceUpdateReady readiness gate and condition (True).
func withGate(pod *corev1.Pod) *corev1.Pod {
	InjectReadinessGate(pod)
	SetConditions(&pod.Status, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})
	return pod
}

func status(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	return findStatus(pod, name)
}

// ---- what the caller, the kubelet and the daemon do ----

// write applies a Step as the caller would: conditions, resizes, then the Pod.
func write(t *testing.T, pod *corev1.Pod, step *Step) *corev1.Pod {
	t.Helper()
	out := pod.DeepCopy()
	if step.Pod != nil {
		out = step.Pod.DeepCopy()
		out.Status = *pod.Status.DeepCopy()
	}
	SetConditions(&out.Status, step.Conditions...)
	for name, r := range step.Resize {
		c := FindContainer(out.Spec.Containers, name)
		if c == nil {
			t.Fatalf("resize of unknown container %s", name)
		}
		c.Resources = mergeResources(c.Resources, r)
	}
	return out
}

// kubeletRestart is the kubelet recreating a container with its spec image (a new instance).
func kubeletRestart(pod *corev1.Pod, name string) {
	s := status(pod, name)
	c := FindContainer(pod.Spec.Containers, name)
	s.Image = c.Image
	s.ImageID = imageIDOf(c.Image)
	s.ContainerID = s.ContainerID + "-restarted"
	s.Ready = true
}

// kubeletResized is the kubelet reporting the spec resources of a container as applied.
func kubeletResized(pod *corev1.Pod, name string) {
	status(pod, name).Resources = FindContainer(pod.Spec.Containers, name).Resources.DeepCopy()
}

// daemonReports is the daemon writing runtime-containers-meta for every container, with the
// env-from-metadata hash each running instance sees (envSeen: container -> the metadata it was
// started with; absent = the Pod's current metadata).
func daemonReports(t *testing.T, pod *corev1.Pod, envSeen map[string]metav1.Object) {
	t.Helper()
	set := pub.RuntimeContainerMetaSet{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		var meta metav1.Object = pod
		if m, ok := envSeen[c.Name]; ok {
			meta = m
		}
		set.Containers = append(set.Containers, pub.RuntimeContainerMeta{
			Name: c.Name, ContainerID: status(pod, c.Name).ContainerID,
			Hashes: pub.RuntimeContainerHashes{ExtractedEnvFromMetadataHash: EnvFromMetadataHash(c, meta)},
		})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	setMap(&pod.Annotations, pub.RuntimeContainerMetaKey, string(b))
}

// ---- assertions ----

func mustState(t *testing.T, pod *corev1.Pod) *state {
	t.Helper()
	st, ok, err := readState(pod)
	if err != nil || !ok {
		t.Fatalf("state annotation: ok=%v err=%v", ok, err)
	}
	return st
}

func condition(conds []corev1.PodCondition, ct corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == ct {
			return &conds[i]
		}
	}
	return nil
}

func mustNotInPlace(t *testing.T, err error, fieldPath string) {
	t.Helper()
	var nip *NotInPlaceError
	if !errors.As(err, &nip) {
		t.Fatalf("want *NotInPlaceError at %s, got %v", fieldPath, err)
	}
	if nip.Field != fieldPath || !strings.HasPrefix(err.Error(), fieldPath+" ") {
		t.Fatalf("want field %s, got %q", fieldPath, err)
	}
}

// semEq compares times by instant and quantities by value (state goes through JSON).
func semEq(a, b any) bool { return apiequality.Semantic.DeepEqual(a, b) }
