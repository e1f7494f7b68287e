package integration

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// object is what the generated types of the three stored kinds have in common.
type object interface {
	metav1.Object
	runtime.Object
	comparable
}

// typedClient is the part of a generated typed client the CRUD test uses; the clients of the
// three kinds all satisfy it with their own object and list types.
type typedClient[T object, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// kindCase describes one kind to the CRUD test.
type kindCase[T object, L any] struct {
	client typedClient[T, L]
	// newObj returns a valid object named name.
	newObj func(name string) T
	// items returns the items of a list.
	items func(L) []T
	// changeSpec makes a change of the spec the server accepts on update.
	changeSpec func(T)
	// changeSpecOther makes another (accepted) spec change, for the write through /status.
	changeSpecOther func(T)
	// setStatus sets a status distinguishable from the empty one; variant tells two apart.
	setStatus func(obj T, variant int32)
	spec      func(T) any
	status    func(T) any
}

func TestCRUDCloneSet(t *testing.T) {
	t.Parallel()
	forEachEncoding(t, func(t *testing.T, s *framework.Server, client clientset.Interface) {
		testCRUD(t, s, kindCase[*appsv1alpha1.CloneSet, *appsv1alpha1.CloneSetList]{
			client: client.AppsV1alpha1().CloneSets("default"),
			newObj: newCloneSet,
			items:  func(l *appsv1alpha1.CloneSetList) []*appsv1alpha1.CloneSet { return ptrs(l.Items) },
			changeSpec: func(c *appsv1alpha1.CloneSet) {
				c.Spec.Template.Spec.Containers[0].Image = "inplace.local/app:v2"
			},
			changeSpecOther: func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](7) },
			setStatus: func(c *appsv1alpha1.CloneSet, v int32) {
				c.Status = appsv1alpha1.CloneSetStatus{ObservedGeneration: int64(v), Replicas: v, ReadyReplicas: v,
					UpdateRevision: "rev-" + string(rune('a'+v)), LabelSelector: "app=x"}
			},
			spec:   func(c *appsv1alpha1.CloneSet) any { return c.Spec },
			status: func(c *appsv1alpha1.CloneSet) any { return c.Status },
		})
	})
}

func TestCRUDSidecarSet(t *testing.T) {
	t.Parallel()
	forEachEncoding(t, func(t *testing.T, s *framework.Server, client clientset.Interface) {
		testCRUD(t, s, kindCase[*appsv1alpha1.SidecarSet, *appsv1alpha1.SidecarSetList]{
			client: client.AppsV1alpha1().SidecarSets(),
			newObj: newSidecarSet,
			items:  func(l *appsv1alpha1.SidecarSetList) []*appsv1alpha1.SidecarSet { return ptrs(l.Items) },
			changeSpec: func(s *appsv1alpha1.SidecarSet) {
				s.Spec.Containers[0].Image = "inplace.local/app:v2"
			},
			changeSpecOther: func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "kube-system" },
			setStatus: func(s *appsv1alpha1.SidecarSet, v int32) {
				s.Status = appsv1alpha1.SidecarSetStatus{ObservedGeneration: int64(v), MatchedPods: v, UpdatedPods: v,
					LatestRevision: "rev-" + string(rune('a'+v))}
			},
			spec:   func(s *appsv1alpha1.SidecarSet) any { return s.Spec },
			status: func(s *appsv1alpha1.SidecarSet) any { return s.Status },
		})
	})
}

func TestCRUDContainerRecreateRequest(t *testing.T) {
	t.Parallel()
	forEachEncoding(t, func(t *testing.T, s *framework.Server, client clientset.Interface) {
		testCRUD(t, s, kindCase[*appsv1alpha1.ContainerRecreateRequest, *appsv1alpha1.ContainerRecreateRequestList]{
			client: client.AppsV1alpha1().ContainerRecreateRequests("default"),
			newObj: newCRR,
			items: func(l *appsv1alpha1.ContainerRecreateRequestList) []*appsv1alpha1.ContainerRecreateRequest {
				return ptrs(l.Items)
			},
			// The spec of a CRR is immutable but for recording the container's statusContext where it
			// had none (what admission fills in from the Pod): that is the one accepted spec change.
			changeSpec: func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{
					ContainerID: "containerd://0123456789abcdef", RestartCount: 2}
			},
			changeSpecOther: func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.PodName = "another-pod" },
			setStatus: func(c *appsv1alpha1.ContainerRecreateRequest, v int32) {
				phase := appsv1alpha1.ContainerRecreateRequestRecreating
				if v%2 == 0 {
					phase = appsv1alpha1.ContainerRecreateRequestPending
				}
				c.Status = appsv1alpha1.ContainerRecreateRequestStatus{Phase: phase, Message: "variant " + string(rune('a'+v)),
					ContainerRecreateStates: []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{{Name: "main", Phase: phase}}}
			},
			spec:   func(c *appsv1alpha1.ContainerRecreateRequest) any { return c.Spec },
			status: func(c *appsv1alpha1.ContainerRecreateRequest) any { return c.Status },
		})
	})
}

// forEachEncoding runs test against a server of its own twice: with the JSON clientset, and with
// the protobuf-only one (every request and answer in protobuf, or the test fails).
func forEachEncoding(t *testing.T, test func(t *testing.T, s *framework.Server, client clientset.Interface)) {
	for _, encoding := range []string{"json", "protobuf"} {
		t.Run(encoding, func(t *testing.T) {
			t.Parallel()
			s := framework.StartServer(t)
			client := s.Client
			if encoding == "protobuf" {
				client = s.ProtobufClient
			}
			test(t, s, client)
		})
	}
}

func ptrs[E any](items []E) []*E {
	out := make([]*E, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func names[T object](items []T) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.GetName())
	}
	slices.Sort(out)
	return out
}

func testCRUD[T object, L any](t *testing.T, s *framework.Server, k kindCase[T, L]) {
	ctx := testContext(t)
	c := k.client

	w, err := c.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	// Create: the status sent is dropped, the generation starts at 1.
	obj := k.newObj("one")
	obj.SetLabels(map[string]string{"tier": "front", "app": "one"})
	k.setStatus(obj, 3)
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if g := created.GetGeneration(); g != 1 {
		t.Errorf("create: want metadata.generation 1, got %d", g)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
		t.Errorf("create: uid, resourceVersion or creationTimestamp missing: %+v", created)
	}
	if st := k.status(created); !reflect.ValueOf(st).IsZero() {
		t.Errorf("create: the status sent through the main resource was stored: %+v", st)
	}
	expectEvent(t, w, watch.Added, "one", created.GetResourceVersion())

	other := k.newObj("two")
	other.SetLabels(map[string]string{"tier": "back"})
	if _, err := c.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create two: %v", err)
	}
	expectEvent(t, w, watch.Added, "two", "")

	// Get returns what create returned.
	got, err := c.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.GetUID() != created.GetUID() || !equality.Semantic.DeepEqual(k.spec(got), k.spec(created)) {
		t.Fatalf("get: differs from the created object:\n got %+v\nwant %+v", k.spec(got), k.spec(created))
	}
	if _, err := c.Get(ctx, "missing", metav1.GetOptions{}); err != nil {
		expectNotFound(t, err, "get missing")
	} else {
		t.Fatal("get of a missing object succeeded")
	}

	// List: all, then by label selector.
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if n := names(k.items(list)); !slices.Equal(n, []string{"one", "two"}) {
		t.Fatalf("list: want [one two], got %v", n)
	}
	for selector, want := range map[string][]string{
		"tier=front":           {"one"},
		"tier=back":            {"two"},
		"tier in (front,back)": {"one", "two"},
		"tier!=front":          {"two"},
		"tier=none":            nil,
	} {
		list, err := c.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatalf("list %q: %v", selector, err)
		}
		if n := names(k.items(list)); !slices.Equal(n, want) {
			t.Errorf("list with selector %q: want %v, got %v", selector, want, n)
		}
	}

	// Metadata-only update: generation stays at 1.
	got.SetAnnotations(map[string]string{"note": "metadata only"})
	metaOnly, err := c.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("metadata update: %v", err)
	}
	if g := metaOnly.GetGeneration(); g != 1 {
		t.Errorf("metadata-only update: want metadata.generation 1, got %d", g)
	}
	if metaOnly.GetAnnotations()["note"] != "metadata only" {
		t.Errorf("metadata update: annotation not stored: %v", metaOnly.GetAnnotations())
	}
	expectEvent(t, w, watch.Modified, "one", metaOnly.GetResourceVersion())

	// Status write through /status: stored; a spec change in the same write is ignored.
	toStatus := deepCopy(metaOnly)
	k.setStatus(toStatus, 1)
	wantStatus := k.status(toStatus)
	k.changeSpecOther(toStatus)
	statusWritten, err := c.UpdateStatus(ctx, toStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if !equality.Semantic.DeepEqual(k.status(statusWritten), wantStatus) {
		t.Errorf("update status: status not stored:\n got %+v\nwant %+v", k.status(statusWritten), wantStatus)
	}
	if !equality.Semantic.DeepEqual(k.spec(statusWritten), k.spec(metaOnly)) {
		t.Errorf("update status: the spec changed through /status:\n got %+v\nwant %+v", k.spec(statusWritten), k.spec(metaOnly))
	}
	if g := statusWritten.GetGeneration(); g != 1 {
		t.Errorf("update status: want metadata.generation 1, got %d", g)
	}
	expectEvent(t, w, watch.Modified, "one", statusWritten.GetResourceVersion())

	// Spec update through the main resource: generation bumps; the status sent is ignored and the
	// stored one kept.
	toSpec := deepCopy(statusWritten)
	k.changeSpec(toSpec)
	wantSpec := k.spec(toSpec)
	k.setStatus(toSpec, 2)
	specWritten, err := c.Update(ctx, toSpec, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("spec update: %v", err)
	}
	if g := specWritten.GetGeneration(); g != 2 {
		t.Errorf("spec update: want metadata.generation 2, got %d", g)
	}
	if !equality.Semantic.DeepEqual(k.spec(specWritten), wantSpec) {
		t.Errorf("spec update: spec not stored:\n got %+v\nwant %+v", k.spec(specWritten), wantSpec)
	}
	if !equality.Semantic.DeepEqual(k.status(specWritten), wantStatus) {
		t.Errorf("spec update: the status changed through the main resource:\n got %+v\nwant %+v", k.status(specWritten), wantStatus)
	}
	expectEvent(t, w, watch.Modified, "one", specWritten.GetResourceVersion())

	// A second metadata-only update after the spec change leaves the generation at 2.
	specWritten.SetLabels(map[string]string{"tier": "front", "app": "one", "extra": "yes"})
	relabelled, err := c.Update(ctx, specWritten, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("label update: %v", err)
	}
	if g := relabelled.GetGeneration(); g != 2 {
		t.Errorf("label update: want metadata.generation 2, got %d", g)
	}
	expectEvent(t, w, watch.Modified, "one", relabelled.GetResourceVersion())

	// Re-read: everything above is what is stored.
	final, err := c.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after updates: %v", err)
	}
	if final.GetResourceVersion() != relabelled.GetResourceVersion() || final.GetGeneration() != 2 ||
		!equality.Semantic.DeepEqual(k.spec(final), wantSpec) || !equality.Semantic.DeepEqual(k.status(final), wantStatus) ||
		final.GetLabels()["extra"] != "yes" {
		t.Errorf("get after updates: not what was written: %+v", final)
	}

	// An update with a stale resourceVersion is a conflict.
	stale := deepCopy(statusWritten)
	stale.SetAnnotations(map[string]string{"note": "stale"})
	if _, err := c.Update(ctx, stale, metav1.UpdateOptions{}); err == nil || statusCode(err) != 409 {
		t.Errorf("update with a stale resourceVersion: want 409 Conflict, got %v", err)
	}

	// Delete: gone, and a DELETED event.
	if err := c.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	expectEvent(t, w, watch.Deleted, "one", "")
	_, err = c.Get(ctx, "one", metav1.GetOptions{})
	expectNotFound(t, err, "get after delete")
	if err := c.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		expectNotFound(t, err, "delete twice")
	} else {
		t.Error("deleting a deleted object succeeded")
	}
	list, err = c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list after delete: %v", err)
	}
	if n := names(k.items(list)); !slices.Equal(n, []string{"two"}) {
		t.Errorf("list after delete: want [two], got %v", n)
	}
}

// deepCopy copies any of the generated kinds.
func deepCopy[T object](obj T) T {
	return obj.DeepCopyObject().(T)
}

func TestCloneSetScale(t *testing.T) {
	t.Parallel()
	forEachEncoding(t, func(t *testing.T, s *framework.Server, client clientset.Interface) {
		ctx := testContext(t)
		cs := client.AppsV1alpha1().CloneSets("default")
		created, err := cs.Create(ctx, newCloneSet("web"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}

		scale, err := cs.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get scale: %v", err)
		}
		if scale.Spec.Replicas != 2 || scale.Name != "web" || scale.Namespace != "default" || scale.UID != created.UID {
			t.Fatalf("get scale: want 2 replicas of default/web (uid %s), got %+v", created.UID, scale)
		}
		if scale.ResourceVersion != created.ResourceVersion {
			t.Errorf("get scale: resourceVersion %s, want the CloneSet's %s", scale.ResourceVersion, created.ResourceVersion)
		}

		scale.Spec.Replicas = 5
		updated, err := cs.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update scale: %v", err)
		}
		if updated.Spec.Replicas != 5 {
			t.Errorf("update scale: answered %d replicas, want 5", updated.Spec.Replicas)
		}
		got, err := cs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 5 {
			t.Fatalf("after scale: want spec.replicas 5, got %v", got.Spec.Replicas)
		}
		if got.Generation != 2 {
			t.Errorf("after scale: want metadata.generation 2 (replicas is spec), got %d", got.Generation)
		}
		if !equality.Semantic.DeepEqual(got.Spec.Template, created.Spec.Template) {
			t.Errorf("after scale: the template changed")
		}

		// A Scale read before the update is stale now.
		scale.Spec.Replicas = 6
		if _, err := cs.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); statusCode(err) != 409 {
			t.Errorf("update scale with a stale resourceVersion: want 409 Conflict, got %v", err)
		}

		// Negative replicas are refused, and nothing changes.
		fresh, err := cs.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get scale: %v", err)
		}
		fresh.Spec.Replicas = -1
		_, err = cs.UpdateScale(ctx, "web", fresh, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.replicas")
		if statusCode(err) != 422 {
			t.Errorf("negative replicas: want HTTP 422, got %d", statusCode(err))
		}
		got, err = cs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if *got.Spec.Replicas != 5 {
			t.Errorf("after the refused scale: want spec.replicas 5, got %d", *got.Spec.Replicas)
		}

		// Scale of a missing CloneSet is a 404.
		_, err = cs.GetScale(ctx, "missing", metav1.GetOptions{})
		expectNotFound(t, err, "get scale of a missing CloneSet")
		_, err = cs.UpdateScale(ctx, "missing", &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: "default"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: 1}}, metav1.UpdateOptions{})
		expectNotFound(t, err, "update scale of a missing CloneSet")
	})
}

// TestPatch checks the patch types on the main resource and on /status: JSON merge, JSON patch
// and strategic merge (whose list merge keys come from the Go types), with the same rules as
// update — status is not writable through the main resource, spec not through /status.
func TestPatch(t *testing.T) {
	s, ctx := parallelServer(t)
	c := s.Client.AppsV1alpha1().CloneSets("default")
	cs := newCloneSet("web")
	cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers,
		corev1.Container{Name: "side", Image: "inplace.local/app:v1"})
	if _, err := c.Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A merge patch of replicas and of status: replicas changes, status does not.
	got, err := c.Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":4},"status":{"replicas":9}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	if *got.Spec.Replicas != 4 || got.Status.Replicas != 0 || got.Generation != 2 {
		t.Errorf("merge patch: replicas %d, status.replicas %d, generation %d; want 4, 0, 2",
			*got.Spec.Replicas, got.Status.Replicas, got.Generation)
	}

	// A strategic merge patch of one container, by name: the other container is kept.
	got, err = c.Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"inplace.local/app:v2"}]}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("strategic merge patch: %v", err)
	}
	containers := got.Spec.Template.Spec.Containers
	if len(containers) != 2 || containers[0].Image != "inplace.local/app:v1" || containers[1].Image != "inplace.local/app:v2" {
		t.Errorf("strategic merge patch of container side: got %+v", containers)
	}
	if got.Generation != 3 {
		t.Errorf("strategic merge patch: generation %d, want 3", got.Generation)
	}

	// The same for a SidecarSet's containers (merge key name, from the SidecarSet's own type).
	ss := newSidecarSet("agent")
	ss.Spec.Containers = append(ss.Spec.Containers, appsv1alpha1.SidecarContainer{
		Container: corev1.Container{Name: "second", Image: "inplace.local/app:v1"}})
	if _, err := s.Client.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gotSS, err := s.Client.AppsV1alpha1().SidecarSets().Patch(ctx, "agent", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"second","image":"inplace.local/app:v3"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("strategic merge patch of a SidecarSet: %v", err)
	}
	if sc := gotSS.Spec.Containers; len(sc) != 2 || sc[0].Image != "inplace.local/app:v1" || sc[1].Image != "inplace.local/app:v3" {
		t.Errorf("strategic merge patch of sidecar second: got %+v", sc)
	}

	// A JSON patch with a failed test operation changes nothing.
	_, err = c.Patch(ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":8}]`), metav1.PatchOptions{})
	if err == nil {
		t.Error("a JSON patch whose test fails was applied")
	}
	got, err = c.Patch(ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"test","path":"/spec/replicas","value":4},{"op":"replace","path":"/spec/replicas","value":8}]`), metav1.PatchOptions{})
	if err != nil || *got.Spec.Replicas != 8 {
		t.Fatalf("JSON patch: %v", err)
	}

	// A patch that makes the object invalid is refused with the field.
	_, err = c.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"partition":"101%"}}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "spec.updateStrategy.partition")

	// A patch of /status: status changes, spec and generation do not.
	got, err = c.Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":1},"status":{"replicas":8,"readyReplicas":5,"observedGeneration":4}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("status patch: %v", err)
	}
	if got.Status.Replicas != 8 || got.Status.ReadyReplicas != 5 || *got.Spec.Replicas != 8 || got.Generation != 4 {
		t.Errorf("status patch: status %+v, replicas %d, generation %d", got.Status, *got.Spec.Replicas, got.Generation)
	}

	// A scale patch (as kubectl scale does): spec.replicas only. The answer is an autoscaling/v1
	// Scale, which the typed client of CloneSets cannot decode: read it raw.
	raw, err := s.Client.AppsV1alpha1().RESTClient().Patch(types.MergePatchType).Namespace("default").
		Resource("clonesets").Name("web").SubResource("scale").Body([]byte(`{"spec":{"replicas":2}}`)).Do(ctx).Raw()
	if err != nil {
		t.Fatalf("scale patch: %v", err)
	}
	if !strings.Contains(string(raw), `"kind":"Scale"`) || !strings.Contains(string(raw), `"apiVersion":"autoscaling/v1"`) {
		t.Errorf("scale patch: want an autoscaling/v1 Scale, got %s", raw)
	}
	if final, err := c.Get(ctx, "web", metav1.GetOptions{}); err != nil || *final.Spec.Replicas != 2 || final.Status.Replicas != 8 {
		t.Errorf("after the scale patch: %v %v", final, err)
	}
}

// TestCreateOptions checks generateName, dry run and delete preconditions and collections.
func TestCreateOptions(t *testing.T) {
	s, ctx := parallelServer(t)
	c := s.Client.AppsV1alpha1().ContainerRecreateRequests("default")

	generated := newCRR("")
	generated.GenerateName = "restart-"
	generated.Spec.PodName = "some-pod"
	got, err := c.Create(ctx, generated, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with generateName: %v", err)
	}
	if !strings.HasPrefix(got.Name, "restart-") || len(got.Name) <= len("restart-") {
		t.Errorf("generateName: got name %q", got.Name)
	}

	dry, err := c.Create(ctx, newCRR("dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if dry.Spec.Strategy == nil || dry.Spec.Strategy.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyFail {
		t.Errorf("dry-run create: not defaulted: %+v", dry.Spec)
	}
	_, err = c.Get(ctx, "dry", metav1.GetOptions{})
	expectNotFound(t, err, "get after a dry-run create")
	_, err = c.Create(ctx, &appsv1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "dry-invalid"}},
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	expectInvalid(t, err, "spec.podName", "spec.containers")

	// Creating an existing name is a 409 AlreadyExists.
	if _, err := c.Create(ctx, newCRR("one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, newCRR("one"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create of one: want 409 AlreadyExists, got %v", err)
	}

	// Delete with a wrong UID precondition is a conflict and deletes nothing.
	err = c.Delete(ctx, "one", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("wrong"))}})
	if !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong uid: want 409 Conflict, got %v", err)
	}
	if _, err := c.Get(ctx, "one", metav1.GetOptions{}); err != nil {
		t.Errorf("the object is gone after a refused delete: %v", err)
	}

	// DeleteCollection by label removes exactly the matching objects.
	for _, n := range []string{"a", "b", "c"} {
		crr := newCRR("batch-" + n)
		crr.Labels = map[string]string{"batch": "yes"}
		if n == "c" {
			crr.Labels["batch"] = "no"
		}
		if _, err := c.Create(ctx, crr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=yes"}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := names(ptrs(list.Items)); !slices.Equal(n, sortedCopy([]string{"batch-c", got.Name, "one"})) {
		t.Errorf("after delete collection batch=yes: %v", n)
	}

	// Field selectors on metadata.name and metadata.namespace work for list.
	list, err = c.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=one"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "one" {
		t.Errorf("list with field selector metadata.name=one: %v %v", list, err)
	}
	all, err := s.Client.AppsV1alpha1().ContainerRecreateRequests("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=default"})
	if err != nil || len(all.Items) != 3 {
		t.Errorf("list in all namespaces with field selector metadata.namespace=default: %v %v", all, err)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestStandaloneCRRUnchecked: standalone mode has no cluster and no admission chain, so a
// ContainerRecreateRequest is stored after field validation alone: its Pod is not looked up
// (none exists) and nothing is filled in from it. Nothing acts on it either (documented).
func TestStandaloneCRRUnchecked(t *testing.T) {
	s, ctx := parallelServer(t)
	crrs := s.Client.AppsV1alpha1().ContainerRecreateRequests("default")
	created, err := crrs.Create(ctx, newCRR("no-such-pod"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("standalone create of a request for a Pod that does not exist: %v", err)
	}
	if len(created.Labels) != 0 || created.Spec.Containers[0].StatusContext != nil {
		t.Errorf("labels %v statusContext %+v: standalone mode has no Pod to fill them from", created.Labels, created.Spec.Containers[0].StatusContext)
	}
	// Field validation still runs.
	bad := newCRR("bad")
	bad.Spec.Containers = nil
	if _, err := crrs.Create(ctx, bad, metav1.CreateOptions{}); statusCode(err) != 422 {
		t.Errorf("a request without containers: %v, want 422", err)
	}
}
