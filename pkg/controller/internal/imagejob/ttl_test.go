package imagejob

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Expire waits out the TTL (at least minRequeue), then deletes the job with its UID as
// precondition and records an Event; a job gone is no error, another failure is.
func TestExpire(t *testing.T) {
	completed := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	job := &v1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "u"}}
	cp := &v1alpha1.CompletionPolicy{TTLSecondsAfterFinished: ptr.To[int32](60)}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(completed.Add(d)) }
	for _, tc := range []struct {
		name        string
		cp          *v1alpha1.CompletionPolicy
		completion  *metav1.Time
		now         metav1.Time
		deleteErr   error
		wantRequeue time.Duration
		wantDelete  bool
		wantErr     string
		wantEvent   bool
	}{
		{name: "not completed", cp: cp, now: at(time.Hour)},
		{name: "no ttl", cp: &v1alpha1.CompletionPolicy{}, completion: ptr.To(at(0)), now: at(time.Hour)},
		{name: "ttl to come", cp: cp, completion: ptr.To(at(0)), now: at(20 * time.Second), wantRequeue: 40 * time.Second},
		{name: "ttl almost passed", cp: cp, completion: ptr.To(at(0)), now: at(59*time.Second + 900*time.Millisecond), wantRequeue: time.Second},
		{name: "ttl passed", cp: cp, completion: ptr.To(at(0)), now: at(time.Minute), wantDelete: true, wantEvent: true},
		{name: "already gone", cp: cp, completion: ptr.To(at(0)), now: at(time.Hour), wantDelete: true,
			deleteErr: apierrors.NewNotFound(v1alpha1.Resource("imagepulljobs"), "j")},
		{name: "delete fails", cp: cp, completion: ptr.To(at(0)), now: at(time.Hour), wantDelete: true,
			deleteErr: errors.New("boom"), wantErr: "deleting imagepulljob ns/j after its ttlSecondsAfterFinished: boom"},
	} {
		recorder := record.NewFakeRecorder(10)
		deleted := false
		del := func(_ context.Context, name string, opts metav1.DeleteOptions) error {
			deleted = true
			if name != "j" || opts.Preconditions == nil || ptr.Deref(opts.Preconditions.UID, "") != "u" {
				t.Errorf("%s: delete %s %+v, want j with its UID as precondition", tc.name, name, opts)
			}
			return tc.deleteErr
		}
		requeue, err := Expire(context.Background(), job, "ImagePullJob", tc.cp, tc.completion, tc.now, time.Second, del, recorder)
		if requeue != tc.wantRequeue || deleted != tc.wantDelete {
			t.Errorf("%s: requeue %v deleted %v, want %v %v", tc.name, requeue, deleted, tc.wantRequeue, tc.wantDelete)
		}
		if (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
		close(recorder.Events)
		var events []string
		for e := range recorder.Events {
			events = append(events, e)
		}
		if want := "Normal TTLExpired Deleted: 60s after completion"; tc.wantEvent != (len(events) == 1 && strings.HasPrefix(events[0], want)) || (!tc.wantEvent && len(events) != 0) {
			t.Errorf("%s: events %q, want %v of %q", tc.name, events, tc.wantEvent, want)
		}
	}
}
