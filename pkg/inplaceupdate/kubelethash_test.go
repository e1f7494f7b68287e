package inplaceupdate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// The expected values were printed by a throwaway program built against k8s.io/kubernetes
// v1.35.4 (go-spew v1.1.1, the version that kubelet builds with) calling
// kubecontainer.HashContainer(&v1.Container{Name: name, Image: image}) — the function whose
// result the kubelet writes, as strconv.FormatUint(hash, 16), to the container's
// io.kubernetes.container.hash annotation (pkg/kubelet/kuberuntime/labels.go).
func TestKubeletContainerHash(t *testing.T) {
	for _, tc := range []struct {
		name, image string
		want        uint64
		wantHex     string
	}{
		{"app", "nginx:1.25", 3810829014, "e324a2d6"},
		{"nginx", "nginx", 2774804510, "a564281e"},
		{"main", "registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 3264343625, "c291ee49"},
		{"a", "", 54472240, "33f2e30"},
		// encoding/json escapes quotes and backslashes, and HTML-escapes < > &.
		{"x<y>&", `img:"q"\`, 2831616147, "a8c70893"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &corev1.Container{Name: tc.name, Image: tc.image,
				// Only name and image count since Kubernetes 1.31.
				Env: []corev1.EnvVar{{Name: "X", Value: "y"}}, Command: []string{"sleep"}}
			got := KubeletContainerHash(c)
			if got != tc.want || fmt.Sprintf("%x", got) != tc.wantHex {
				t.Errorf("KubeletContainerHash(%q, %q) = %d (%x), want %d (%s)", tc.name, tc.image, got, got, tc.want, tc.wantHex)
			}
		})
	}
}

// daemonReportsRuntime is the daemon writing runtime-containers-meta from what the runtime runs:
// for each container, the instance the status shows, created by the kubelet from image (absent
// from createdFrom: the spec image), so with PlainHash the kubelet's hash of that image.
func daemonReportsRuntime(t *testing.T, pod *corev1.Pod, createdFrom map[string]string) {
	t.Helper()
	set := pub.RuntimeContainerMetaSet{}
	for i := range pod.Spec.Containers {
		c := pod.Spec.Containers[i]
		if img, ok := createdFrom[c.Name]; ok {
			c.Image = img
		}
		set.Containers = append(set.Containers, pub.RuntimeContainerMeta{
			Name: c.Name, ContainerID: status(pod, c.Name).ContainerID,
			Hashes: pub.RuntimeContainerHashes{PlainHash: KubeletContainerHash(&c),
				ExtractedEnvFromMetadataHash: EnvFromMetadataHash(&c, pod)},
		})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	setMap(&pod.Annotations, pub.RuntimeContainerMetaKey, string(b))
}

// An image update to a new reference of the same image content: the imageID does not change and
// the runtime keeps reporting the old name in status.image (containerd reports the image's first
// tag). Only the kubelet's container hash in runtime-containers-meta can tell that the new
// container runs (OpenKruise's first completion check).
func TestSameImageIDCompletion(t *testing.T) {
	const from, to = "app:v1", "mirror.example.com/app:v1"
	begin := func(t *testing.T) *corev1.Pod {
		pod := withGate(runningPod(ctr("app", from), ctr("sidecar", "sidecar:v1")))
		daemonReportsRuntime(t, pod, nil)
		step, err := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": to}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return write(t, pod, step)
	}
	// sameImageRestart is the kubelet replacing app: a new instance, same imageID, old name.
	sameImageRestart := func(pod *corev1.Pod) {
		s := status(pod, "app")
		s.ContainerID += "-restarted"
		s.ImageID = imageIDOf(from)
		s.Image = from
	}
	cases := []struct {
		name     string
		simulate func(t *testing.T, pod *corev1.Pod)
		wantDone bool
	}{
		{"nothing happened yet", func(*testing.T, *corev1.Pod) {}, false},
		{"restarted, no runtime meta: the image id fallback cannot tell", func(_ *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			delete(pod.Annotations, pub.RuntimeContainerMetaKey)
		}, false},
		{"restarted, the daemon still reports the old instance", func(_ *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
		}, false},
		{"restarted, the daemon reports the new instance created from the new reference", func(t *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			daemonReportsRuntime(t, pod, nil)
		}, true},
		{"the new instance was created from the old reference", func(t *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			daemonReportsRuntime(t, pod, map[string]string{"app": from})
		}, false},
		{"the daemon saw the new instance before the kubelet reported it", func(t *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			daemonReportsRuntime(t, pod, nil)
			status(pod, "app").ContainerID = "containerd://app-1"
		}, false},
		{"another container's entry is stale (every spec container must match)", func(t *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			daemonReportsRuntime(t, pod, nil)
			status(pod, "sidecar").ContainerID += "-crashed"
		}, false},
		{"a kubelet that writes no hash (0): the fallback decides", func(t *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			daemonReports(t, pod, nil)
		}, false},
		{"the fallback still completes a new image id without runtime meta", func(_ *testing.T, pod *corev1.Pod) {
			kubeletRestart(pod, "app")
			status(pod, "app").ImageID = "sha256:other"
			delete(pod.Annotations, pub.RuntimeContainerMetaKey)
		}, true},
		{"a malformed annotation: the fallback decides", func(_ *testing.T, pod *corev1.Pod) {
			sameImageRestart(pod)
			pod.Annotations[pub.RuntimeContainerMetaKey] = "{"
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := begin(t)
			tc.simulate(t, pod)
			step, err := Progress(pod, t0.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if step.Done != tc.wantDone {
				t.Fatalf("done = %v, want %v (%s)", step.Done, tc.wantDone, step.Message)
			}
			if !tc.wantDone && !strings.Contains(step.Message, "container app to run image "+to) {
				t.Fatalf("message %q", step.Message)
			}
		})
	}
}

// The hash check satisfies image waits only: an env-from-metadata restart of the same batch
// is still waited for.
func TestSameImageIDCompletionStillWaitsForEnv(t *testing.T) {
	pod := withGate(runningPod(ctr("app", "app:v1"), ctr("sidecar", "sidecar:v1", envLabel("V", "version"))))
	pod.Labels["version"] = "1"
	daemonReportsRuntime(t, pod, nil)
	step, err := Begin(pod, &UpdateSpec{Revision: "rev-2",
		ContainerImages:      map[string]string{"app": "mirror.example.com/app:v1"},
		ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Labels: map[string]string{"version": "2"}}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	pod = write(t, pod, step)
	s := status(pod, "app")
	s.ContainerID += "-restarted"
	// The daemon reports app's new instance, and the sidecar still with version=1.
	set := pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{
		{Name: "app", ContainerID: s.ContainerID, Hashes: pub.RuntimeContainerHashes{PlainHash: KubeletContainerHash(&pod.Spec.Containers[0])}},
		{Name: "sidecar", ContainerID: status(pod, "sidecar").ContainerID, Hashes: pub.RuntimeContainerHashes{
			PlainHash:                    KubeletContainerHash(&pod.Spec.Containers[1]),
			ExtractedEnvFromMetadataHash: RuntimeEnvFromMetadataHash(&pod.Spec.Containers[1], map[string]string{"V": "1"})}},
	}}
	b, _ := json.Marshal(set)
	pod.Annotations[pub.RuntimeContainerMetaKey] = string(b)
	step, _ = Progress(pod, t0.Add(time.Second))
	if step.Done || strings.Contains(step.Message, "to run image") || !strings.Contains(step.Message, "container sidecar to be restarted") {
		t.Fatalf("want a wait for the sidecar's env only: done %v, %q", step.Done, step.Message)
	}
}

func TestUnconfirmedImages(t *testing.T) {
	pod := withGate(runningPod(ctr("app", "app:v1"), ctr("sidecar", "sidecar:v1")))
	if got := UnconfirmedImages(pod); got != nil {
		t.Fatalf("no update: %v", got)
	}
	step, _ := Begin(pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v1-alias", "sidecar": "sidecar:v2"}}, t0)
	pod = write(t, pod, step)
	if got := UnconfirmedImages(pod); !reflect.DeepEqual(got, []string{"app", "sidecar"}) {
		t.Fatalf("before the kubelet acted: %v", got)
	}
	kubeletRestart(pod, "sidecar")
	status(pod, "app").ContainerID += "-restarted" // same image id, old name
	if got := UnconfirmedImages(pod); !reflect.DeepEqual(got, []string{"app"}) {
		t.Fatalf("after the restarts: %v, want [app] (same image id)", got)
	}
	daemonReportsRuntime(t, pod, nil)
	step, _ = Progress(pod, t0.Add(time.Second))
	if !step.Done {
		t.Fatalf("not done: %s", step.Message)
	}
	if got := UnconfirmedImages(write(t, pod, step)); got != nil {
		t.Fatalf("completed: %v", got)
	}
}

func TestRunsCurrentSpec(t *testing.T) {
	pod := runningPod(ctr("app", "app:v1"))
	entry := func(id string, hash uint64) *pub.RuntimeContainerMetaSet {
		return &pub.RuntimeContainerMetaSet{Containers: []pub.RuntimeContainerMeta{
			{Name: "app", ContainerID: id, Hashes: pub.RuntimeContainerHashes{PlainHash: hash}}}}
	}
	h := KubeletContainerHash(&pod.Spec.Containers[0])
	for _, tc := range []struct {
		name string
		set  *pub.RuntimeContainerMetaSet
		mod  func(*corev1.Pod)
		want bool
	}{
		{"consistent", entry("containerd://app-1", h), nil, true},
		{"no annotation", nil, nil, false},
		{"no entry", &pub.RuntimeContainerMetaSet{}, nil, false},
		{"other instance", entry("containerd://app-0", h), nil, false},
		{"other hash", entry("containerd://app-1", h+1), nil, false},
		{"no hash", entry("containerd://app-1", 0), nil, false},
		{"no status", entry("containerd://app-1", h), func(p *corev1.Pod) { p.Status.ContainerStatuses = nil }, false},
		{"status without container id", entry("", h), func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ContainerID = "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			if tc.mod != nil {
				tc.mod(p)
			}
			if got := RunsCurrentSpec(p, tc.set); got != tc.want {
				t.Errorf("RunsCurrentSpec = %v, want %v", got, tc.want)
			}
		})
	}
}
