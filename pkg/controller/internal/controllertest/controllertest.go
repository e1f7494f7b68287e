// Package controllertest holds the fixtures the controllers' unit tests share: a fixed clock
// start, the Events a fake recorder caught, and informer caches filled by hand (the tests never
// start their informers).
package controllertest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	policyv1beta1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
	inplacefake "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/fake"
	inplaceinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
)

// Now is where the tests' fake clocks start.
var Now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// Sync runs a controller's sync of key once, as a worker would, failing t on an error; it returns
// when the sync asks to look again.
func Sync(t testing.TB, sync func(context.Context, cache.ObjectName) (time.Duration, error), key cache.ObjectName) time.Duration {
	t.Helper()
	requeue, err := sync(context.Background(), key)
	if err != nil {
		t.Fatalf("sync %s: %v", key, err)
	}
	return requeue
}

// Events drains what the recorder caught so far, one Event a line.
func Events(recorder *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// Add puts objs in an informer's cache, as if the informer had seen them.
func Add(t testing.TB, idx cache.Indexer, objs ...any) {
	t.Helper()
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

// Replace makes an informer's cache hold exactly items (a List's Items), as a relist would.
func Replace[T any](t testing.TB, idx cache.Indexer, items []T) {
	t.Helper()
	objs := make([]any, len(items))
	for i := range items {
		objs[i] = &items[i]
	}
	if err := idx.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

// RuntimeObjects is objs as a fake clientset takes them.
func RuntimeObjects[T runtime.Object](objs []T) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// Indexer is a namespaced cache holding objs, for a lister the test builds itself.
func Indexer(t testing.TB, objs ...any) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	Add(t, idx, objs...)
	return idx
}

// CompareMetrics fails t unless the collector's metric name is exactly want (text exposition
// format).
func CompareMetrics(t testing.TB, c metrics.StableCollector, want, name string) {
	t.Helper()
	if err := testutil.CustomCollectAndCompare(c, strings.NewReader(want), name); err != nil {
		t.Error(err)
	}
}

// CheckCreatedRevision fails t unless the actions of a fake clientset created exactly one
// ControllerRevision and its annotations are exactly want.
func CheckCreatedRevision(t testing.TB, actions []k8stesting.Action, want map[string]string) {
	t.Helper()
	var created []*appsv1.ControllerRevision
	for _, a := range actions {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "controllerrevisions" {
			created = append(created, c.GetObject().(*appsv1.ControllerRevision))
		}
	}
	if len(created) != 1 || !maps.Equal(created[0].Annotations, want) {
		for _, r := range created {
			t.Logf("created revision %s: annotations %v", r.Name, r.Annotations)
		}
		t.Errorf("created %d revisions, want one annotated %v", len(created), want)
	}
}

// Acted are the names of the objects of resource a fake clientset's actions acted on with verb,
// each with its patch (empty for a create or delete). A created object's name is its name or its
// generateName.
func Acted(actions []k8stesting.Action, verb, resource string) map[string]string {
	out := map[string]string{}
	for _, a := range actions {
		if a.GetVerb() != verb || a.GetResource().Resource != resource {
			continue
		}
		switch a := a.(type) {
		case k8stesting.PatchAction:
			out[a.GetName()] = string(a.GetPatch())
		case k8stesting.DeleteAction:
			out[a.GetName()] = ""
		case k8stesting.CreateAction:
			obj := a.GetObject().(metav1.Object)
			out[obj.GetName()+obj.GetGenerateName()] = ""
		}
	}
	return out
}

// Created are the objects of type T that a fake clientset's actions created in resource, in
// their order.
func Created[T runtime.Object](actions []k8stesting.Action, resource string) []T {
	var out []T
	for _, a := range actions {
		if a.GetVerb() == "create" && a.GetResource().Resource == resource {
			if obj, ok := a.(k8stesting.CreateAction).GetObject().(T); ok {
				out = append(out, obj)
			}
		}
	}
	return out
}

// RunningStatus is the status of a running Pod of a workload: Ready (or not) since readySince,
// and InPlaceUpdateReady.
func RunningStatus(ready bool, readySince time.Time) corev1.PodStatus {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(readySince)},
		{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue},
	}}
}

// Fakes are what a controller under test runs on: fake clients, their informer factories (never
// started: a test fills the caches itself), a fake clock at Now and an Event recorder.
type Fakes struct {
	Kube             *kubefake.Clientset
	Inplace          *inplacefake.Clientset
	KubeInformers    kubeinformers.SharedInformerFactory
	InplaceInformers inplaceinformers.SharedInformerFactory
	Clock            *clocktesting.FakeClock
	Recorder         *record.FakeRecorder
}

// NewFakes is Fakes whose kube client holds kubeObjs and whose inplace client holds objs.
func NewFakes(kubeObjs []runtime.Object, objs ...runtime.Object) Fakes {
	f := Fakes{
		Kube:     kubefake.NewClientset(kubeObjs...),
		Inplace:  inplacefake.NewClientset(objs...),
		Clock:    clocktesting.NewFakeClock(Now),
		Recorder: record.NewFakeRecorder(100),
	}
	f.KubeInformers = kubeinformers.NewSharedInformerFactory(f.Kube, 0)
	f.InplaceInformers = inplaceinformers.NewSharedInformerFactory(f.Inplace, 0)
	return f
}

// Cache puts obj into the cache of its kind's informer (replacing an older one), as if the
// informer had seen it; a kind it does not know is a bug of the test (panic).
func (f Fakes) Cache(obj runtime.Object) {
	apps, core := f.InplaceInformers.Apps(), f.KubeInformers.Core().V1()
	var inf cache.SharedIndexInformer
	switch obj.(type) {
	case *v1alpha1.CloneSet:
		inf = apps.V1alpha1().CloneSets().Informer()
	case *v1alpha1.SidecarSet:
		inf = apps.V1alpha1().SidecarSets().Informer()
	case *v1alpha1.ImagePullJob:
		inf = apps.V1alpha1().ImagePullJobs().Informer()
	case *corev1.Pod:
		inf = core.Pods().Informer()
	case *corev1.PersistentVolumeClaim:
		inf = core.PersistentVolumeClaims().Informer()
	case *appsv1.ControllerRevision:
		inf = f.KubeInformers.Apps().V1().ControllerRevisions().Informer()
	case *appsv1.Deployment:
		inf = f.KubeInformers.Apps().V1().Deployments().Informer()
	case *appsv1.ReplicaSet:
		inf = f.KubeInformers.Apps().V1().ReplicaSets().Informer()
	case *policyv1beta1.PodUnavailableBudget:
		inf = f.InplaceInformers.Policy().V1beta1().PodUnavailableBudgets().Informer()
	default:
		panic(fmt.Sprintf("controllertest: no informer for %T", obj))
	}
	if err := inf.GetIndexer().Update(obj); err != nil {
		panic(err)
	}
}

// Events drains what the recorder caught so far, one Event a line.
func (f Fakes) Events() string { return Events(f.Recorder) }

// Names are the objects' names, in their order.
func Names[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}
