package kubectlplugin

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// recorded is one request the test server got.
type recorded struct {
	method, path, query string
	body                map[string]any
}

// subresourceServer answers POSTs with answer (JSON) and records them.
func subresourceServer(t *testing.T, status int, answer any) (*versioned.Clientset, *[]recorded) {
	t.Helper()
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &rec.body); err != nil {
				t.Errorf("body %s: %v", raw, err)
			}
		}
		got = append(got, rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	c, err := versioned.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, &got
}

func TestBuildInPlaceUpdate(t *testing.T) {
	req, err := BuildInPlaceUpdate([]string{"main=app:v2", "side=side:v2"}, 10*time.Second, "demo-v2")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(req)
	want := `{"kind":"InPlaceUpdate","apiVersion":"apps.kruise.io/v1alpha1","metadata":{},"spec":{"revision":"demo-v2",` +
		`"containers":[{"name":"main","image":"app:v2"},{"name":"side","image":"side:v2"}],"gracePeriodSeconds":10},"status":{}}`
	if string(raw) != want {
		t.Errorf("body\n%s\nwant\n%s", raw, want)
	}
	for _, tc := range []struct {
		images []string
		grace  time.Duration
	}{{[]string{"main"}, 0}, {[]string{"=x"}, 0}, {[]string{"main=a", "main=b"}, 0}, {[]string{"main=a"}, 1500 * time.Millisecond}, {[]string{"main=a"}, -time.Second}} {
		if _, err := BuildInPlaceUpdate(tc.images, tc.grace, ""); err == nil {
			t.Errorf("BuildInPlaceUpdate(%v, %s): no error", tc.images, tc.grace)
		}
	}
}

func TestUpdatePod(t *testing.T) {
	updated := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	answer := &v1alpha1.InPlaceUpdate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "InPlaceUpdate"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "pod-uid"},
		Spec:       v1alpha1.InPlaceUpdateSpec{Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: "app:v2"}}},
		Status: v1alpha1.InPlaceUpdateStatus{Message: "updating containers main", State: &pub.InPlaceUpdateState{
			Revision: "r2", UpdateTimestamp: updated,
			ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Timestamp: updated, Containers: []string{"main"}}},
		}},
	}
	kruise, got := subresourceServer(t, http.StatusCreated, answer)
	f := &testFactory{namespace: "default", kruise: kruise}
	out, _, err := run(t, f, "update", "pod", "demo", "--image", "main=app:v2", "--grace", "3s", "--revision", "r2", "--dry-run=server")
	if err != nil {
		t.Fatal(err)
	}
	if len(*got) != 1 {
		t.Fatalf("requests %v", *got)
	}
	r := (*got)[0]
	if r.method != http.MethodPost || r.path != "/apis/apps.kruise.io/v1alpha1/namespaces/default/pods/demo/inplaceupdate" || r.query != "dryRun=All" {
		t.Errorf("request %s %s?%s", r.method, r.path, r.query)
	}
	spec, _ := json.Marshal(r.body["spec"])
	if r.body["kind"] != "InPlaceUpdate" || string(spec) != `{"containers":[{"image":"app:v2","name":"main"}],"gracePeriodSeconds":3,"revision":"r2"}` {
		t.Errorf("body %v", r.body)
	}
	want := "pod/demo in-place update started (server dry run): main=app:v2\n  updating containers main\n  revision: r2\n  updating now: main\n"
	if out != want {
		t.Errorf("output\n%q\nwant\n%q", out, want)
	}
	out, _, err = run(t, f, "update", "pod", "pod/demo", "--image", "main=app:v2", "-o", "json")
	if err != nil || !strings.Contains(out, `"kind": "InPlaceUpdate"`) || !strings.Contains(out, `"revision": "r2"`) {
		t.Fatalf("-o json: %s %v", out, err)
	}
	for _, args := range [][]string{
		{"update", "pod", "demo"},
		{"update", "pod", "demo", "--image", "main=x", "--wait", "--dry-run=server"},
		{"update", "pod", "deploy/demo", "--image", "main=x"},
		{"update", "pod", "a", "b", "--image", "main=x"},
	} {
		if _, _, err := run(t, f, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestUpdateDone(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	started := &pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: start}
	pod := func(state string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo", Annotations: map[string]string{}}}
		if state != "" {
			p.Annotations[pub.InPlaceUpdateStateKey] = state
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		done    bool
		what    string
		wantErr string
	}{
		{"in progress", pod(`{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z"}`, false), false, "the in-place update to complete", ""},
		{"completed, not ready", pod(`{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z","completedTimestamp":"2026-01-02T03:04:09Z"}`, false), false, "the Pod to be Ready", ""},
		{"completed and ready", pod(`{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z","completedTimestamp":"2026-01-02T03:04:09Z"}`, true), true, "", ""},
		{"a later update completed", pod(`{"revision":"r3","updateTimestamp":"2026-01-02T03:05:00Z","completedTimestamp":"2026-01-02T03:05:09Z"}`, true), true, "", ""},
		{"an older state", pod(`{"revision":"r1","updateTimestamp":"2026-01-01T00:00:00Z","completedTimestamp":"2026-01-01T00:00:01Z"}`, true), false, "", "older than the update started"},
		{"no state", pod("", true), false, "", "has no in-place update state"},
		{"bad state", pod("{", true), false, "", "reading its in-place update state"},
	} {
		done, what, err := UpdateDone(tc.pod, started)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v; want error %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || done != tc.done || what != tc.what {
			t.Errorf("%s: %v %q %v; want %v %q", tc.name, done, what, err, tc.done, tc.what)
		}
	}
}

func TestUpdatePodWait(t *testing.T) {
	answer := &v1alpha1.InPlaceUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", UID: "pod-uid"},
		Status:     v1alpha1.InPlaceUpdateStatus{State: &pub.InPlaceUpdateState{Revision: "r2", UpdateTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}},
	}
	kruise, _ := subresourceServer(t, http.StatusCreated, answer)
	_, _, kube := newFakeFactory(nil, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "pod-uid", Annotations: map[string]string{
			pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z","completedTimestamp":"2026-01-02T03:04:09Z"}`}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	})
	f := &testFactory{namespace: "default", kruise: kruise, kube: kube}
	out, _, err := run(t, f, "update", "pod", "demo", "--image", "main=app:v2", "--wait", "--timeout", "5s")
	if err != nil || !strings.HasSuffix(out, "pod/demo in-place update completed\n") {
		t.Fatalf("--wait: %q %v", out, err)
	}
	// A Pod that never completes: the timeout ends the wait with an error.
	_, _, kube2 := newFakeFactory(nil, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", UID: "pod-uid", Annotations: map[string]string{
		pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":"2026-01-02T03:04:05Z"}`}}})
	f.kube = kube2
	out, _, err = run(t, f, "update", "pod", "demo", "--image", "main=app:v2", "--wait", "--timeout", "300ms")
	if err == nil || !strings.Contains(err.Error(), `timed out after 300ms waiting for pod "demo": the in-place update to complete`) {
		t.Fatalf("--wait timeout: %q %v", out, err)
	}
}

func TestRecreatePod(t *testing.T) {
	answer := &v1alpha1.ContainerRecreateRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ContainerRecreateRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: "demo-x7k2p", Namespace: "default"},
		Spec:       v1alpha1.ContainerRecreateRequestSpec{PodName: "demo", Containers: []v1alpha1.ContainerRecreateRequestContainer{{Name: "main"}, {Name: "side"}}},
	}
	kruise, got := subresourceServer(t, http.StatusCreated, answer)
	f := &testFactory{namespace: "ns1", kruise: kruise}
	out, _, err := run(t, f, "recreate", "pod", "demo", "-c", "main,side", "--ordered")
	if err != nil || out != "containerrecreaterequest.apps.kruise.io/demo-x7k2p created\n" {
		t.Fatalf("recreate: %q %v", out, err)
	}
	r := (*got)[0]
	spec, _ := json.Marshal(r.body["spec"])
	if r.path != "/apis/apps.kruise.io/v1alpha1/namespaces/ns1/pods/demo/recreate" || r.query != "" || r.body["kind"] != "ContainerRecreateRequest" ||
		string(spec) != `{"containers":[{"name":"main"},{"name":"side"}],"podName":"","strategy":{"orderedRecreate":true}}` {
		t.Errorf("request %s?%s %s", r.path, r.query, spec)
	}
	// No -c: an empty container list, which the server fills with every container of the Pod.
	if _, _, err := run(t, f, "recreate", "pod", "demo", "--dry-run=server"); err != nil {
		t.Fatal(err)
	}
	r = (*got)[1]
	spec, _ = json.Marshal(r.body["spec"])
	if r.query != "dryRun=All" || string(spec) != `{"containers":null,"podName":""}` {
		t.Errorf("request without -c: %s %s", r.query, spec)
	}
	if _, _, err := run(t, f, "recreate", "pod", "demo", "--failure-policy", "Sometimes"); err == nil {
		t.Errorf("a bad --failure-policy: no error")
	}
}

func TestRecreateDone(t *testing.T) {
	crr := func(phase v1alpha1.ContainerRecreateRequestPhase, message string, states ...v1alpha1.ContainerRecreateRequestContainerRecreateState) *v1alpha1.ContainerRecreateRequest {
		return &v1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "r"},
			Status: v1alpha1.ContainerRecreateRequestStatus{Phase: phase, Message: message, ContainerRecreateStates: states}}
	}
	failed := v1alpha1.ContainerRecreateRequestContainerRecreateState{Name: "main", Phase: v1alpha1.ContainerRecreateRequestFailed, Message: "stop timed out"}
	for _, tc := range []struct {
		crr     *v1alpha1.ContainerRecreateRequest
		done    bool
		wantErr string
	}{
		{crr("", ""), false, ""},
		{crr(v1alpha1.ContainerRecreateRequestRecreating, ""), false, ""},
		{crr(v1alpha1.ContainerRecreateRequestCompleted, ""), true, ""},
		{crr(v1alpha1.ContainerRecreateRequestCompleted, "", failed), true, ""}, // failurePolicy Ignore
		{crr(v1alpha1.ContainerRecreateRequestCompleted, "container main failed", failed), true, "failed: container main failed; main: stop timed out"},
		{crr(v1alpha1.ContainerRecreateRequestCompleted, "pod is gone"), true, "containerrecreaterequest r failed: pod is gone"},
	} {
		done, err := RecreateDone(tc.crr)
		if done != tc.done || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: %v %v; want %v %q", tc.crr.Status, done, err, tc.done, tc.wantErr)
		}
	}
}

func TestCompletion(t *testing.T) {
	f := &testFactory{namespace: "default"}
	for _, shell := range []string{"bash", "zsh"} {
		out, _, err := run(t, f, "completion", shell)
		if err != nil || !strings.Contains(out, "kubectl-inplace") {
			t.Errorf("completion %s: %v\n%.200s", shell, err, out)
		}
	}
	if _, _, err := run(t, f, "completion", "tcsh"); err == nil {
		t.Errorf("completion tcsh: no error")
	}
}

// TestHelpHasExamples: every command that runs something documents itself with an example.
func TestHelpHasExamples(t *testing.T) {
	root := NewCommand(&testFactory{}, genericiooptionsTest())
	var walk func(c *cobraCommand)
	walk = func(c *cobraCommand) {
		if c.Runnable() && c.Name() != "help" && !c.HasSubCommands() && c.Example == "" {
			t.Errorf("%s has no example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
