package launchrelease

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
)

// TestSyncReleasesInOrder walks one Ordered Pod through its launch: the ConfigMap is created with
// the first key, the next key is added only once the first container is ready, and the Pod is
// marked completed with the last key.
func TestSyncReleasesInOrder(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: types.UID("uid-1"),
			Annotations: map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
	}
	launchpriority.Assign(pod)
	kube := fake.NewClientset(pod)
	factory := kubeinformers.NewSharedInformerFactory(kube, 0)
	podInformer := factory.Core().V1().Pods()
	c, err := New(kube, podInformer, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	store := podInformer.Informer().GetStore()
	key := cache.ObjectName{Namespace: "ns", Name: "web-0"}
	setReady := func(ready ...bool) {
		p := pod.DeepCopy()
		for i, r := range ready {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: p.Spec.Containers[i].Name, Ready: r})
		}
		if err := store.Update(p); err != nil {
			t.Fatal(err)
		}
	}
	barrier := func() map[string]string {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps("ns").Get(ctx, "web-0-barrier", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != pod.UID {
			t.Errorf("owner references %v, want the pod", cm.OwnerReferences)
		}
		return cm.Data
	}
	completed := func() bool {
		p, err := kube.CoreV1().Pods("ns").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return launchpriority.Completed(p)
	}
	sync := func() {
		t.Helper()
		if _, err := c.sync(ctx, key); err != nil {
			t.Fatal(err)
		}
	}

	if err := store.Add(pod); err != nil {
		t.Fatal(err)
	}
	sync()
	if got := barrier(); len(got) != 1 || got["p_0"] != "true" {
		t.Fatalf("after the first sync: barrier %v, want p_0 only", got)
	}
	setReady(false, false, false)
	sync()
	if got := barrier(); len(got) != 1 {
		t.Fatalf("first container not ready: barrier %v, want p_0 only", got)
	}
	setReady(true, false, false)
	sync()
	if got := barrier(); len(got) != 2 || got["p_-1"] != "true" || completed() {
		t.Fatalf("first container ready: barrier %v completed %v, want p_0 and p_-1, not completed", got, completed())
	}
	setReady(true, true, false)
	sync()
	if got := barrier(); len(got) != 3 || got["p_-2"] != "true" || !completed() {
		t.Fatalf("second container ready: barrier %v completed %v, want all three keys and completed", got, completed())
	}
}

func TestSyncLeavesAnotherOwnersConfigMap(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "new",
			Annotations: map[string]string{pub.ContainerLaunchPriorityKey: pub.ContainerLaunchOrdered}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
	}
	launchpriority.Assign(pod)
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-0-barrier", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "old"}}}}
	kube := fake.NewClientset(pod, stale)
	podInformer := kubeinformers.NewSharedInformerFactory(kube, 0).Core().V1().Pods()
	c, err := New(kube, podInformer, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := podInformer.Informer().GetStore().Add(pod); err != nil {
		t.Fatal(err)
	}
	retry, err := c.sync(ctx, cache.ObjectName{Namespace: "ns", Name: "web-0"})
	if err != nil || retry == 0 {
		t.Fatalf("sync: retry %v, err %v; want a retry", retry, err)
	}
	cm, _ := kube.CoreV1().ConfigMaps("ns").Get(ctx, "web-0-barrier", metav1.GetOptions{})
	if len(cm.Data) != 0 {
		t.Errorf("another pod's barrier was written: %v", cm.Data)
	}
}
