package nodeimage

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
)

var testNow = controllertest.Now

type fixture struct {
	controllertest.Fakes
	nodes cache.Indexer
	c     *Controller
}

// newFixture builds the controller on fake clients; objects go to both the clients and the
// informer caches (the informers are never started).
func newFixture(t *testing.T, nodes []*corev1.Node, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(controllertest.RuntimeObjects(nodes), objs...)}
	kinf := f.KubeInformers
	apps := f.InplaceInformers.Apps().V1alpha1()
	c, err := New(f.Inplace, kinf.Core().V1().Nodes(), apps.NodeImages(), apps.ImagePullJobs(), f.Recorder, f.Clock)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.nodes = kinf.Core().V1().Nodes().Informer().GetIndexer()
	for _, n := range nodes {
		controllertest.Add(t, f.nodes, n)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *v1alpha1.NodeImage:
			controllertest.Add(t, c.niIndex, o)
		case *v1alpha1.ImagePullJob:
			controllertest.Add(t, apps.ImagePullJobs().Informer().GetIndexer(), o)
		}
	}
	return f
}

// sync runs one sync of a node's key, then reloads the NodeImage cache from the client, as the
// informer would.
func (f *fixture) sync(t *testing.T, name string) time.Duration {
	t.Helper()
	requeue := controllertest.Sync(t, f.c.sync, cache.ObjectName{Name: name})
	list, err := f.Inplace.AppsV1alpha1().NodeImages().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.Replace(t, f.c.niIndex, list.Items)
	return requeue
}

func (f *fixture) nodeImage(t *testing.T, name string) (*v1alpha1.NodeImage, bool) {
	t.Helper()
	ni, err := f.Inplace.AppsV1alpha1().NodeImages().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return ni, true
}

func node(name string, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

func job(name string, uid string) *v1alpha1.ImagePullJob {
	return &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid)}}
}

func owner(name, uid string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ImagePullJob",
		Namespace: "ns", Name: name, UID: types.UID(uid)}
}

func TestNodeGetsNodeImageWhenReady(t *testing.T) {
	f := newFixture(t, []*corev1.Node{node("node-a", false)})
	f.sync(t, "node-a")
	if _, ok := f.nodeImage(t, "node-a"); ok {
		t.Fatal("NodeImage created for a node that is not Ready")
	}

	ready := node("node-a", true)
	if err := f.nodes.Update(ready); err != nil {
		t.Fatal(err)
	}
	f.sync(t, "node-a")
	ni, ok := f.nodeImage(t, "node-a")
	if !ok {
		t.Fatal("no NodeImage for a Ready node")
	}
	if ni.Labels["zone"] != "a" {
		t.Errorf("NodeImage labels = %v, want the node's", ni.Labels)
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonCreated) {
		t.Errorf("events = %q, want %s", ev, ReasonCreated)
	}

	// Node labels follow.
	relabelled := node("node-a", true)
	relabelled.Labels["zone"] = "b"
	if err := f.nodes.Update(relabelled); err != nil {
		t.Fatal(err)
	}
	f.sync(t, "node-a")
	if ni, _ := f.nodeImage(t, "node-a"); ni.Labels["zone"] != "b" {
		t.Errorf("NodeImage labels = %v after the node's changed", ni.Labels)
	}
}

func TestDeletedNodeLosesNodeImage(t *testing.T) {
	f := newFixture(t, nil,
		&v1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "ni-1"}},
		&v1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "fake", UID: "ni-2", Labels: map[string]string{FakeLabel: "true"}}})
	f.sync(t, "gone")
	f.sync(t, "fake")
	if _, ok := f.nodeImage(t, "gone"); ok {
		t.Error("NodeImage of a deleted node kept")
	}
	if _, ok := f.nodeImage(t, "fake"); !ok {
		t.Error("fake NodeImage deleted")
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonDeleted) {
		t.Errorf("events = %q, want %s", ev, ReasonDeleted)
	}
}

func TestGCDropsTagsOfDeletedJobsAndPastTTL(t *testing.T) {
	finished := metav1.NewTime(testNow.Add(-30 * time.Second))
	ni := &v1alpha1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "ni-1", Labels: map[string]string{"zone": "a"}},
		Spec: v1alpha1.NodeImageSpec{Images: map[string]v1alpha1.ImageSpec{
			"nginx": {Tags: []v1alpha1.ImageTagSpec{
				{Tag: "1.0", Version: 1, OwnerReferences: []corev1.ObjectReference{owner("old", "gone-uid")}},
				{Tag: "2.0", Version: 1, OwnerReferences: []corev1.ObjectReference{owner("live", "live-uid")},
					PullPolicy: &v1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](60)}},
			}},
		}},
		Status: v1alpha1.NodeImageStatus{ImageStatuses: map[string]v1alpha1.ImageStatus{
			"nginx": {Tags: []v1alpha1.ImageTagStatus{
				{Tag: "2.0", Version: 1, Phase: v1alpha1.ImagePhaseSucceeded, CompletionTime: &finished},
			}},
		}},
	}
	f := newFixture(t, []*corev1.Node{node("node-a", true)}, ni, job("live", "live-uid"))

	requeue := f.sync(t, "node-a")
	got, _ := f.nodeImage(t, "node-a")
	tags := got.Spec.Images["nginx"].Tags
	if len(tags) != 1 || tags[0].Tag != "2.0" {
		t.Fatalf("tags = %+v, want only 2.0 (1.0's job is gone)", tags)
	}
	if requeue != 30*time.Second {
		t.Errorf("requeue = %v, want 30s (the TTL left of 2.0)", requeue)
	}
	if ev := f.Events(); !strings.Contains(ev, "Normal "+ReasonCollected) {
		t.Errorf("events = %q, want %s", ev, ReasonCollected)
	}

	f.Clock.Step(30 * time.Second)
	if requeue := f.sync(t, "node-a"); requeue != 0 {
		t.Errorf("requeue = %v with no tag left", requeue)
	}
	if got, _ := f.nodeImage(t, "node-a"); len(got.Spec.Images) != 0 {
		t.Errorf("images = %+v, want none after 2.0's TTL", got.Spec.Images)
	}
}
