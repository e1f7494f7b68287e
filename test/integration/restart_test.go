package integration

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apiserver/options"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestPersistenceAcrossRestart stores objects of every kind, stops the server and its etcd, starts
// a new server on the same data directory and reads them back unchanged.
func TestPersistenceAcrossRestart(t *testing.T) {
	s, ctx := parallelServer(t)
	apps := s.Client.AppsV1alpha1()

	cs := newCloneSet("kept")
	cs.Labels = map[string]string{"keep": "yes"}
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cloneSet, err := apps.CloneSets("default").Create(ctx, cs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A status and a second generation survive too.
	cloneSet.Status = appsv1alpha1.CloneSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 1, UpdateRevision: "kept-abc"}
	if cloneSet, err = apps.CloneSets("default").UpdateStatus(ctx, cloneSet, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cloneSet.Spec.Template.Spec.Containers[0].Image = "inplace.local/app:v2"
	if cloneSet, err = apps.CloneSets("default").Update(ctx, cloneSet, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sidecarSet, err := apps.SidecarSets().Create(ctx, newSidecarSet("kept"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crr, err := apps.ContainerRecreateRequests("default").Create(ctx, newCRR("kept"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := apps.CloneSets("default").Create(ctx, newCloneSet("deleted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apps.CloneSets("default").Delete(ctx, deleted.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	restarted := framework.StartServerOn(t, s.DataDir)
	apps = restarted.Client.AppsV1alpha1()

	gotCS, err := apps.CloneSets("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cloneset after restart: %v", err)
	}
	expectSameObject(t, "cloneset", cloneSet, gotCS, cloneSet.Spec, gotCS.Spec, cloneSet.Status, gotCS.Status)
	if gotCS.Generation != 2 {
		t.Errorf("cloneset after restart: want generation 2, got %d", gotCS.Generation)
	}

	gotSS, err := apps.SidecarSets().Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("sidecarset after restart: %v", err)
	}
	expectSameObject(t, "sidecarset", sidecarSet, gotSS, sidecarSet.Spec, gotSS.Spec, sidecarSet.Status, gotSS.Status)

	gotCRR, err := apps.ContainerRecreateRequests("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("crr after restart: %v", err)
	}
	expectSameObject(t, "crr", crr, gotCRR, crr.Spec, gotCRR.Spec, crr.Status, gotCRR.Status)

	_, err = apps.CloneSets("default").Get(ctx, "deleted", metav1.GetOptions{})
	expectNotFound(t, err, "deleted cloneset after restart")

	list, err := apps.CloneSets("").List(ctx, metav1.ListOptions{LabelSelector: "keep=yes"})
	if err != nil || len(list.Items) != 1 || list.Items[0].UID != cloneSet.UID {
		t.Errorf("list after restart: want the one kept cloneset, got %v (%v)", list, err)
	}

	// The restarted server keeps counting: a write gets a newer resourceVersion and the
	// generation moves on from 2.
	gotCS.Spec.Replicas = ptr.To[int32](4)
	updated, err := apps.CloneSets("default").Update(ctx, gotCS, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update after restart: %v", err)
	}
	if updated.Generation != 3 || updated.ResourceVersion == gotCS.ResourceVersion {
		t.Errorf("update after restart: generation %d, resourceVersion %s (was %s)", updated.Generation, updated.ResourceVersion, gotCS.ResourceVersion)
	}
}

func expectSameObject(t *testing.T, what string, want, got metav1.Object, wantSpec, gotSpec, wantStatus, gotStatus any) {
	t.Helper()
	if got.GetUID() != want.GetUID() {
		t.Errorf("%s: uid %s, want %s", what, got.GetUID(), want.GetUID())
	}
	if got.GetResourceVersion() != want.GetResourceVersion() {
		t.Errorf("%s: resourceVersion %s, want %s", what, got.GetResourceVersion(), want.GetResourceVersion())
	}
	if got.GetGeneration() != want.GetGeneration() {
		t.Errorf("%s: generation %d, want %d", what, got.GetGeneration(), want.GetGeneration())
	}
	if gotTS, wantTS := got.GetCreationTimestamp(), want.GetCreationTimestamp(); !gotTS.Equal(&wantTS) {
		t.Errorf("%s: creationTimestamp %v, want %v", what, got.GetCreationTimestamp(), want.GetCreationTimestamp())
	}
	if !reflect.DeepEqual(got.GetLabels(), want.GetLabels()) {
		t.Errorf("%s: labels %v, want %v", what, got.GetLabels(), want.GetLabels())
	}
	if !equality.Semantic.DeepEqual(gotSpec, wantSpec) {
		t.Errorf("%s: spec changed across the restart:\n got %+v\nwant %+v", what, gotSpec, wantSpec)
	}
	if !equality.Semantic.DeepEqual(gotStatus, wantStatus) {
		t.Errorf("%s: status changed across the restart:\n got %+v\nwant %+v", what, gotStatus, wantStatus)
	}
}

// etcdValue reads the raw value of key from the server's etcd.
func etcdValue(t *testing.T, s *framework.Server, key string) []byte {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: s.EtcdURLs, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connecting to etcd %v: %v", s.EtcdURLs, err)
	}
	defer func() { _ = client.Close() }()
	resp, err := client.Get(testContext(t), key)
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd holds %d values at %s, want 1", len(resp.Kvs), key)
	}
	return resp.Kvs[0].Value
}

// TestStorageMediaType: objects are stored in etcd as protobuf by default; what a server stored as
// JSON (--storage-media-type=application/json) is read back unchanged by a server storing
// protobuf, and rewritten as protobuf at its next update.
func TestStorageMediaType(t *testing.T) {
	t.Parallel()
	const key = "/registry/apps.kruise.io/clonesets/default/"
	dataDir := t.TempDir()
	asJSON := framework.StartServerWith(t, dataDir, func(o *options.Options) {
		o.Recommended.Etcd.DefaultStorageMediaType = runtime.ContentTypeJSON
	})
	ctx := testContext(t)
	old, err := asJSON.Client.AppsV1alpha1().CloneSets("default").Create(ctx, newCloneSet("old"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := etcdValue(t, asJSON, key+"old"); !bytes.HasPrefix(v, []byte("{")) {
		t.Errorf("--storage-media-type=application/json stored %q..., want JSON", v[:min(len(v), 16)])
	}
	asJSON.Stop()

	s := framework.StartServerOn(t, dataDir)
	cloneSets := s.Client.AppsV1alpha1().CloneSets("default")
	got, err := cloneSets.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading what was stored as JSON: %v", err)
	}
	if !equality.Semantic.DeepEqual(got, old) {
		t.Errorf("stored as JSON, read back after the switch to protobuf:\n%+v\nwant\n%+v", got, old)
	}
	if _, err := cloneSets.Create(ctx, newCloneSet("new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := etcdValue(t, s, key+"new"); !bytes.HasPrefix(v, protobufMagic) {
		t.Errorf("by default a CloneSet is stored as %q..., want protobuf", v[:min(len(v), 16)])
	}
	got.Spec.Replicas = ptr.To[int32](3)
	if _, err := cloneSets.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := etcdValue(t, s, key+"old"); !bytes.HasPrefix(v, protobufMagic) {
		t.Errorf("after an update the JSON-stored CloneSet is stored as %q..., want protobuf", v[:min(len(v), 16)])
	}
}
