package imagepull

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func TestJobStatus(t *testing.T) {
	me, other := jobRef("j", "u1"), jobRef("other", "u2")
	secret := v1alpha1.ReferenceObject{Namespace: "ns", Name: "reg"}
	// ni builds node name's NodeImage: the job's tag at version 1 (owned by owner) and its status.
	ni := func(name string, owner *v1alpha1.ImageTagSpec, st *v1alpha1.ImageTagStatus) *v1alpha1.NodeImage {
		n := &v1alpha1.NodeImage{}
		n.Name = name
		if owner != nil {
			n.Spec = specOf("nginx", *owner)
			img := n.Spec.Images["nginx"]
			img.PullSecrets = []v1alpha1.ReferenceObject{secret}
			n.Spec.Images["nginx"] = img
		}
		if st != nil {
			n.Status = *statusOf("nginx", *st)
		}
		return n
	}
	owned := ptr.To(tagSpec("1", 1, me))
	done := ptr.To(tagStat("1", 1, v1alpha1.ImagePhaseSucceeded, atp(5)))
	failedSt := ptr.To(tagStat("1", 1, v1alpha1.ImagePhaseFailed, atp(5)))
	mixed := []*v1alpha1.NodeImage{
		ni("a-ok", owned, done),
		ni("b-fail", owned, failedSt),
		ni("c-pulling", owned, ptr.To(tagStat("1", 1, v1alpha1.ImagePhasePulling, nil))),
		ni("d-no-status", owned, nil),
		ni("e-old-version", owned, ptr.To(tagStat("1", 0, v1alpha1.ImagePhaseSucceeded, atp(1)))),
		ni("f-other-owner", ptr.To(tagSpec("1", 1, other)), done),
		ni("g-empty", nil, nil),
	}
	noSecret := ni("h-no-secret", owned, done)
	noSecret.Spec.Images["nginx"] = v1alpha1.ImageSpec{Tags: []v1alpha1.ImageTagSpec{*owned}}
	allDone := []*v1alpha1.NodeImage{ni("a", owned, done), ni("b", owned, failedSt)}

	for _, tc := range []struct {
		name          string
		policy        v1alpha1.CompletionPolicy
		status        v1alpha1.ImagePullJobStatus
		nodes         []*v1alpha1.NodeImage
		now           int
		want          v1alpha1.ImagePullJobStatus
		wantNotSynced []string
	}{
		{name: "running: counted per node state",
			nodes: mixed, now: 10,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(10), Desired: 7, Active: 3, Succeeded: 1, Failed: 1,
				FailedNodes: []string{"b-fail"}, Message: "job is running, progress 28.6%"},
			wantNotSynced: []string{"f-other-owner", "g-empty"}},
		{name: "start time kept",
			status: v1alpha1.ImagePullJobStatus{StartTime: atp(1)}, nodes: mixed[:2], now: 10,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(1), Desired: 2, Succeeded: 1, Failed: 1,
				FailedNodes: []string{"b-fail"}, CompletionTime: atp(10), Message: "job has completed"}},
		{name: "a node missing a secret is both counted and not synced",
			nodes: []*v1alpha1.NodeImage{noSecret}, now: 10,
			want:          v1alpha1.ImagePullJobStatus{StartTime: atp(10), Desired: 1, Succeeded: 1, CompletionTime: atp(10), Message: "job has completed"},
			wantNotSynced: []string{"h-no-secret"}},
		{name: "always: every node done completes",
			nodes: allDone, now: 10,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(10), Desired: 2, Succeeded: 1, Failed: 1, FailedNodes: []string{"b"},
				CompletionTime: atp(10), Message: "job has completed"}},
		{name: "never: every node done does not complete",
			policy: v1alpha1.CompletionPolicy{Type: v1alpha1.Never, ActiveDeadlineSeconds: ptr.To[int64](1)},
			status: v1alpha1.ImagePullJobStatus{StartTime: atp(0)}, nodes: allDone, now: 10,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(0), Desired: 2, Succeeded: 1, Failed: 1, FailedNodes: []string{"b"},
				Message: "job is running, progress 100.0%"}},
		{name: "always, no target node: completes at once (as OpenKruise)",
			now: 10, want: v1alpha1.ImagePullJobStatus{StartTime: atp(10), CompletionTime: atp(10), Message: "job has completed"}},
		{name: "never, no target node",
			policy: v1alpha1.CompletionPolicy{Type: v1alpha1.Never},
			now:    10, want: v1alpha1.ImagePullJobStatus{StartTime: atp(10), Message: "job is running, no progress"}},
		{name: "deadline passed: everything not done fails",
			policy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](60)},
			status: v1alpha1.ImagePullJobStatus{StartTime: atp(0)}, nodes: mixed, now: 60,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(0), Desired: 7, Succeeded: 1, Failed: 6,
				FailedNodes:    []string{"b-fail", "c-pulling", "d-no-status", "e-old-version", "f-other-owner", "g-empty"},
				CompletionTime: atp(60), Message: "job exceeds activeDeadlineSeconds"}},
		{name: "deadline not yet passed",
			policy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always, ActiveDeadlineSeconds: ptr.To[int64](60)},
			status: v1alpha1.ImagePullJobStatus{StartTime: atp(0)}, nodes: mixed[:3], now: 59,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(0), Desired: 3, Active: 1, Succeeded: 1, Failed: 1,
				FailedNodes: []string{"b-fail"}, Message: "job is running, progress 66.7%"}},
		{name: "completed is final",
			status: v1alpha1.ImagePullJobStatus{StartTime: atp(0), CompletionTime: atp(3), Desired: 1, Succeeded: 1, Message: "job has completed"},
			nodes:  mixed, now: 100,
			want: v1alpha1.ImagePullJobStatus{StartTime: atp(0), CompletionTime: atp(3), Desired: 1, Succeeded: 1, Message: "job has completed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("j", "u1", "nginx:1")
			if tc.policy.Type != "" {
				job.Spec.CompletionPolicy = tc.policy
			}
			job.Status = tc.status
			got, err := JobStatus(job, tc.nodes, []v1alpha1.ReferenceObject{secret}, at(tc.now))
			if err != nil {
				t.Fatal(err)
			}
			checkEqual(t, "status", tc.want, got.Status)
			checkEqual(t, "not synced", tc.wantNotSynced, got.NotSynced)
		})
	}
	if _, err := JobStatus(newJob("j", "u1", "Bad:Image:Ref"), mixed, nil, at(0)); err == nil {
		t.Error("JobStatus accepted an invalid image")
	}
}

func TestDeadlineAndTTLLeft(t *testing.T) {
	job := newJob("j", "u", "nginx")
	if _, ok := DeadlineLeft(job, atp(0), at(10)); ok {
		t.Error("DeadlineLeft without activeDeadlineSeconds reported a deadline")
	}
	job.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](60)
	if left, ok := DeadlineLeft(job, atp(0), at(10)); !ok || left != 50*time.Second {
		t.Errorf("DeadlineLeft = %v, %v; want 50s, true", left, ok)
	}
	job.Spec.CompletionPolicy.Type = v1alpha1.Never
	if _, ok := DeadlineLeft(job, atp(0), at(10)); ok {
		t.Error("DeadlineLeft reported a deadline for a Never job")
	}

	cp := &v1alpha1.CompletionPolicy{TTLSecondsAfterFinished: ptr.To[int32](30)}
	if _, ok := TTLLeft(cp, nil, at(10)); ok {
		t.Error("TTLLeft counted down for a job not completed")
	}
	if left, ok := TTLLeft(cp, atp(5), at(40)); !ok || left != -5*time.Second {
		t.Errorf("TTLLeft = %v, %v; want -5s, true", left, ok)
	}
	if _, ok := TTLLeft(&v1alpha1.CompletionPolicy{}, atp(5), at(40)); ok {
		t.Error("TTLLeft counted down without a TTL")
	}
}
