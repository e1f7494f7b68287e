package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	appsclient "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned/typed/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

const (
	// testTimeout bounds every test's API calls; the server answers in milliseconds.
	testTimeout = 2 * time.Minute
	// eventTimeout is how long a test waits for one watch event.
	eventTimeout = 10 * time.Second
	// groupVersion is the served group version.
	groupVersion = "apps.kruise.io/v1alpha1"
)

var (
	cloneSetsGVR        = appsv1alpha1.SchemeGroupVersion.WithResource("clonesets")
	sidecarSetGVR       = appsv1alpha1.SchemeGroupVersion.WithResource("sidecarsets")
	crrGVR              = appsv1alpha1.SchemeGroupVersion.WithResource("containerrecreaterequests")
	imagePullJobGVR     = appsv1alpha1.SchemeGroupVersion.WithResource("imagepulljobs")
	imageListPullJobGVR = appsv1alpha1.SchemeGroupVersion.WithResource("imagelistpulljobs")
	nodeImageGVR        = appsv1alpha1.SchemeGroupVersion.WithResource("nodeimages")
)

// testContext returns a context that ends with the test or after testTimeout.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// parallelServer marks the test parallel and starts its own inplace-apiserver (and etcd); it
// returns the server and the test's context.
func parallelServer(t *testing.T) (*framework.Server, context.Context) {
	t.Helper()
	t.Parallel()
	return framework.StartServer(t), testContext(t)
}

// ---------------------------------------------------------------------------------------------
// Objects
// ---------------------------------------------------------------------------------------------

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "inplace.local/app:v1",
		}}},
	}
}

// newCloneSet is a valid CloneSet of 2 replicas whose selector is app=name.
func newCloneSet(name string) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
}

// newSurgingDaemonSet is a v1alpha1 Advanced DaemonSet with the deprecated rolling update type
// Surging (OpenKruise defaults it to Standard) and nothing else but what is required.
func newSurgingDaemonSet(name string) *appsv1alpha1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
			UpdateStrategy: appsv1alpha1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1alpha1.RollingUpdateDaemonSet{
				Type: appsv1alpha1.DeprecatedSurgingRollingUpdateType,
			}},
		},
	}
}

// newSidecarSet is a valid SidecarSet injecting one container into Pods labelled app=name.
func newSidecarSet(name string) *appsv1alpha1.SidecarSet {
	return &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Containers: []appsv1alpha1.SidecarContainer{{
				Container: corev1.Container{Name: "sidecar", Image: "inplace.local/app:v1"},
			}},
		},
	}
}

// newCRR is a valid ContainerRecreateRequest for container main of Pod name-pod.
func newCRR(name string) *appsv1alpha1.ContainerRecreateRequest {
	return &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.ContainerRecreateRequestSpec{
			PodName:    name + "-pod",
			Containers: []appsv1alpha1.ContainerRecreateRequestContainer{{Name: "main"}},
		},
	}
}

func newImagePullJob(name string) *appsv1alpha1.ImagePullJob {
	return &appsv1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.ImagePullJobSpec{
			Image: "inplace.local/app:v2",
			ImagePullJobTemplate: appsv1alpha1.ImagePullJobTemplate{
				Selector: &appsv1alpha1.ImagePullJobNodeSelector{Names: []string{"node-1", "node-2"}},
			},
		},
	}
}

func newImageListPullJob(name string) *appsv1alpha1.ImageListPullJob {
	return &appsv1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1alpha1.ImageListPullJobSpec{Images: []string{"inplace.local/app:v2", "inplace.local/app:v3"}},
	}
}

// newNodeImage returns a NodeImage of one image tag (OpenKruise requires each tag's
// ttlSecondsAfterFinished).
func newNodeImage(name string) *appsv1alpha1.NodeImage {
	return &appsv1alpha1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.NodeImageSpec{Images: map[string]appsv1alpha1.ImageSpec{
			"inplace.local/app": {Tags: []appsv1alpha1.ImageTagSpec{{Tag: "v2",
				PullPolicy: &appsv1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](300)}}}},
		}},
	}
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

// causeFields returns the field paths of the causes of an API error.
func causeFields(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

// expectInvalid fails unless err is a 422 Invalid whose causes name every one of fields.
func expectInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the request succeeded; want 422 Invalid on %v", fields)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid on %v, got %d %v: %v", fields, statusCode(err), apierrors.ReasonForError(err), err)
	}
	got := causeFields(err)
	for _, f := range fields {
		if !slices.Contains(got, f) {
			t.Fatalf("want a cause on field %q; the causes are on %q (%v)", f, got, err)
		}
	}
}

// updateClient is the part of a generated typed client the generic helpers use.
type updateClient[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// createAndRead creates obj and returns it as read back: what the server stored of it.
func createAndRead[T metav1.Object](t *testing.T, ctx context.Context, c updateClient[T], obj T) T {
	t.Helper()
	if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	return got
}

// invalidCase is a change that makes a valid object invalid, and the fields the server's 422
// must name.
type invalidCase[T any] struct {
	name   string
	mutate func(T)
	fields []string
}

// expectInvalidCreates creates, in a subtest KIND/NAME for each case, the valid object fresh()
// changed by the case, and expects the 422 to name the case's fields.
func expectInvalidCreates[T any](t *testing.T, ctx context.Context, kind string, fresh func() T,
	create func(context.Context, T, metav1.CreateOptions) (T, error), cases []invalidCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(kind+"/"+tc.name, func(t *testing.T) {
			obj := fresh()
			tc.mutate(obj)
			_, err := create(ctx, obj, metav1.CreateOptions{})
			expectInvalid(t, err, tc.fields...)
		})
	}
}

// injectAgent asks SidecarSet agent (newSidecarSet("agent"), created before) to inject a Pod it
// selects, expects the Pod back with the sidecar before main (BeforeAppContainer, the default),
// and returns the Pod it asked about and the answer; how says over what (" over protobuf").
func injectAgent(t *testing.T, ctx context.Context, apps appsclient.AppsV1alpha1Interface, how string) (pod, injected *corev1.Pod) {
	t.Helper()
	pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default", Labels: map[string]string{"app": "agent"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "inplace.local/app:v1"}}},
	}
	injected, err := apps.SidecarSets().Inject(ctx, "agent", pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("inject%s: %v", how, err)
	}
	var names []string
	for _, c := range injected.Spec.Containers {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"sidecar", "main"}) {
		t.Errorf("inject%s: containers %v, want the sidecar before main", how, names)
	}
	return pod, injected
}

// expectNotFound fails unless err is a 404 NotFound.
func expectNotFound(t *testing.T, err error, what string) {
	t.Helper()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("%s: want 404 NotFound, got %v", what, err)
	}
}

func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// ---------------------------------------------------------------------------------------------
// Watch
// ---------------------------------------------------------------------------------------------

// nextEvent returns the next event of w, failing the test after eventTimeout.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch closed before the expected event")
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
		}
		return ev
	case <-time.After(eventTimeout):
		t.Fatalf("no watch event within %s", eventTimeout)
	}
	return watch.Event{}
}

// expectEvent reads the next event and checks its type, name and resourceVersion (if rv is set).
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name, rv string) {
	t.Helper()
	ev := nextEvent(t, w)
	m, err := metaOf(ev.Object)
	if err != nil {
		t.Fatalf("%s event: %v", ev.Type, err)
	}
	if ev.Type != typ || m.GetName() != name {
		t.Fatalf("want %s of %q, got %s of %q", typ, name, ev.Type, m.GetName())
	}
	if rv != "" && m.GetResourceVersion() != rv {
		t.Fatalf("%s of %q: want resourceVersion %s, got %s", typ, name, rv, m.GetResourceVersion())
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP, dynamic client
// ---------------------------------------------------------------------------------------------

// httpGet does GET path on the server and returns the status code and the body.
func httpGet(t *testing.T, s *framework.Server, path string) (int, []byte) {
	t.Helper()
	code, _, body := httpGetAccept(t, s, path, "")
	return code, body
}

// httpGetAccept does GET path with the given Accept header (none when empty) and returns the
// status code, the Content-Type and the body.
func httpGetAccept(t *testing.T, s *framework.Server, path, accept string) (int, string, []byte) {
	t.Helper()
	transport, err := rest.TransportFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, s.Config.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// getJSON does GET path, requires 200 and decodes the JSON body.
func getJSON(t *testing.T, s *framework.Server, path string) map[string]any {
	t.Helper()
	code, body := httpGet(t, s, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: want 200, got %d: %.500s", path, code, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: decoding JSON: %v", path, err)
	}
	return out
}

func dynamicClient(t *testing.T, s *framework.Server) dynamic.Interface {
	t.Helper()
	return clientOf(t, s, dynamic.NewForConfig)
}

// clientOf is the client that newForConfig makes for the server's configuration.
func clientOf[C any](t *testing.T, s *framework.Server, newForConfig func(*rest.Config) (C, error)) C {
	t.Helper()
	c, err := newForConfig(s.Config)
	if err != nil {
		t.Fatalf("a client for the server: %v", err)
	}
	return c
}

// resourceFor returns the dynamic client of gvr, namespaced in "default" when namespaced.
func resourceFor(c dynamic.Interface, gvr schema.GroupVersionResource, namespaced bool) dynamic.ResourceInterface {
	if namespaced {
		return c.Resource(gvr).Namespace("default")
	}
	return c.Resource(gvr)
}

// getUnstructured reads an object as unstructured through the dynamic client.
func getUnstructured(t *testing.T, s *framework.Server, gvr schema.GroupVersionResource, namespaced bool, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := resourceFor(dynamicClient(t, s), gvr, namespaced).Get(testContext(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s: %v", gvr.Resource, name, err)
	}
	return u
}

// ---------------------------------------------------------------------------------------------
// Repository files
// ---------------------------------------------------------------------------------------------

// repoRoot is the root of the repository: go test runs a package's tests in its directory,
// test/integration (the sources' own paths are module-relative under -trimpath).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(dir))
}

// examplePath is the path of a sample manifest in artifacts/examples.
func examplePath(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "artifacts", "examples", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("sample manifest: %v", err)
	}
	return p
}

// managers returns manager/operation[/subresource] of every managedFields entry.
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	return out
}

// managedFieldsOf returns the fieldsV1 JSON of manager's entry of the given operation, or "".
func managedFieldsOf(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) string {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op && e.FieldsV1 != nil {
			return e.FieldsV1.GetRawString()
		}
	}
	return ""
}

// ownsField tells whether manager's entry of operation op lists the field key (such as
// `"f:replicas"`) under spec.
func ownsField(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, path ...string) bool {
	raw := managedFieldsOf(entries, manager, op)
	if raw == "" {
		return false
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		return false
	}
	var cur any = fields
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[p]; !ok {
			return false
		}
	}
	return true
}
