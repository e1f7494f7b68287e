package cloneset

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

var progNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// progAt is progNow moved by d, as a condition time.
func progAt(d time.Duration) metav1.Time { return metav1.NewTime(progNow.Add(d)) }

func progCloneSet(pds *int32) *v1alpha1.CloneSet {
	return &v1alpha1.CloneSet{Spec: v1alpha1.CloneSetSpec{Replicas: ptr.To[int32](4), ProgressDeadlineSeconds: pds}}
}

// rolledOut is the status of 4 replicas all updated and available.
func rolledOut() *v1alpha1.CloneSetStatus {
	return &v1alpha1.CloneSetStatus{Replicas: 4, UpdatedReplicas: 4, UpdatedAvailableReplicas: 4,
		ExpectedUpdatedReplicas: 4, CurrentRevision: "r2", UpdateRevision: "r2"}
}

// rollingOut is the status of 4 replicas halfway to revision r2, with no partition.
func rollingOut() *v1alpha1.CloneSetStatus {
	return &v1alpha1.CloneSetStatus{Replicas: 4, UpdatedReplicas: 2, UpdatedAvailableReplicas: 1,
		ExpectedUpdatedReplicas: 4, CurrentRevision: "r1", UpdateRevision: "r2"}
}

// partitionDone is rollingOut with a partition of 3 whose one Pod to update is updated and available.
func partitionDone() *v1alpha1.CloneSetStatus {
	st := rollingOut()
	st.ExpectedUpdatedReplicas = 1
	return st
}

func progCond(status corev1.ConditionStatus, reason v1alpha1.CloneSetConditionReason, message string, updated, transitioned time.Duration) *v1alpha1.CloneSetCondition {
	return &v1alpha1.CloneSetCondition{Type: v1alpha1.CloneSetConditionTypeProgressing, Status: status,
		Reason: string(reason), Message: message, LastUpdateTime: progAt(updated), LastTransitionTime: progAt(transitioned)}
}

func progressingCond(reason v1alpha1.CloneSetConditionReason, updated, transitioned time.Duration) *v1alpha1.CloneSetCondition {
	messages := map[v1alpha1.CloneSetConditionReason]string{
		v1alpha1.CloneSetAvailable:                  "CloneSet is available",
		v1alpha1.CloneSetProgressPaused:             "CloneSet is paused",
		v1alpha1.CloneSetProgressPartitionAvailable: "CloneSet has been paused due to partition ready",
		v1alpha1.CloneSetProgressUpdated:            "CloneSet is progressing",
	}
	return progCond(corev1.ConditionTrue, reason, messages[reason], updated, transitioned)
}

func exceededCond(revision string, updated, transitioned time.Duration) *v1alpha1.CloneSetCondition {
	return progCond(corev1.ConditionFalse, v1alpha1.CloneSetProgressDeadlineExceeded,
		"CloneSet revision "+revision+" has timed out progressing", updated, transitioned)
}

func withCondition(st *v1alpha1.CloneSetStatus, c *v1alpha1.CloneSetCondition) *v1alpha1.CloneSetStatus {
	if c != nil {
		st.Conditions = append(st.Conditions, *c)
	}
	return st
}

func checkProgressing(t *testing.T, st *v1alpha1.CloneSetStatus, want *v1alpha1.CloneSetCondition) {
	t.Helper()
	got := findCloneSetCondition(st, v1alpha1.CloneSetConditionTypeProgressing)
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("Progressing condition\n got %+v\nwant %+v", got, want)
	}
}

// Each case of OpenKruise's switch, and the moves between them. Times are relative to now.
func TestSetProgressingCondition(t *testing.T) {
	const pds = 600
	deadline := pds * time.Second
	cases := []struct {
		name    string
		pds     *int32
		paused  bool
		status  *v1alpha1.CloneSetStatus
		old     *v1alpha1.CloneSetCondition
		want    *v1alpha1.CloneSetCondition
		requeue time.Duration
	}{
		// No deadline.
		{name: "unset: no condition", status: rollingOut()},
		{name: "unset: the condition left is removed", status: rollingOut(),
			old: progressingCond(v1alpha1.CloneSetProgressUpdated, -time.Hour, -time.Hour)},
		{name: "MaxInt32 means unset", pds: ptr.To[int32](math.MaxInt32), status: rollingOut(),
			old: exceededCond("r2", -time.Hour, -time.Hour)},

		// First look with a deadline.
		{name: "available", pds: ptr.To[int32](pds), status: rolledOut(),
			want: progressingCond(v1alpha1.CloneSetAvailable, 0, 0)},
		{name: "paused", pds: ptr.To[int32](pds), paused: true, status: rollingOut(),
			want: progressingCond(v1alpha1.CloneSetProgressPaused, 0, 0)},
		{name: "available beats paused", pds: ptr.To[int32](pds), paused: true, status: rolledOut(),
			want: progressingCond(v1alpha1.CloneSetAvailable, 0, 0)},
		{name: "partition available", pds: ptr.To[int32](pds), status: partitionDone(),
			want: progressingCond(v1alpha1.CloneSetProgressPartitionAvailable, 0, 0)},
		{name: "paused beats partition available", pds: ptr.To[int32](pds), paused: true, status: partitionDone(),
			want: progressingCond(v1alpha1.CloneSetProgressPaused, 0, 0)},
		{name: "progressing: the deadline starts now", pds: ptr.To[int32](pds), status: rollingOut(),
			want: progressingCond(v1alpha1.CloneSetProgressUpdated, 0, 0), requeue: deadline + time.Second},
		{name: "pds 10: requeue after 11s", pds: ptr.To[int32](10), status: rollingOut(),
			want: progressingCond(v1alpha1.CloneSetProgressUpdated, 0, 0), requeue: 11 * time.Second},

		// Progressing, later: nothing changes, message and times included.
		{name: "still progressing: the deadline counts from lastUpdateTime", pds: ptr.To[int32](pds), status: rollingOut(),
			old:     progCond(corev1.ConditionTrue, v1alpha1.CloneSetProgressUpdated, "older message", -100*time.Second, -time.Hour),
			want:    progCond(corev1.ConditionTrue, v1alpha1.CloneSetProgressUpdated, "older message", -100*time.Second, -time.Hour),
			requeue: deadline - 100*time.Second + time.Second},
		{name: "under a second to go: no second added", pds: ptr.To[int32](pds), status: rollingOut(),
			old:     progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline+300*time.Millisecond, -time.Hour),
			want:    progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline+300*time.Millisecond, -time.Hour),
			requeue: 300 * time.Millisecond},
		{name: "exactly a second to go: a second added", pds: ptr.To[int32](pds), status: rollingOut(),
			old:     progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline+time.Second, -time.Hour),
			want:    progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline+time.Second, -time.Hour),
			requeue: 2 * time.Second},
		{name: "at the deadline: not yet exceeded", pds: ptr.To[int32](pds), status: rollingOut(),
			old:  progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline, -time.Hour),
			want: progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline, -time.Hour)},

		// Exceeded.
		{name: "past the deadline: exceeded, both times now", pds: ptr.To[int32](pds), status: rollingOut(),
			old:  progressingCond(v1alpha1.CloneSetProgressUpdated, -deadline-time.Nanosecond, -time.Hour),
			want: exceededCond("r2", 0, 0)},
		{name: "exceeded sticks, message included, on a new revision", pds: ptr.To[int32](pds),
			status: func() *v1alpha1.CloneSetStatus { st := rollingOut(); st.UpdateRevision = "r3"; return st }(),
			old:    exceededCond("r2", -time.Minute, -time.Minute),
			want:   exceededCond("r2", -time.Minute, -time.Minute)},
		{name: "exceeded sticks after raising the deadline", pds: ptr.To[int32](math.MaxInt32 - 1), status: rollingOut(),
			old:  exceededCond("r2", -time.Minute, -time.Minute),
			want: exceededCond("r2", -time.Minute, -time.Minute)},
		{name: "exceeded, then available", pds: ptr.To[int32](pds), status: rolledOut(),
			old:  exceededCond("r2", -time.Minute, -time.Minute),
			want: progressingCond(v1alpha1.CloneSetAvailable, 0, 0)},
		{name: "exceeded, then paused", pds: ptr.To[int32](pds), paused: true, status: rollingOut(),
			old:  exceededCond("r2", -time.Minute, -time.Minute),
			want: progressingCond(v1alpha1.CloneSetProgressPaused, 0, 0)},
		{name: "exceeded, then partition available", pds: ptr.To[int32](pds), status: partitionDone(),
			old:  exceededCond("r2", -time.Minute, -time.Minute),
			want: progressingCond(v1alpha1.CloneSetProgressPartitionAvailable, 0, 0)},

		// Leaving Available, Paused or PartitionAvailable: OpenKruise compares now with that
		// condition's lastUpdateTime (when it took that reason) before it considers CloneSetUpdated.
		// Within the deadline the reason becomes CloneSetUpdated, stamped now (the deadline starts
		// again), keeping lastTransitionTime (True to True).
		{name: "unpaused within the deadline: the deadline starts again", pds: ptr.To[int32](pds), status: rollingOut(),
			old:     progressingCond(v1alpha1.CloneSetProgressPaused, -100*time.Second, -2*time.Hour),
			want:    progressingCond(v1alpha1.CloneSetProgressUpdated, 0, -2*time.Hour),
			requeue: deadline + time.Second},
		{name: "partition lowered within the deadline: the deadline starts again", pds: ptr.To[int32](pds), status: rollingOut(),
			old:     progressingCond(v1alpha1.CloneSetProgressPartitionAvailable, -100*time.Second, -2*time.Hour),
			want:    progressingCond(v1alpha1.CloneSetProgressUpdated, 0, -2*time.Hour),
			requeue: deadline + time.Second},
		{name: "new revision within the deadline of becoming available", pds: ptr.To[int32](pds), status: rollingOut(),
			old:     progressingCond(v1alpha1.CloneSetAvailable, -100*time.Second, -2*time.Hour),
			want:    progressingCond(v1alpha1.CloneSetProgressUpdated, 0, -2*time.Hour),
			requeue: deadline + time.Second},
		// Past it, the deadline is exceeded at once.
		{name: "unpaused after a pause longer than the deadline: exceeded at once", pds: ptr.To[int32](pds), status: rollingOut(),
			old:  progressingCond(v1alpha1.CloneSetProgressPaused, -time.Hour, -2*time.Hour),
			want: exceededCond("r2", 0, 0)},
		{name: "partition lowered after the deadline: exceeded at once", pds: ptr.To[int32](pds), status: rollingOut(),
			old:  progressingCond(v1alpha1.CloneSetProgressPartitionAvailable, -time.Hour, -2*time.Hour),
			want: exceededCond("r2", 0, 0)},
		{name: "new revision, available for longer than the deadline: exceeded at once", pds: ptr.To[int32](pds), status: rollingOut(),
			old:  progressingCond(v1alpha1.CloneSetAvailable, -time.Hour, -2*time.Hour),
			want: exceededCond("r2", 0, 0)},
		{name: "paused to partition available: lastTransitionTime kept", pds: ptr.To[int32](pds), status: partitionDone(),
			old:  progressingCond(v1alpha1.CloneSetProgressPaused, -time.Hour, -2*time.Hour),
			want: progressingCond(v1alpha1.CloneSetProgressPartitionAvailable, 0, -2*time.Hour)},
		{name: "progressing, then available", pds: ptr.To[int32](pds), status: rolledOut(),
			old:  progressingCond(v1alpha1.CloneSetProgressUpdated, -time.Minute, -2*time.Hour),
			want: progressingCond(v1alpha1.CloneSetAvailable, 0, -2*time.Hour)},
		{name: "available stays available", pds: ptr.To[int32](pds), status: rolledOut(),
			old:  progressingCond(v1alpha1.CloneSetAvailable, -time.Hour, -2*time.Hour),
			want: progressingCond(v1alpha1.CloneSetAvailable, -time.Hour, -2*time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := progCloneSet(tc.pds)
			cs.Spec.UpdateStrategy.Paused = tc.paused
			st := withCondition(tc.status, tc.old)
			requeue := setProgressingCondition(cs, st, progNow)
			checkProgressing(t, st, tc.want)
			if requeue != tc.requeue {
				t.Errorf("requeue after %v, want %v", requeue, tc.requeue)
			}
		})
	}
}

// What makes the CloneSet available, and what does not.
func TestCloneSetAvailable(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(st *v1alpha1.CloneSetStatus)
		want   bool
	}{
		{"all updated and available", func(*v1alpha1.CloneSetStatus) {}, true},
		{"current revision behind", func(st *v1alpha1.CloneSetStatus) { st.CurrentRevision = "r1" }, false},
		{"one replica too many", func(st *v1alpha1.CloneSetStatus) { st.Replicas = 5 }, false},
		{"one not updated", func(st *v1alpha1.CloneSetStatus) { st.UpdatedReplicas = 3 }, false},
		{"one not available", func(st *v1alpha1.CloneSetStatus) { st.UpdatedAvailableReplicas = 3 }, false},
	}
	for _, tc := range cases {
		st := rolledOut()
		tc.mutate(st)
		if got := cloneSetAvailable(progCloneSet(nil), st); got != tc.want {
			t.Errorf("%s: available = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Partition-available needs a partition that holds Pods back; replicas unset count as 1.
func TestPartitionAvailable(t *testing.T) {
	cases := []struct {
		name                       string
		replicas                   *int32
		expected, updatedAvailable int32
		want                       bool
	}{
		{"partition reached", ptr.To[int32](4), 1, 1, true},
		{"more than the partition lets update", ptr.To[int32](4), 1, 2, true},
		{"partition not reached", ptr.To[int32](4), 2, 1, false},
		{"no partition", ptr.To[int32](4), 4, 4, false},
		{"replicas unset, no partition", nil, 1, 1, false},
		{"replicas unset, partition 1", nil, 0, 0, true},
	}
	for _, tc := range cases {
		cs := progCloneSet(nil)
		cs.Spec.Replicas = tc.replicas
		st := &v1alpha1.CloneSetStatus{ExpectedUpdatedReplicas: tc.expected, UpdatedAvailableReplicas: tc.updatedAvailable}
		if got := partitionAvailable(cs, st); got != tc.want {
			t.Errorf("%s: partition available = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Other conditions are left alone; a replaced Progressing condition moves last, as in OpenKruise.
func TestSetProgressingKeepsOtherConditions(t *testing.T) {
	failed := v1alpha1.CloneSetCondition{Type: v1alpha1.CloneSetConditionFailedScale, Status: corev1.ConditionTrue,
		Reason: "ScaleFailed", Message: "quota", LastTransitionTime: progAt(-time.Hour)}
	st := rollingOut()
	st.Conditions = []v1alpha1.CloneSetCondition{*progressingCond(v1alpha1.CloneSetAvailable, -30*time.Second, -time.Hour), failed}
	setProgressingCondition(progCloneSet(ptr.To[int32](60)), st, progNow)
	want := []v1alpha1.CloneSetCondition{failed, *progressingCond(v1alpha1.CloneSetProgressUpdated, 0, -time.Hour)}
	if !apiequality.Semantic.DeepEqual(st.Conditions, want) {
		t.Errorf("conditions\n got %+v\nwant %+v", st.Conditions, want)
	}

	setProgressingCondition(progCloneSet(nil), st, progNow)
	if !apiequality.Semantic.DeepEqual(st.Conditions, []v1alpha1.CloneSetCondition{failed}) {
		t.Errorf("conditions after unsetting the deadline: %+v, want only FailedScale", st.Conditions)
	}
}

// The status calculateStatus starts from shares nothing with the cached CloneSet, but a status
// that did would still not see the cache written: conditions are replaced, never edited in place.
func TestSetProgressingDoesNotWriteSharedConditions(t *testing.T) {
	cached := []v1alpha1.CloneSetCondition{*progressingCond(v1alpha1.CloneSetAvailable, -time.Hour, -time.Hour)}
	st := rollingOut()
	st.Conditions = cached
	setProgressingCondition(progCloneSet(ptr.To[int32](60)), st, progNow)
	if cached[0].Reason != string(v1alpha1.CloneSetAvailable) {
		t.Errorf("the shared condition became %+v", cached[0])
	}
}

// A rollout through time: the deadline counts from the moment the reason became CloneSetUpdated,
// progress does not push it back, a short pause starts it again, and once exceeded it stays so,
// across a new revision, until the CloneSet is available.
func TestProgressDeadlineTimeline(t *testing.T) {
	cs := progCloneSet(ptr.To[int32](60))
	st := rollingOut()
	step := func(at time.Duration, want *v1alpha1.CloneSetCondition, wantRequeue time.Duration) {
		t.Helper()
		next := st.DeepCopy() // each sync starts from the status last written
		requeue := setProgressingCondition(cs, next, progNow.Add(at))
		checkProgressing(t, next, want)
		if requeue != wantRequeue {
			t.Errorf("at %v: requeue after %v, want %v", at, requeue, wantRequeue)
		}
		st = next
	}
	updated := func(since, transitioned time.Duration) *v1alpha1.CloneSetCondition {
		return progressingCond(v1alpha1.CloneSetProgressUpdated, since, transitioned)
	}
	sec := time.Second

	step(0, updated(0, 0), 61*sec)
	st.UpdatedAvailableReplicas = 2 // progress
	step(40*sec, updated(0, 0), 21*sec)

	cs.Spec.UpdateStrategy.Paused = true
	step(50*sec, progressingCond(v1alpha1.CloneSetProgressPaused, 50*sec, 0), 0)
	step(80*sec, progressingCond(v1alpha1.CloneSetProgressPaused, 50*sec, 0), 0)

	cs.Spec.UpdateStrategy.Paused = false // 40s paused: a fresh minute from here
	step(90*sec, updated(90*sec, 0), 61*sec)
	step(149*sec, updated(90*sec, 0), 2*sec)
	step(150*sec, updated(90*sec, 0), 0) // at the deadline, not past it
	step(151*sec, exceededCond("r2", 151*sec, 151*sec), 0)

	st.UpdateRevision = "r3" // a new revision does not restart the clock
	step(time.Hour, exceededCond("r2", 151*sec, 151*sec), 0)

	st = withCondition(rolledOut(), findCloneSetCondition(st, v1alpha1.CloneSetConditionTypeProgressing))
	step(2*time.Hour, progressingCond(v1alpha1.CloneSetAvailable, 2*time.Hour, 2*time.Hour), 0)
}

// A pause longer than the deadline: on unpausing, the Paused condition's lastUpdateTime is more
// than progressDeadlineSeconds old, and OpenKruise reports the deadline exceeded at once.
func TestProgressDeadlineAfterLongPause(t *testing.T) {
	cs := progCloneSet(ptr.To[int32](60))
	cs.Spec.UpdateStrategy.Paused = true
	st := rollingOut()
	setProgressingCondition(cs, st, progNow)
	checkProgressing(t, st, progressingCond(v1alpha1.CloneSetProgressPaused, 0, 0))

	cs.Spec.UpdateStrategy.Paused = false
	if requeue := setProgressingCondition(cs, st, progNow.Add(61*time.Second)); requeue != 0 {
		t.Errorf("requeue after %v, want none", requeue)
	}
	checkProgressing(t, st, exceededCond("r2", 61*time.Second, 61*time.Second))
}

// Through sync: the condition is written with the status, and the deadline is a reason to look
// again, the sooner of it and a Pod becoming available.
func TestSyncProgressDeadline(t *testing.T) {
	cs := newCloneSet(2)
	cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
	cs.Spec.MinReadySeconds = 30
	rev := updateRevisionName(t, cs)
	pods := []runtime.Object{
		ownedPod(cs, "web-a", rev, running()),
		ownedPod(cs, "web-b", rev, ready(testNow.Add(-25*time.Second))), // available in 5s
	}
	f := newFixture(t, cs, pods...)
	if requeue := f.sync(t); requeue != 5*time.Second {
		t.Errorf("requeue after %v, want 5s (web-b becomes available first)", requeue)
	}
	st := lastStatus(t, f)
	want := progressingCond(v1alpha1.CloneSetProgressUpdated, 0, 0)
	want.LastUpdateTime, want.LastTransitionTime = metav1.NewTime(testNow), metav1.NewTime(testNow)
	checkProgressing(t, &st, want)

	// Both Pods available long ago: the deadline is the only wait.
	cs.Spec.MinReadySeconds = 0
	f = newFixture(t, cs, ownedPod(cs, "web-a", rev, running()), ownedPod(cs, "web-b", rev, ready(testNow.Add(-time.Hour))))
	if requeue := f.sync(t); requeue != 11*time.Second {
		t.Errorf("requeue after %v, want 11s (the deadline, and a second)", requeue)
	}

	// Eleven seconds later, with the status as written: the deadline has passed.
	cs.Status = lastStatus(t, f)
	f = newFixture(t, cs, ownedPod(cs, "web-a", rev, running()), ownedPod(cs, "web-b", rev, ready(testNow.Add(-time.Hour))))
	f.c.Clock = clocktesting.NewFakePassiveClock(testNow.Add(11 * time.Second))
	if requeue := f.sync(t); requeue != 0 {
		t.Errorf("requeue after %v, want none", requeue)
	}
	st = lastStatus(t, f)
	want = exceededCond(rev, 0, 0)
	want.LastUpdateTime = metav1.NewTime(testNow.Add(11 * time.Second))
	want.LastTransitionTime = want.LastUpdateTime
	checkProgressing(t, &st, want)
}
