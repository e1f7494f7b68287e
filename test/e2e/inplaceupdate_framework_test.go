package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Helpers of the pods/inplaceupdate tests (inplaceupdate_test.go).

const (
	appImageV2  = "inplace.local/app:v2"
	appImageV3  = "inplace.local/app:v3"
	appImageBad = "inplace.local/app:bad"

	// controllerHook (re)starts inplace-controller on the running cluster.
	controllerHook = "hack/local-up.d/20-inplace-controller.sh"

	// updateTimeout bounds an in-place update of a settled Pod on the local node (measured: an
	// image change is done in ~1-3 s; a restarted inplace-controller may wait up to its lease
	// duration, 15 s, before it leads).
	updateTimeout = 90 * time.Second
)

// updateState is the Pod's state annotation as inplace writes it: OpenKruise's
// InPlaceUpdateState plus completedTimestamp (see pkg/inplaceupdate/doc.go).
type updateState struct {
	pub.InPlaceUpdateState
	CompletedTimestamp *metav1.Time `json:"completedTimestamp,omitempty"`
}

// stateOf decodes the Pod's state annotation; nil when the Pod has none.
func stateOf(t *testing.T, pod *corev1.Pod) *updateState {
	t.Helper()
	raw, ok := pod.Annotations[pub.InPlaceUpdateStateKey]
	if !ok {
		return nil
	}
	st := &updateState{}
	if err := json.Unmarshal([]byte(raw), st); err != nil {
		t.Fatalf("annotation %s of pod %s does not decode: %v: %q", pub.InPlaceUpdateStateKey, pod.Name, err, raw)
	}
	return st
}

// batchContainers are the containers of each batch of the state, in order.
func batchContainers(st *updateState) [][]string {
	var batches [][]string
	for _, b := range st.ContainerBatchesRecord {
		batches = append(batches, b.Containers)
	}
	return batches
}

// container is a container of the test image.
func container(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullNever}
}

// gatedPod is a Pod with the InPlaceUpdateReady readiness gate (as a CloneSet creates them)
// running the given containers; it stops within a second.
func gatedPod(namespace, name string, containers ...corev1.Container) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
			Containers:                    containers,
		},
	}
}

// createSettledPod creates the Pod and waits until it is settled: Running, every container
// ready, Ready and (with the readiness gate) InPlaceUpdateReady True.
func createSettledPod(t *testing.T, ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return waitPodSettled(t, ctx, pod.Namespace, pod.Name)
}

// waitPodSettled waits until the Pod runs with every container ready, Ready True and, when it has
// the readiness gate, InPlaceUpdateReady True; it returns the Pod.
func waitPodSettled(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, ctx, podTimeout, "Pod "+namespace+"/"+name+" running and ready", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if why := notSettled(pod); why != "" {
			return false, fmt.Errorf("%s", why)
		}
		return true, nil
	})
	return pod
}

// notSettled says why the Pod is not running and ready (empty when it is).
func notSettled(pod *corev1.Pod) string {
	if pod.Status.Phase != corev1.PodRunning {
		return "phase " + string(pod.Status.Phase)
	}
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return fmt.Sprintf("%d container statuses for %d containers", len(pod.Status.ContainerStatuses), len(pod.Spec.Containers))
	}
	for _, s := range pod.Status.ContainerStatuses {
		if !s.Ready {
			return fmt.Sprintf("container %s not ready: %+v", s.Name, s.State)
		}
	}
	if c := podCondition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		return fmt.Sprintf("condition Ready %+v", c)
	}
	for _, g := range pod.Spec.ReadinessGates {
		if c := podCondition(pod, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("condition %s %+v", g.ConditionType, c)
		}
	}
	return ""
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// conditionStatus is the status of condition t, "" when the Pod lacks it.
func conditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	if c := podCondition(pod, t); c != nil {
		return c.Status
	}
	return ""
}

func containerStatus(t *testing.T, pod *corev1.Pod, name string) corev1.ContainerStatus {
	t.Helper()
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("pod %s has no status of container %s: %+v", pod.Name, name, pod.Status.ContainerStatuses)
	return corev1.ContainerStatus{}
}

func specImage(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// findStatus is the status of container name, or nil.
func findStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// rawResponse is what `kubectl create --raw` answered.
type rawResponse struct {
	code   int    // HTTP status code of the POST (from kubectl's -v=6 log)
	body   string // stdout: the response body on success
	errMsg string // stderr without kubectl's log lines: the error kubectl printed
	err    error
}

var responseLine = regexp.MustCompile(`"Response" verb="POST" url="[^"]*" status="(\d+)`)

// postInPlaceUpdate sends POST pods/NAME/inplaceupdate with the spec through
// `kubectl create --raw PATH -f BODY.json` (the way the issue asks for) and returns the answer.
func postInPlaceUpdate(t *testing.T, ctx context.Context, namespace, name string, spec v1alpha1.InPlaceUpdateSpec) rawResponse {
	t.Helper()
	return postInPlaceUpdateFile(t, ctx, namespace, name, bodyFile(t, spec))
}

// bodyFile writes the InPlaceUpdate body of the spec to a file of the test and returns its path.
func bodyFile(t *testing.T, spec v1alpha1.InPlaceUpdateSpec) string {
	t.Helper()
	body, err := json.Marshal(&v1alpha1.InPlaceUpdate{
		TypeMeta: metav1.TypeMeta{APIVersion: groupVersion, Kind: "InPlaceUpdate"},
		Spec:     spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): kubectl -f splits its argument at commas, which subtest names may have.
	dir, err := os.MkdirTemp("", "inplace-e2e-body-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	file := filepath.Join(dir, "inplaceupdate.json")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// postInPlaceUpdateFile is postInPlaceUpdate with the body in a file (relative to the
// repository root).
func postInPlaceUpdateFile(t *testing.T, ctx context.Context, namespace, name, file string) rawResponse {
	t.Helper()
	path := "/apis/apps.kruise.io/v1alpha1/namespaces/" + namespace + "/pods/" + name + "/inplaceupdate"
	out, stderr, err := kubectl(ctx, "", "create", "--raw", path, "-f", file, "-v=6")
	resp := rawResponse{body: out, err: err}
	// kubectl's own message follows its last log line (which, for an error, is the response
	// object, over several lines up to "}]").
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	msgStart := 0
	for i, line := range lines {
		if m := responseLine.FindStringSubmatch(line); m != nil {
			resp.code, _ = strconv.Atoi(m[1])
		}
		if isKlogLine(line) {
			msgStart = i + 1
			if strings.Contains(line, "server response object") {
				for j := i + 1; j < len(lines); j++ {
					if lines[j] == "}]" {
						msgStart = j + 1
						break
					}
				}
			}
		}
	}
	resp.errMsg = strings.Join(lines[min(msgStart, len(lines)):], "\n")
	if resp.code == 0 {
		t.Fatalf("kubectl create --raw %s: no response status in its log: %v\n%s", path, err, stderr)
	}
	return resp
}

// isKlogLine tells kubectl's -v log lines ("I1121 06:59:36.581963 ...") from what it prints.
func isKlogLine(line string) bool {
	return len(line) > 5 && strings.ContainsRune("IWEF", rune(line[0])) && line[1] >= '0' && line[1] <= '9'
}

// startInPlaceUpdate starts an in-place update with `kubectl create --raw` and returns the
// answer, which must be 201 Created with an InPlaceUpdate.
//
// A refusal "the object has been modified" (409, or 500 when it hit the status write) on a Pod
// that nobody but inplace writes is a bug (the request lost a write race against
// inplace-controller, see TestInPlaceUpdateNoSelfConflict): it fails the test, then the request
// is sent again (5 attempts in all) so that the rest of the test still shows what works.
func startInPlaceUpdate(t *testing.T, ctx context.Context, namespace, name string, spec v1alpha1.InPlaceUpdateSpec) *v1alpha1.InPlaceUpdate {
	t.Helper()
	return startInPlaceUpdateFile(t, ctx, namespace, name, bodyFile(t, spec))
}

// startInPlaceUpdateFile is startInPlaceUpdate with the body in a file (relative to the
// repository root).
func startInPlaceUpdateFile(t *testing.T, ctx context.Context, namespace, name, file string) *v1alpha1.InPlaceUpdate {
	t.Helper()
	for attempt := 1; ; attempt++ {
		resp := postInPlaceUpdateFile(t, ctx, namespace, name, file)
		if resp.code == 201 {
			out := &v1alpha1.InPlaceUpdate{}
			if err := json.Unmarshal([]byte(resp.body), out); err != nil {
				t.Fatalf("answer of pods/%s/inplaceupdate does not decode: %v: %q", name, err, resp.body)
			}
			if out.Kind != "InPlaceUpdate" || out.Name != name || out.Status.State == nil {
				t.Errorf("answer of pods/%s/inplaceupdate: %s", name, resp.body)
			}
			if attempt > 1 {
				t.Logf("pods/%s/inplaceupdate accepted at attempt %d", name, attempt)
			}
			return out
		}
		if (resp.code == 409 || resp.code == 500) && strings.Contains(resp.errMsg, "the object has been modified") && attempt < 5 {
			t.Errorf("BUG: POST pods/%s/inplaceupdate (attempt %d) answered HTTP %d: %s (inplace lost a write race on the "+
				"Pod, against inplace-controller resetting InPlaceUpdateReady; see the condition flip in the Pod's history); sending it again",
				name, attempt, resp.code, resp.errMsg)
			continue
		}
		t.Fatalf("POST pods/%s/inplaceupdate: HTTP %d, want 201: %s %v", name, resp.code, resp.errMsg, resp.err)
	}
}

// waitUpdateCompleted waits until the Pod's in-place update is completed (state annotation with
// completedTimestamp, no grace annotation), InPlaceUpdateReady (when gated) and Ready are True
// and every container is ready; it returns the Pod.
func waitUpdateCompleted(t *testing.T, ctx context.Context, namespace, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, ctx, timeout, "the in-place update of Pod "+namespace+"/"+name+" to complete", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		st := stateOf(t, pod)
		switch {
		case st == nil:
			return false, fmt.Errorf("no state annotation")
		case st.CompletedTimestamp == nil:
			return false, fmt.Errorf("state not completed: %s", pod.Annotations[pub.InPlaceUpdateStateKey])
		}
		if _, ok := pod.Annotations[pub.InPlaceUpdateGraceKey]; ok {
			return false, fmt.Errorf("grace annotation still there")
		}
		if why := notSettled(pod); why != "" {
			return false, fmt.Errorf("completed but %s", why)
		}
		return true, nil
	})
	return pod
}

// podRecord is one version of a Pod seen by a podRecorder.
type podRecord struct {
	at  time.Time
	pod *corev1.Pod
}

// podRecorder keeps every version of one Pod from the moment it starts: the Pod as read, then
// each version its watch delivers (a watch delivers every change, in order).
type podRecorder struct {
	mu      sync.Mutex
	records []podRecord
	err     error
}

// recordPod starts recording the Pod; the recording stops at the end of the test.
func recordPod(t *testing.T, ctx context.Context, namespace, name string) *podRecorder {
	t.Helper()
	pod, err := kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &podRecorder{records: []podRecord{{at: time.Now(), pod: pod}}}
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	watchPods(t, ctx, namespace, selector, pod.ResourceVersion, func(ev watch.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch ev.Type {
		case watch.Added, watch.Modified:
			if p, ok := ev.Object.(*corev1.Pod); ok {
				r.records = append(r.records, podRecord{at: time.Now(), pod: p})
			}
		case watch.Error:
			r.err = fmt.Errorf("watch error: %v", ev.Object)
		}
	})
	return r
}

// watchPods watches the Pods of a namespace (matching fieldSelector, when set) from
// resourceVersion rv until the test ends, re-establishing the watch when it breaks; handle sees
// every event, in order, on one goroutine.
func watchPods(t *testing.T, ctx context.Context, namespace, fieldSelector, rv string, handle func(watch.Event)) {
	t.Helper()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
		options.FieldSelector = fieldSelector
		return kube.CoreV1().Pods(namespace).Watch(ctx, options)
	}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		t.Fatalf("watching the Pods of %s: %v", namespace, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			handle(ev)
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
}

// mustParseRV reads a resourceVersion as the etcd revision it is, so two can be ordered (tests
// only: clients in general must treat resourceVersions as opaque).
func mustParseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// upTo waits until the recorder has seen resourceVersion rv of the Pod (or a later one) and
// returns every version seen so far.
func (r *podRecorder) upTo(t *testing.T, ctx context.Context, rv string) []podRecord {
	t.Helper()
	want := mustParseRV(t, rv)
	var records []podRecord
	poll(t, ctx, 30*time.Second, "the Pod watch to deliver resourceVersion "+rv, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		records = slices.Clone(r.records)
		return mustParseRV(t, records[len(records)-1].pod.ResourceVersion) >= want, r.err
	})
	return records
}

// conditionHistory is the sequence of statuses of condition ct over the records, with repeats
// folded ("" where the Pod lacked it): e.g. [True False True].
func conditionHistory(records []podRecord, ct corev1.PodConditionType) []corev1.ConditionStatus {
	var h []corev1.ConditionStatus
	for _, rec := range records {
		s := conditionStatus(rec.pod, ct)
		if len(h) == 0 || h[len(h)-1] != s {
			h = append(h, s)
		}
	}
	return h
}

// describeRecords prints the history of the Pod, one line per version, for failure messages.
func describeRecords(records []podRecord, containers ...string) string {
	var b strings.Builder
	start := records[0].at
	for _, rec := range records {
		p := rec.pod
		fmt.Fprintf(&b, "  +%6.3fs rv=%s InPlaceUpdateReady=%s Ready=%s", rec.at.Sub(start).Seconds(), p.ResourceVersion,
			conditionStatus(p, pub.InPlaceUpdateReady), conditionStatus(p, corev1.PodReady))
		for _, c := range containers {
			s := findStatus(p, c)
			if s == nil {
				fmt.Fprintf(&b, " %s[spec %s, no status]", c, specImage(p, c))
				continue
			}
			fmt.Fprintf(&b, " %s[spec %s, status %s ready=%v restarts=%d id=%.25s]", c, specImage(p, c), s.Image, s.Ready, s.RestartCount, s.ContainerID)
		}
		if _, ok := p.Annotations[pub.InPlaceUpdateGraceKey]; ok {
			b.WriteString(" grace")
		}
		if _, ok := p.Annotations[pub.InPlaceUpdateStateKey]; ok {
			b.WriteString(" state")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// podLog is `kubectl logs -n NS POD -c CONTAINER [extra...]`.
func podLog(t *testing.T, ctx context.Context, namespace, pod, containerName string, extra ...string) string {
	t.Helper()
	return mustKubectl(t, ctx, "", append([]string{"logs", "-n", namespace, pod, "-c", containerName}, extra...)...)
}

// waitLog waits until `kubectl logs` of the container shows want.
func waitLog(t *testing.T, ctx context.Context, namespace, pod, containerName, want string, extra ...string) {
	t.Helper()
	poll(t, ctx, 30*time.Second, fmt.Sprintf("kubectl logs %s -c %s %v to show %q", pod, containerName, extra, want), func(ctx context.Context) (bool, error) {
		out, _, err := kubectl(ctx, "", append([]string{"logs", "-n", namespace, pod, "-c", containerName}, extra...)...)
		if err != nil {
			return false, err
		}
		return strings.Contains(out, want), fmt.Errorf("log: %q", out)
	})
}

// runLocalUpHook runs a hack/local-up.d hook on its own (it restarts its program), logging its
// output to the test.
func runLocalUpHook(t *testing.T, hook string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hook)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", hook, out)
	return err
}

// getPodJSON reads the Pod as kube-apiserver serves it (bytes of GET, unchanged).
func getPodJSON(t *testing.T, ctx context.Context, namespace, name string) []byte {
	t.Helper()
	raw, err := kube.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods").Name(name).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET pod %s/%s: %v", namespace, name, err)
	}
	return raw
}
