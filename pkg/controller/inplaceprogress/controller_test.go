package inplaceprogress

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

func TestNeedsWork(t *testing.T) {
	gate := []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	cond := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: s}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"plain pod", corev1.Pod{}, false},
		{"gate without condition (new pod)", corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gate}}, true},
		{"gate with condition False", corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gate}, Status: corev1.PodStatus{Conditions: cond(corev1.ConditionFalse)}}, true},
		{"gate with condition True", corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gate}, Status: corev1.PodStatus{Conditions: cond(corev1.ConditionTrue)}}, false},
		{"grace period pending", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.InPlaceUpdateGraceKey: "{}"}}}, true},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: corev1.PodSpec{ReadinessGates: gate}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsWork(&tc.pod); got != tc.want {
				t.Errorf("needsWork = %v, want %v", got, tc.want)
			}
		})
	}
}

// A sync from a cache that has not seen the controller's own last write yet sends nothing: it
// would compute that write again on a stale Pod and conflict.
func TestSyncSkipsCacheBehindOwnWrite(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "5"},
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
			Containers: []corev1.Container{{Name: "c", Image: "app:v1"}}},
	}
	kube := fake.NewClientset(pod)
	kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		written := pod.DeepCopy()
		written.ResourceVersion = "6"
		return true, written, nil
	})
	informers := kubeinformers.NewSharedInformerFactory(kube, 0)
	c, err := New(kube, informers.Core().V1().Pods(), record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := informers.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	key := cache.MetaObjectToName(pod)
	if _, err := c.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	first := len(kube.Actions())
	if first == 0 {
		t.Fatal("the first sync wrote nothing, want InPlaceUpdateReady=True")
	}
	if _, err := c.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := kube.Actions()[first:]; len(got) != 0 {
		t.Errorf("second sync from the stale cache sent %v, want nothing", got)
	}
	// Once the cache has caught up (another writer moved the Pod on, condition still not True),
	// the controller acts again.
	newer := pod.DeepCopy()
	newer.ResourceVersion = "7"
	if err := informers.Core().V1().Pods().Informer().GetIndexer().Update(newer); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sync(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if len(kube.Actions()) == first {
		t.Error("sync from a cache past the controller's write sent nothing")
	}
}

// A completion that inplace-daemon writes with its runtime-containers-meta report (the status shows
// a container the report does not have yet) is left to the daemon for daemonCompletionWait; then,
// or at once when no report is due, this controller writes it.
func TestCompletionLeftToDaemon(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	updating := func(t *testing.T, reportedID string) *corev1.Pod {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "5", Annotations: map[string]string{}},
			Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:v1",
				ImageID: "sha256:v1", ContainerID: "containerd://app-0"}}},
		}
		spec, err := inplaceupdate.SpecFromRequest(pod, &apps.InPlaceUpdate{Spec: apps.InPlaceUpdateSpec{
			Revision: "r2", Containers: []apps.InPlaceUpdateContainer{{Name: "app", Image: "app:v2"}}}})
		if err != nil {
			t.Fatal(err)
		}
		step, err := inplaceupdate.Begin(pod, spec, start)
		if err != nil {
			t.Fatal(err)
		}
		pod = step.Pod
		// The kubelet runs and reports the new container; the daemon reported reportedID.
		pod.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "app", Image: "app:v2", ImageID: "sha256:v2",
			ContainerID: "containerd://app-1"}
		pod.Annotations[pub.RuntimeContainerMetaKey] = `{"containers":[{"name":"app","containerID":"` + reportedID + `","restartCount":0,"hashes":{"plainHash":1}}]}`
		return pod
	}
	run := func(t *testing.T, pod *corev1.Pod) (*Controller, *fake.Clientset, *clocktesting.FakePassiveClock) {
		kube := fake.NewClientset(pod)
		informers := kubeinformers.NewSharedInformerFactory(kube, 0)
		c, err := New(kube, informers.Core().V1().Pods(), record.NewFakeRecorder(10))
		if err != nil {
			t.Fatal(err)
		}
		clock := clocktesting.NewFakePassiveClock(start.Add(2 * time.Second))
		c.clock = clock
		if err := informers.Core().V1().Pods().Informer().GetIndexer().Add(pod); err != nil {
			t.Fatal(err)
		}
		return c, kube, clock
	}
	key := cache.ObjectName{Namespace: "ns", Name: "p"}

	t.Run("report due: the daemon's, then the controller's", func(t *testing.T) {
		c, kube, clock := run(t, updating(t, "containerd://app-0"))
		requeue, err := c.sync(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(kube.Actions()); n != 0 {
			t.Fatalf("sent %v, want nothing while the daemon is due", kube.Actions())
		}
		if requeue != daemonCompletionWait {
			t.Errorf("requeue after %v, want %v", requeue, daemonCompletionWait)
		}
		clock.SetTime(clock.Now().Add(daemonCompletionWait))
		if _, err := c.sync(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if got := verbs(kube); got != "update status" {
			t.Errorf("after the wait sent %q, want the completion in one pods/status update", got)
		}
	})
	t.Run("report up to date: the controller's at once", func(t *testing.T) {
		c, kube, _ := run(t, updating(t, "containerd://app-1"))
		if _, err := c.sync(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if got := verbs(kube); got != "update status" {
			t.Errorf("sent %q, want the completion in one pods/status update", got)
		}
	})
}

func verbs(kube *fake.Clientset) string {
	var got []string
	for _, a := range kube.Actions() {
		got = append(got, a.GetVerb()+" "+a.GetSubresource())
	}
	return strings.Join(got, ",")
}
