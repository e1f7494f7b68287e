package imagepull

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Status messages, OpenKruise's words.
const (
	messageCompleted        = "job has completed"
	messageNoProgress       = "job is running, no progress"
	messageDeadlineExceeded = "job exceeds activeDeadlineSeconds"
)

// JobProgress is an ImagePullJob's status as its target nodes report it, and the nodes whose
// NodeImage does not yet carry the job's tag (input to NodesToStart).
type JobProgress struct {
	Status    v1alpha1.ImagePullJobStatus
	NotSynced []string
}

// nodeState is where one target node is with the job's tag.
type nodeState int

const (
	notSynced nodeState = iota // the NodeImage does not ask for the tag on the job's behalf yet
	pulling                    // asked for; no final outcome for the current version yet
	succeeded
	failed
)

// JobStatus computes an ImagePullJob's status from the NodeImages of its target nodes (one per
// node TargetNodes returned, for the nodes that have one), with secrets the pull secrets
// MergeJob is given. now is the time.
//
// desired is the number of target nodes; a node counts as succeeded or failed when its daemon
// reports that phase for the tag's current version, as active while the tag is in its spec
// without such an outcome, and as not synced while its spec lacks the tag (or a secret).
// With completionPolicy Always the job completes once every node succeeded or failed, or at
// activeDeadlineSeconds after startTime, when the nodes not done count as failed. With Never it
// never completes. A job already completed keeps its status: completion is final.
func JobStatus(job *v1alpha1.ImagePullJob, nodeImages []*v1alpha1.NodeImage, secrets []v1alpha1.ReferenceObject, now metav1.Time) (JobProgress, error) {
	if job.Status.CompletionTime != nil {
		return JobProgress{Status: *job.Status.DeepCopy()}, nil
	}
	name, tag, err := SplitImage(job.Spec.Image)
	if err != nil {
		return JobProgress{}, err
	}
	status := v1alpha1.ImagePullJobStatus{StartTime: job.Status.StartTime, Desired: int32(len(nodeImages))}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	byState := map[nodeState][]string{}
	unsynced := sets.New[string]()
	for _, ni := range nodeImages {
		state, secretsSynced := nodeStateOf(ni, job, name, tag, secrets)
		byState[state] = append(byState[state], ni.Name)
		if state == notSynced || !secretsSynced {
			unsynced.Insert(ni.Name)
		}
	}
	status.Succeeded = int32(len(byState[succeeded]))
	if deadlineExceeded(job, status.StartTime, now) && status.Succeeded+int32(len(byState[failed])) < status.Desired {
		// Everything not done fails: the job is over, whatever the nodes do next.
		failedNodes := sets.New(byState[failed]...).Insert(byState[pulling]...).Insert(unsynced.UnsortedList()...)
		failedNodes.Delete(byState[succeeded]...)
		status.Failed = int32(failedNodes.Len())
		status.FailedNodes = sets.List(failedNodes)
		status.CompletionTime = &now
		status.Message = messageDeadlineExceeded
		return JobProgress{Status: status}, nil
	}
	status.Active = int32(len(byState[pulling]))
	status.Failed = int32(len(byState[failed]))
	status.FailedNodes = slices.Sorted(slices.Values(byState[failed]))
	if job.Spec.CompletionPolicy.Type != v1alpha1.Never && status.Succeeded+status.Failed == status.Desired {
		status.CompletionTime = &now
	}
	status.Message = statusMessage(&status)
	return JobProgress{Status: status, NotSynced: sets.List(unsynced)}, nil
}

// nodeStateOf is where ni is with the job's image name:tag, and whether its image spec has all
// of secrets.
func nodeStateOf(ni *v1alpha1.NodeImage, job *v1alpha1.ImagePullJob, name, tag string, secrets []v1alpha1.ReferenceObject) (nodeState, bool) {
	image, ok := ni.Spec.Images[name]
	if !ok {
		return notSynced, false
	}
	secretsSynced := !slices.ContainsFunc(secrets, func(s v1alpha1.ReferenceObject) bool { return !slices.Contains(image.PullSecrets, s) })
	i := slices.IndexFunc(image.Tags, func(t v1alpha1.ImageTagSpec) bool { return t.Tag == tag })
	if i < 0 || !ownedBy(&image.Tags[i], job.UID) {
		return notSynced, secretsSynced
	}
	// A status of an older version is the outcome of an earlier round, not of this job's pull.
	ts := tagStatus(&ni.Status, name, tag)
	if ts == nil || ts.Version != image.Tags[i].Version {
		return pulling, secretsSynced
	}
	switch ts.Phase {
	case v1alpha1.ImagePhaseSucceeded:
		return succeeded, secretsSynced
	case v1alpha1.ImagePhaseFailed:
		return failed, secretsSynced
	default:
		return pulling, secretsSynced
	}
}

// deadlineExceeded says whether an Always job ran for its activeDeadlineSeconds.
func deadlineExceeded(job *v1alpha1.ImagePullJob, start *metav1.Time, now metav1.Time) bool {
	left, ok := DeadlineLeft(job, start, now)
	return ok && left <= 0
}

// DeadlineLeft is how long an Always job that started at start has before its
// activeDeadlineSeconds; false when it has no deadline (none set, or completionPolicy Never).
// The controller requeues after it so the deadline is acted on with no event to wake it.
func DeadlineLeft(job *v1alpha1.ImagePullJob, start *metav1.Time, now metav1.Time) (time.Duration, bool) {
	cp := &job.Spec.CompletionPolicy
	if cp.Type == v1alpha1.Never || cp.ActiveDeadlineSeconds == nil || start == nil {
		return 0, false
	}
	return time.Duration(*cp.ActiveDeadlineSeconds)*time.Second - now.Sub(start.Time), true
}

// TTLLeft is how long a completed job has before ttlSecondsAfterFinished asks the controller to
// delete it; false when it is not completed or has no TTL. (For an ImageListPullJob the controller
// reads the same two fields of its own spec and status.)
func TTLLeft(cp *v1alpha1.CompletionPolicy, completion *metav1.Time, now metav1.Time) (time.Duration, bool) {
	if completion == nil || cp.TTLSecondsAfterFinished == nil {
		return 0, false
	}
	return time.Duration(*cp.TTLSecondsAfterFinished)*time.Second - now.Sub(completion.Time), true
}

func statusMessage(s *v1alpha1.ImagePullJobStatus) string {
	switch {
	case s.CompletionTime != nil:
		return messageCompleted
	case s.Desired == 0:
		return messageNoProgress
	default:
		return fmt.Sprintf("job is running, progress %.1f%%", 100*float64(s.Succeeded+s.Failed)/float64(s.Desired))
	}
}
