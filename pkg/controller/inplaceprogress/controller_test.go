package inplaceprogress

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
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
