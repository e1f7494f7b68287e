package framework

import (
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

const (
	AppImageV2  = "inplace.local/app:v2"
	AppImageV3  = "inplace.local/app:v3"
	AppImageBad = "inplace.local/app:bad"

	// ControllerHook (re)starts inplace-controller on the running cluster.
	ControllerHook = "hack/local-up.d/20-inplace-controller.sh"

	// UpdateTimeout bounds an in-place update of a settled Pod on the local node (measured: an
	// image change is done in ~1-3 s; a restarted inplace-controller may wait up to its lease
	// duration, 15 s, before it leads).
	UpdateTimeout = 90 * time.Second
)

// UpdateState is the Pod's state annotation as inplace writes it: OpenKruise's
// InPlaceUpdateState plus completedTimestamp (see pkg/inplaceupdate/doc.go).
type UpdateState struct {
	pub.InPlaceUpdateState
	CompletedTimestamp *metav1.Time `json:"completedTimestamp,omitempty"`
}

// StateOf decodes the Pod's state annotation; nil when the Pod has none.
func StateOf(t *testing.T, pod *corev1.Pod) *UpdateState {
	t.Helper()
	raw, ok := pod.Annotations[pub.InPlaceUpdateStateKey]
	if !ok {
		return nil
	}
	st := &UpdateState{}
	if err := json.Unmarshal([]byte(raw), st); err != nil {
		t.Fatalf("annotation %s of pod %s does not decode: %v: %q", pub.InPlaceUpdateStateKey, pod.Name, err, raw)
	}
	return st
}

// BatchContainers are the containers of each batch of the state, in order.
func BatchContainers(st *UpdateState) [][]string {
	var batches [][]string
	for _, b := range st.ContainerBatchesRecord {
		batches = append(batches, b.Containers)
	}
	return batches
}

// GatedPod is a Pod with the InPlaceUpdateReady readiness gate (as a CloneSet creates them)
// running the given containers; it stops within a second.
func GatedPod(namespace, name string, containers ...corev1.Container) *corev1.Pod {
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

// CreateSettledPod creates the Pod and waits until it is settled: Running, every container
// ready, Ready and (with the readiness gate) InPlaceUpdateReady True.
func CreateSettledPod(t *testing.T, ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return WaitPodSettled(t, ctx, pod.Namespace, pod.Name)
}

// WaitPodSettled waits until the Pod runs with every container ready, Ready True and, when it has
// the readiness gate, InPlaceUpdateReady True; it returns the Pod.
func WaitPodSettled(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	return WaitPod(t, ctx, PodTimeout, "Pod "+namespace+"/"+name+" running and ready", namespace, name, func(pod *corev1.Pod) error {
		if why := notSettled(pod); why != "" {
			return fmt.Errorf("%s", why)
		}
		return nil
	})
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
	if c := PodCondition(pod, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
		return fmt.Sprintf("condition Ready %+v", c)
	}
	for _, g := range pod.Spec.ReadinessGates {
		if c := PodCondition(pod, g.ConditionType); c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("condition %s %+v", g.ConditionType, c)
		}
	}
	return ""
}

// RawResponse is what `kubectl create --raw` answered.
type RawResponse struct {
	Code   int    // HTTP status code of the POST (from kubectl's -v=6 log)
	Body   string // stdout: the response body on success
	ErrMsg string // stderr without kubectl's log lines: the error kubectl printed
	Err    error
}

var ResponseLine = regexp.MustCompile(`"Response" verb="POST" url="[^"]*" status="(\d+)`)

// PostInPlaceUpdate sends POST pods/NAME/inplaceupdate with the spec through
// `kubectl create --raw PATH -f BODY.json` (the way the issue asks for) and returns the answer.
func PostInPlaceUpdate(t *testing.T, ctx context.Context, namespace, name string, spec v1alpha1.InPlaceUpdateSpec) RawResponse {
	t.Helper()
	return PostInPlaceUpdateFile(t, ctx, namespace, name, bodyFile(t, spec))
}

// bodyFile writes the InPlaceUpdate body of the spec to a file of the test and returns its path.
func bodyFile(t *testing.T, spec v1alpha1.InPlaceUpdateSpec) string {
	t.Helper()
	return JSONFile(t, "inplaceupdate.json", &v1alpha1.InPlaceUpdate{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion, Kind: "InPlaceUpdate"},
		Spec:     spec,
	})
}

// PostInPlaceUpdateFile is PostInPlaceUpdate with the body in a file (relative to the
// repository root).
func PostInPlaceUpdateFile(t *testing.T, ctx context.Context, namespace, name, file string) RawResponse {
	t.Helper()
	path := "/apis/apps.kruise.io/v1alpha1/namespaces/" + namespace + "/pods/" + name + "/inplaceupdate"
	out, stderr, err := Kubectl(ctx, "", "create", "--raw", path, "-f", file, "-v=6")
	resp := RawResponse{Body: out, Err: err}
	// kubectl's own message follows its last log line (which, for an error, is the response
	// object, over several lines up to "}]").
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	msgStart := 0
	for i, line := range lines {
		if m := ResponseLine.FindStringSubmatch(line); m != nil {
			resp.Code, _ = strconv.Atoi(m[1])
		}
		if IsKlogLine(line) {
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
	resp.ErrMsg = strings.Join(lines[min(msgStart, len(lines)):], "\n")
	if resp.Code == 0 {
		t.Fatalf("kubectl create --raw %s: no response status in its log: %v\n%s", path, err, stderr)
	}
	return resp
}

// IsKlogLine tells kubectl's -v log lines ("I1121 06:59:36.581963 ...") from what it prints.
func IsKlogLine(line string) bool {
	return len(line) > 5 && strings.ContainsRune("IWEF", rune(line[0])) && line[1] >= '0' && line[1] <= '9'
}

// StartInPlaceUpdate starts an in-place update with `kubectl create --raw` and returns the
// answer, which must be 201 Created with an InPlaceUpdate.
//
// A refusal "the object has been modified" (409, or 500 when it hit the status write) on a Pod
// that nobody but inplace writes is a bug (the request lost a write race against
// inplace-controller, see TestInPlaceUpdateNoSelfConflict): it fails the test, then the request
// is sent again (5 attempts in all) so that the rest of the test still shows what works.
func StartInPlaceUpdate(t *testing.T, ctx context.Context, namespace, name string, spec v1alpha1.InPlaceUpdateSpec) *v1alpha1.InPlaceUpdate {
	t.Helper()
	return StartInPlaceUpdateFile(t, ctx, namespace, name, bodyFile(t, spec))
}

// StartInPlaceUpdateFile is StartInPlaceUpdate with the body in a file (relative to the
// repository root).
func StartInPlaceUpdateFile(t *testing.T, ctx context.Context, namespace, name, file string) *v1alpha1.InPlaceUpdate {
	t.Helper()
	for attempt := 1; ; attempt++ {
		resp := PostInPlaceUpdateFile(t, ctx, namespace, name, file)
		if resp.Code == 201 {
			out := &v1alpha1.InPlaceUpdate{}
			if err := json.Unmarshal([]byte(resp.Body), out); err != nil {
				t.Fatalf("answer of pods/%s/inplaceupdate does not decode: %v: %q", name, err, resp.Body)
			}
			if out.Kind != "InPlaceUpdate" || out.Name != name || out.Status.State == nil {
				t.Errorf("answer of pods/%s/inplaceupdate: %s", name, resp.Body)
			}
			if attempt > 1 {
				t.Logf("pods/%s/inplaceupdate accepted at attempt %d", name, attempt)
			}
			return out
		}
		if (resp.Code == 409 || resp.Code == 500) && strings.Contains(resp.ErrMsg, "the object has been modified") && attempt < 5 {
			t.Errorf("BUG: POST pods/%s/inplaceupdate (attempt %d) answered HTTP %d: %s (inplace lost a write race on the "+
				"Pod, against inplace-controller resetting InPlaceUpdateReady; see the condition flip in the Pod's history); sending it again",
				name, attempt, resp.Code, resp.ErrMsg)
			continue
		}
		t.Fatalf("POST pods/%s/inplaceupdate: HTTP %d, want 201: %s %v", name, resp.Code, resp.ErrMsg, resp.Err)
	}
}

// WaitUpdateCompleted waits until the Pod's in-place update is completed (state annotation with
// completedTimestamp, no grace annotation), InPlaceUpdateReady (when gated) and Ready are True
// and every container is ready; it returns the Pod.
func WaitUpdateCompleted(t *testing.T, ctx context.Context, namespace, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	return WaitPod(t, ctx, timeout, "the in-place update of Pod "+namespace+"/"+name+" to complete", namespace, name, func(pod *corev1.Pod) error {
		st := StateOf(t, pod)
		switch {
		case st == nil:
			return fmt.Errorf("no state annotation")
		case st.CompletedTimestamp == nil:
			return fmt.Errorf("state not completed: %s", pod.Annotations[pub.InPlaceUpdateStateKey])
		}
		if _, ok := pod.Annotations[pub.InPlaceUpdateGraceKey]; ok {
			return fmt.Errorf("grace annotation still there")
		}
		if why := notSettled(pod); why != "" {
			return fmt.Errorf("completed but %s", why)
		}
		return nil
	})
}

// PodRecord is one version of a Pod seen by a PodRecorder.
type PodRecord struct {
	At  time.Time
	Pod *corev1.Pod
}

// PodRecorder keeps every version of one Pod from the moment it starts: the Pod as read, then
// each version its watch delivers (a watch delivers every change, in order).
type PodRecorder struct {
	Mu      sync.Mutex
	Records []PodRecord
	Err     error
}

// RecordPod starts recording the Pod; the recording stops at the end of the test.
func RecordPod(t *testing.T, ctx context.Context, namespace, name string) *PodRecorder {
	t.Helper()
	pod, err := Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &PodRecorder{Records: []PodRecord{{At: time.Now(), Pod: pod}}}
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	WatchPods(t, ctx, namespace, selector, pod.ResourceVersion, func(ev watch.Event) {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		switch ev.Type {
		case watch.Added, watch.Modified:
			if p, ok := ev.Object.(*corev1.Pod); ok {
				r.Records = append(r.Records, PodRecord{At: time.Now(), Pod: p})
			}
		case watch.Error:
			r.Err = fmt.Errorf("watch error: %v", ev.Object)
		}
	})
	return r
}

// UpTo waits until the recorder has seen resourceVersion rv of the Pod (or a later one) and
// returns every version seen so far.
func (r *PodRecorder) UpTo(t *testing.T, ctx context.Context, rv string) []PodRecord {
	t.Helper()
	want := MustParseRV(t, rv)
	var records []PodRecord
	Poll(t, ctx, 30*time.Second, "the Pod watch to deliver resourceVersion "+rv, func(context.Context) (bool, error) {
		r.Mu.Lock()
		defer r.Mu.Unlock()
		records = slices.Clone(r.Records)
		return MustParseRV(t, records[len(records)-1].Pod.ResourceVersion) >= want, r.Err
	})
	return records
}

// ConditionHistory is the sequence of statuses of condition ct over the records, with repeats
// folded ("" where the Pod lacked it): e.g. [True False True].
func ConditionHistory(records []PodRecord, ct corev1.PodConditionType) []corev1.ConditionStatus {
	var h []corev1.ConditionStatus
	for _, rec := range records {
		s := ConditionStatus(rec.Pod, ct)
		if len(h) == 0 || h[len(h)-1] != s {
			h = append(h, s)
		}
	}
	return h
}

// History is DescribeRecords of the records, logged as well when the test ends failed: what the
// Pod went through is what explains a failure.
func History(t *testing.T, records []PodRecord, containers ...string) string {
	history := DescribeRecords(records, containers...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history of the Pod:\n%s", history)
		}
	})
	return history
}

// DescribeRecords prints the history of the Pod, one line per version, for failure messages.
func DescribeRecords(records []PodRecord, containers ...string) string {
	var b strings.Builder
	start := records[0].At
	for _, rec := range records {
		p := rec.Pod
		fmt.Fprintf(&b, "  +%6.3fs rv=%s InPlaceUpdateReady=%s Ready=%s", rec.At.Sub(start).Seconds(), p.ResourceVersion,
			ConditionStatus(p, pub.InPlaceUpdateReady), ConditionStatus(p, corev1.PodReady))
		for _, c := range containers {
			s := FindStatus(p, c)
			if s == nil {
				fmt.Fprintf(&b, " %s[spec %s, no status]", c, SpecImage(p, c))
				continue
			}
			fmt.Fprintf(&b, " %s[spec %s, status %s ready=%v restarts=%d id=%.25s]", c, SpecImage(p, c), s.Image, s.Ready, s.RestartCount, s.ContainerID)
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
