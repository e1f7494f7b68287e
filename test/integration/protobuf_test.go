package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apiserver"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// protobufMagic opens every Kubernetes protobuf body (k8s.io/apimachinery's protobuf serializer).
var protobufMagic = []byte{'k', '8', 's', 0}

// TestProtobufOnTheWire checks that every kind is served as protobuf when a client asks for it
// first (what kube-controller-manager's namespace and garbage collectors do): the object and the
// list come back as protobuf, not JSON, and decode to exactly what the JSON answer holds. A
// server that offered protobuf without being able to encode a kind would answer 406 here, and
// namespaces holding that kind would never finish deleting.
func TestProtobufOnTheWire(t *testing.T) {
	s, ctx := parallelServer(t)
	apps := s.ProtobufClient.AppsV1alpha1()
	if _, err := apps.CloneSets("default").Create(ctx, newCloneSet("web"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CloneSet over protobuf: %v", err)
	}
	if _, err := apps.SidecarSets().Create(ctx, newSidecarSet("agent"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SidecarSet over protobuf: %v", err)
	}
	if _, err := apps.ContainerRecreateRequests("default").Create(ctx, newCRR("restart"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ContainerRecreateRequest over protobuf: %v", err)
	}

	const prefix = "/apis/apps.kruise.io/v1alpha1/"
	for _, c := range []struct {
		path string
		obj  func() runtime.Object
	}{
		{prefix + "namespaces/default/clonesets/web", func() runtime.Object { return &appsv1alpha1.CloneSet{} }},
		{prefix + "namespaces/default/clonesets", func() runtime.Object { return &appsv1alpha1.CloneSetList{} }},
		{prefix + "clonesets", func() runtime.Object { return &appsv1alpha1.CloneSetList{} }},
		{prefix + "sidecarsets/agent", func() runtime.Object { return &appsv1alpha1.SidecarSet{} }},
		{prefix + "sidecarsets", func() runtime.Object { return &appsv1alpha1.SidecarSetList{} }},
		{prefix + "namespaces/default/containerrecreaterequests/restart", func() runtime.Object {
			return &appsv1alpha1.ContainerRecreateRequest{}
		}},
		{prefix + "namespaces/default/containerrecreaterequests", func() runtime.Object {
			return &appsv1alpha1.ContainerRecreateRequestList{}
		}},
		{prefix + "namespaces/default/clonesets/web/scale", nil},
	} {
		expectProtobufMatchesJSON(t, s, c.path, c.obj)
	}

	// kubectl asks for a Table, which is JSON only; protobuf first must not break it.
	code, contentType, _ := httpGetAccept(t, s, prefix+"namespaces/default/clonesets",
		runtime.ContentTypeProtobuf+";as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	if code != http.StatusOK || contentType == "" {
		t.Errorf("GET clonesets as a Table with protobuf first: %d %q, want 200", code, contentType)
	}

	// The inject subresource takes and returns a core Pod, in protobuf too.
	injectAgent(t, ctx, apps, " over protobuf")
}

// TestProtobufAndKubectl checks that what a protobuf client wrote is what kubectl (JSON) reads,
// field for field, and the other way round.
func TestProtobufAndKubectl(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	k := newKubectl(t, kubectlBinary(t), s)
	ctx := testContext(t)
	written, err := s.ProtobufClient.AppsV1alpha1().CloneSets("default").Create(ctx, newCloneSet("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create over protobuf: %v", err)
	}
	var read appsv1alpha1.CloneSet
	// At v1alpha1, named: unversioned, kubectl reads the group's preferred version, v1beta1.
	if err := json.Unmarshal([]byte(k.mustRun("get", "clonesets.v1alpha1.apps.kruise.io", "web", "-o", "json")), &read); err != nil {
		t.Fatalf("decoding kubectl's output: %v", err)
	}
	if !equality.Semantic.DeepEqual(read.Spec, written.Spec) || read.UID != written.UID || read.ResourceVersion != written.ResourceVersion {
		t.Errorf("kubectl reads %+v\nthe protobuf client wrote %+v", read, written)
	}

	k.mustRun("scale", "clonesets.apps.kruise.io", "web", "--replicas=5")
	got, err := s.ProtobufClient.AppsV1alpha1().CloneSets("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get over protobuf: %v", err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 {
		t.Errorf("after kubectl scale --replicas=5 the protobuf client reads replicas %v", got.Spec.Replicas)
	}
}

// expectProtobufMatchesJSON GETs path asking for protobuf first, which it must get, and, when obj
// makes the object read there, expects the same object as the JSON answer.
func expectProtobufMatchesJSON(t *testing.T, s *framework.Server, path string, obj func() runtime.Object) {
	t.Helper()
	code, contentType, body := httpGetAccept(t, s, path, runtime.ContentTypeProtobuf+", application/json")
	if code != http.StatusOK || contentType != runtime.ContentTypeProtobuf || !bytes.HasPrefix(body, protobufMagic) {
		t.Errorf("GET %s asking for protobuf first: %d %q, body starting %q; want 200 and a protobuf body",
			path, code, contentType, body[:min(len(body), 16)])
		return
	}
	if obj == nil {
		return
	}
	fromProtobuf, fromJSON := obj(), obj()
	if _, _, err := apiserver.Codecs.UniversalDeserializer().Decode(body, nil, fromProtobuf); err != nil {
		t.Errorf("decoding the protobuf answer of %s: %v", path, err)
		return
	}
	code, _, jsonBody := httpGetAccept(t, s, path, "application/json")
	if code != http.StatusOK {
		t.Fatalf("GET %s as JSON: %d %s", path, code, jsonBody)
	}
	if err := json.Unmarshal(jsonBody, fromJSON); err != nil {
		t.Fatalf("decoding the JSON answer of %s: %v", path, err)
	}
	// The JSON answer carries apiVersion and kind; the protobuf one carries them in its envelope.
	fromJSON.GetObjectKind().SetGroupVersionKind(fromProtobuf.GetObjectKind().GroupVersionKind())
	if !equality.Semantic.DeepEqual(fromProtobuf, fromJSON) {
		t.Errorf("GET %s: the protobuf and JSON answers differ:\nprotobuf %+v\njson     %+v", path, fromProtobuf, fromJSON)
	}
}
