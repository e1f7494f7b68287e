package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// SidecarHash is one entry of a Pod's kruise.io/sidecarset-hash (or -without-image) annotation, in
// OpenKruise's wire format (SidecarSetUpgradeSpec), decoded here independently of the product.
type SidecarHash struct {
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
	Hash            string      `json:"hash"`
	SidecarSetName  string      `json:"sidecarSetName"`
	SidecarList     []string    `json:"sidecarList"`
	// ControllerRevision is the SidecarSet's ControllerRevision the Pod's sidecars follow.
	ControllerRevision string `json:"controllerRevision"`
}

// SidecarHashes decodes the Pod's annotation key (a JSON object keyed by SidecarSet name).
func SidecarHashes(t *testing.T, pod *corev1.Pod, key string) map[string]SidecarHash {
	t.Helper()
	raw, ok := pod.Annotations[key]
	if !ok {
		t.Fatalf("pod %s has no annotation %s: %v", pod.Name, key, pod.Annotations)
	}
	out := map[string]SidecarHash{}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("annotation %s of pod %s is not a JSON object keyed by SidecarSet name: %v: %q", key, pod.Name, err, raw)
	}
	return out
}

// ContainerNames are the names of containers, in order.
func ContainerNames(containers []corev1.Container) []string {
	var names []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	return names
}

// FindContainer is the container name of the list (nil when missing).
func FindContainer(containers []corev1.Container, name string) *corev1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// EnvValue is the value of env var name of the container, and whether it has it (as a plain value).
func EnvValue(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	return "", false
}

// FindMount is the container's volumeMount of volume name (nil when missing).
func FindMount(c *corev1.Container, name string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == name {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// InitStatus is the status of init container name (nil when missing).
func InitStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// Sidecar is a sidecar container of the local image placed by policy.
func Sidecar(c corev1.Container, policy v1alpha1.PodInjectPolicyType) v1alpha1.SidecarContainer {
	return v1alpha1.SidecarContainer{Container: c, PodInjectPolicy: policy}
}

// ScopedSidecarSet is a SidecarSet selecting Pods labelled app=label in namespace ns only.
func ScopedSidecarSet(name, ns, label string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": label}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		},
	}
}

// CreateSidecarSet creates the SidecarSet and deletes it when the test ends.
func CreateSidecarSet(t *testing.T, ctx context.Context, set *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
	t.Helper()
	created, err := Inplace.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating SidecarSet %s: %v", set.Name, err)
	}
	t.Cleanup(func() {
		_ = Inplace.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
	})
	return created
}

// LabeledPod is a Pod of the containers labelled app=label that stops within a second.
func LabeledPod(ns, name, label string, containers ...corev1.Container) *corev1.Pod {
	pod := CRRPod(ns, name, false, containers...)
	pod.Labels = map[string]string{"app": label}
	return pod
}

// WaitPodWebhook creates the Pod as a dry run until the Pod webhook's answer satisfies done: the
// webhook's SidecarSet cache lags a new or updated SidecarSet by a moment. It returns that answer.
func WaitPodWebhook(t *testing.T, ctx context.Context, what string, pod *corev1.Pod, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	Poll(t, ctx, RbacTimeout, what, func(ctx context.Context) (bool, error) {
		p, err := Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		got = p
		return done(p), fmt.Errorf("dry run: init containers %v, containers %v, annotations %v",
			ContainerNames(p.Spec.InitContainers), ContainerNames(p.Spec.Containers), p.Annotations)
	})
	return got
}

// AgentSidecarSet is a SidecarSet named after ns that selects Pods labelled app=label in ns and
// injects the sidecar UpgradeSidecar on AppImageV1 after the app containers.
func AgentSidecarSet(ns, label string) *v1alpha1.SidecarSet {
	set := ScopedSidecarSet(ns, ns, label)
	set.Spec.Containers = []v1alpha1.SidecarContainer{Sidecar(Container(UpgradeSidecar, AppImageV1), v1alpha1.AfterAppContainerType)}
	return set
}

// WaitInjects waits until the Pod webhook injects the SidecarSet named set into a Pod of ns with
// the labels (a dry run: the webhook's SidecarSet cache lags a new or updated SidecarSet by a
// moment) and returns the Pod as the webhook answered.
func WaitInjects(t *testing.T, ctx context.Context, ns string, labels map[string]string, set string) *corev1.Pod {
	t.Helper()
	probe := CRRPod(ns, "probe", false, Container("main", AppImageV1))
	probe.Labels = maps.Clone(labels)
	return WaitPodWebhook(t, ctx, "the Pod webhook to inject SidecarSet "+set, probe, func(p *corev1.Pod) bool {
		return slices.Contains(strings.Split(p.Annotations[v1alpha1.SidecarSetListAnnotation], ","), set)
	})
}

// ExpectUntouched checks that nothing was injected into the Pod: exactly its own containers,
// no injected env, no SidecarSet annotations.
func ExpectUntouched(t *testing.T, pod *corev1.Pod, why string, containers ...string) {
	t.Helper()
	if got := ContainerNames(pod.Spec.Containers); !slices.Equal(got, containers) {
		t.Errorf("%s: pod %s/%s has containers %v, want exactly %v", why, pod.Namespace, pod.Name, got, containers)
	}
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("%s: pod %s/%s has init containers %v, want none", why, pod.Namespace, pod.Name, ContainerNames(pod.Spec.InitContainers))
	}
	for _, c := range pod.Spec.Containers {
		if _, ok := EnvValue(&c, sidecarcontrol.InjectedEnvName); ok {
			t.Errorf("%s: container %s of pod %s has %s", why, c.Name, pod.Name, sidecarcontrol.InjectedEnvName)
		}
	}
	for _, key := range []string{v1alpha1.SidecarSetListAnnotation, v1alpha1.SidecarSetHashAnnotation, v1alpha1.SidecarSetHashWithoutImageAnnotation} {
		if v, ok := pod.Annotations[key]; ok {
			t.Errorf("%s: pod %s/%s has annotation %s=%q, want none", why, pod.Namespace, pod.Name, key, v)
		}
	}
}

const (
	// UpgradeSidecar is the sidecar the SidecarSets of these tests inject.
	UpgradeSidecar = "agent"
	// SettleWindow is how long a test watches that nothing more happens (a paused upgrade, a
	// partition reached): the controller reacts to a change within a second.
	SettleWindow = 5 * time.Second
)

// SidecarUpgrade is a CloneSet "web" whose Pods carry the sidecar of SidecarSet set.
type SidecarUpgrade struct {
	Ns, Set string
	Cs      *v1alpha1.CloneSet
	// Before are the Pods once injected and Ready, before any upgrade.
	Before map[string]*corev1.Pod
}

// NewSidecarUpgrade creates a SidecarSet (named after the test's namespace, selecting its Pods
// app=web) with the sidecar agent on AppImageV1, changed by mutate, then a CloneSet of n Pods, and
// waits until they are Ready and the SidecarSet counts them.
func NewSidecarUpgrade(t *testing.T, ctx context.Context, prefix string, n int32, mutate func(*v1alpha1.SidecarSet)) *SidecarUpgrade {
	t.Helper()
	ns := NewNamespace(t, ctx, prefix)
	set := ScopedSidecarSet(ns, ns, "web")
	set.Spec.Containers = []v1alpha1.SidecarContainer{Sidecar(corev1.Container{
		Name: UpgradeSidecar, Image: AppImageV1, ImagePullPolicy: corev1.PullNever,
		Env: []corev1.EnvVar{{Name: "AGENT_MODE", Value: "one"}},
	}, v1alpha1.AfterAppContainerType)}
	if mutate != nil {
		mutate(set)
	}
	CreateSidecarSet(t, ctx, set)
	probe := LabeledPod(ns, "probe", "web", corev1.Container{Name: "main", Image: AppImageV1, ImagePullPolicy: corev1.PullNever})
	WaitPodWebhook(t, ctx, "the Pod webhook to inject SidecarSet "+ns, probe, func(p *corev1.Pod) bool {
		return FindContainer(p.Spec.Containers, UpgradeSidecar) != nil
	})
	cs := NewUpdateCloneSet(t, ctx, ns, n, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := WaitCloneSetReady(t, ctx, cs, n)
	for name, p := range before {
		if c := FindContainer(p.Spec.Containers, UpgradeSidecar); c == nil || c.Image != AppImageV1 {
			t.Fatalf("pod %s: containers %v, want the sidecar %s on %s", name, ContainerNames(p.Spec.Containers), UpgradeSidecar, AppImageV1)
		}
	}
	WaitSidecarSetStatus(t, ctx, ns, n, n, n, n)
	return &SidecarUpgrade{Ns: ns, Set: ns, Cs: cs, Before: before}
}

// UpdateSidecarSet changes the SidecarSet and returns what the update answered, retrying on
// conflicts: inplace-controller writes the SidecarSet's status at any moment.
func UpdateSidecarSet(t *testing.T, ctx context.Context, name string, change func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
	t.Helper()
	return Modify(t, ctx, Inplace.AppsV1alpha1().SidecarSets(), name, change)
}

func SidecarImage(image string) func(*v1alpha1.SidecarSet) {
	return func(s *v1alpha1.SidecarSet) { s.Spec.Containers[0].Image = image }
}

// WaitSidecarSetStatus waits until the SidecarSet observed its generation and counts the Pods so.
func WaitSidecarSetStatus(t *testing.T, ctx context.Context, name string, matched, updated, ready, updatedReady int32) *v1alpha1.SidecarSet {
	t.Helper()
	var got *v1alpha1.SidecarSet
	want := v1alpha1.SidecarSetStatus{MatchedPods: matched, UpdatedPods: updated, ReadyPods: ready, UpdatedReadyPods: updatedReady}
	Poll(t, ctx, RolloutTimeout, fmt.Sprintf("SidecarSet %s: matched %d, updated %d, ready %d, updatedReady %d", name, matched, updated, ready, updatedReady),
		func(ctx context.Context) (bool, error) {
			var err error
			if got, err = Inplace.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, err
			}
			st := got.Status
			if st.ObservedGeneration != got.Generation || st.MatchedPods != want.MatchedPods || st.UpdatedPods != want.UpdatedPods ||
				st.ReadyPods != want.ReadyPods || st.UpdatedReadyPods != want.UpdatedReadyPods {
				return false, fmt.Errorf("generation %d, status %+v", got.Generation, st)
			}
			return true, nil
		})
	return got
}

// SidecarRunning tells whether the Pod's sidecar runs image, ready, and the Pod is Ready.
func SidecarRunning(p *corev1.Pod, image string) bool {
	s := FindStatus(p, UpgradeSidecar)
	return SpecImage(p, UpgradeSidecar) == image && s != nil && s.Image == image && s.Ready && s.State.Running != nil && PodReady(p)
}

// PodsOnSidecar are the names of the Pods whose sidecar runs image, sorted.
func PodsOnSidecar(pods map[string]*corev1.Pod, image string) []string {
	var names []string
	for name, p := range pods {
		if SidecarRunning(p, image) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// CheckSidecarsUpgraded checks the Pods after an upgrade to image: the same Pods (UID, IP) as
// before, the sidecar on image restarted agentRestarts times, the app container never restarted.
func CheckSidecarsUpgraded(t *testing.T, before, after map[string]*corev1.Pod, image string, agentRestarts int32) {
	t.Helper()
	CheckSamePods(t, before, after)
	for name, p := range after {
		if b := before[name]; b != nil && p.Status.PodIP != b.Status.PodIP {
			t.Errorf("pod %s: IP %s, was %s", name, p.Status.PodIP, b.Status.PodIP)
		}
		if !SidecarRunning(p, image) {
			t.Errorf("pod %s: sidecar %s spec image %s, status %+v, want running %s", name, UpgradeSidecar, SpecImage(p, UpgradeSidecar), FindStatus(p, UpgradeSidecar), image)
		}
		if s := FindStatus(p, UpgradeSidecar); s == nil || s.RestartCount != agentRestarts {
			t.Errorf("pod %s: sidecar status %+v, want restartCount %d", name, s, agentRestarts)
		}
		if s := FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: app container status %+v, want restartCount 0: a sidecar upgrade must not restart it", name, s)
		}
	}
}

// WaitSidecarsOn waits until want Pods of the CloneSet run the sidecar image and returns the Pods.
func WaitSidecarsOn(t *testing.T, ctx context.Context, u *SidecarUpgrade, image string, want int) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	Poll(t, ctx, RolloutTimeout, fmt.Sprintf("%d Pods running sidecar %s on %s", want, UpgradeSidecar, image), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = CloneSetPods(ctx, u.Cs); err != nil {
			return false, err
		}
		on := PodsOnSidecar(pods, image)
		return len(on) == want, fmt.Errorf("on %s: %v", image, on)
	})
	return pods
}

// ExpectSidecarsStay watches for SettleWindow that exactly the Pods named run the sidecar image
// and no other Pod's sidecar is set to it.
func ExpectSidecarsStay(t *testing.T, ctx context.Context, u *SidecarUpgrade, image string, names []string, why string) {
	t.Helper()
	deadline := time.Now().Add(SettleWindow)
	for time.Now().Before(deadline) {
		pods, err := CloneSetPods(ctx, u.Cs)
		if err != nil {
			t.Fatal(err)
		}
		var set []string
		for name, p := range pods {
			if SpecImage(p, UpgradeSidecar) == image {
				set = append(set, name)
			}
		}
		sort.Strings(set)
		if !slices.Equal(set, names) {
			t.Fatalf("%s: the sidecars of %v are set to %s, want only %v", why, set, image, names)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CheckKubectlSidecarSet checks the row `kubectl get sidecarset NAME` prints: MATCHED UPDATED READY.
func CheckKubectlSidecarSet(t *testing.T, ctx context.Context, name string, want ...string) {
	t.Helper()
	lines := TableLines(MustKubectl(t, ctx, "", "get", "sidecarset", name))
	if len(lines) != 2 || len(lines[0]) < 5 || len(lines[1]) < 5 {
		t.Fatalf("kubectl get sidecarset %s: %q", name, lines)
	}
	if got := lines[0][:5]; !slices.Equal(got, []string{"NAME", "MATCHED", "UPDATED", "READY", "AGE"}) {
		t.Errorf("kubectl get sidecarset: columns %v", got)
	}
	if got := lines[1][1:4]; !slices.Equal(got, want) {
		t.Errorf("kubectl get sidecarset %s: MATCHED UPDATED READY = %v, want %v", name, got, want)
	}
}

// CreateInjectedPod creates the Pod once the Pod webhook injects SidecarSet set into it (a new
// SidecarSet reaches the webhook's informer within moments) and returns the Pod as stored.
func CreateInjectedPod(t *testing.T, ctx context.Context, pod *corev1.Pod, set string) *corev1.Pod {
	t.Helper()
	WaitPodWebhook(t, ctx, "the webhook to inject SidecarSet "+set, pod, func(p *corev1.Pod) bool {
		return p.Annotations[v1alpha1.SidecarSetListAnnotation] == set
	})
	if _, err := Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}
