package imagepull

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Pull-policy values OpenKruise writes into a NodeImage tag for a job that has none of its own.
const (
	// neverTTLSeconds keeps a CompletionPolicy Never job's tag a day after its pull finished (then
	// the NodeImage GC drops it and the job, still running, writes it again: a daily re-pull).
	neverTTLSeconds = int32(24 * 3600)
	// neverJitterSeconds spreads those re-pulls over ±10 minutes so nodes do not all pull at once.
	neverJitterSeconds = int32(600)
	// neverActiveDeadlineSeconds bounds one pull of a Never job, unless its timeout is longer.
	neverActiveDeadlineSeconds = int64(1800)
	// alwaysJitterSeconds spreads the GC of an Always job's tags over 5 minutes.
	alwaysJitterSeconds = int32(300)
)

// imagePullJobKind is the kind of the owner references MergeJob writes and GC judges.
var imagePullJobKind = v1alpha1.SchemeGroupVersion.WithKind("ImagePullJob")

// Jitter returns a random number in [0, n); the controller passes rand.Int31n. It is a parameter
// so that the package stays deterministic under test. A nil Jitter means no jitter.
type Jitter func(n int32) int32

// TagOwners are the owner references of every tag of a NodeImage, in order (the controllers
// index NodeImages by them).
func TagOwners(ni *v1alpha1.NodeImage) []corev1.ObjectReference {
	var refs []corev1.ObjectReference
	for _, image := range ni.Spec.Images {
		for _, t := range image.Tags {
			refs = append(refs, t.OwnerReferences...)
		}
	}
	return refs
}

// TagOwnerIndex is an index function of NodeImages (a cache.IndexFunc): the keys of the owners
// of their tags, key(owner) for each owner key takes (true); no keys for an object that is not a
// NodeImage.
func TagOwnerIndex(key func(owner corev1.ObjectReference) (string, bool)) func(obj any) ([]string, error) {
	return func(obj any) ([]string, error) {
		ni, ok := obj.(*v1alpha1.NodeImage)
		if !ok {
			return nil, nil
		}
		var keys []string
		for _, r := range TagOwners(ni) {
			if k, ok := key(r); ok {
				keys = append(keys, k)
			}
		}
		return keys, nil
	}
}

// OwnerRef is the reference to job that a NodeImage tag carries (OpenKruise's getOwnerRef).
func OwnerRef(job *v1alpha1.ImagePullJob) corev1.ObjectReference {
	return corev1.ObjectReference{
		APIVersion: imagePullJobKind.GroupVersion().String(),
		Kind:       imagePullJobKind.Kind,
		Namespace:  job.Namespace,
		Name:       job.Name,
		UID:        job.UID,
	}
}

// PullSecretRefs are job's pull secrets as a NodeImage names them: in the job's namespace.
func PullSecretRefs(job *v1alpha1.ImagePullJob) []v1alpha1.ReferenceObject {
	var refs []v1alpha1.ReferenceObject
	for _, name := range job.Spec.PullSecrets {
		refs = append(refs, v1alpha1.ReferenceObject{Namespace: job.Namespace, Name: name})
	}
	return refs
}

// TagPullPolicy is the pull policy OpenKruise copies from job into a new NodeImage tag: timeout
// and retries from spec.pullPolicy, and a TTL and deadline derived from spec.completionPolicy.
//
// Always: the deadline is the job's; the TTL is the job's ttlSecondsAfterFinished, else its
// activeDeadlineSeconds, else timeout×attempts (1 + backoffLimit: how long the pulls could take),
// plus up to 5 minutes of jitter — the tag outlives the job's own view of the pull, no more.
// OpenKruise multiplies the timeout by backoffLimit alone, which leaves a job without retries
// (backoffLimit 0) a TTL of the jitter only: its tags could leave the NodeImage a second after
// the pull, before anyone read the result there.
// Never: a day's TTL ±10 minutes and a 30-minute deadline (or the timeout, if longer).
func TagPullPolicy(job *v1alpha1.ImagePullJob, jitter Jitter) *v1alpha1.ImageTagPullPolicy {
	if jitter == nil {
		jitter = func(int32) int32 { return 0 }
	}
	timeout, backoff := pullTimeoutAndBackoff(job)
	policy := &v1alpha1.ImageTagPullPolicy{}
	if pp := job.Spec.PullPolicy; pp != nil {
		policy.TimeoutSeconds, policy.BackoffLimit = pp.TimeoutSeconds, pp.BackoffLimit
	}
	cp := &job.Spec.CompletionPolicy
	if cp.Type == v1alpha1.Never {
		policy.TTLSecondsAfterFinished = ptr.To(neverTTLSeconds + jitter(2*neverJitterSeconds) - neverJitterSeconds)
		policy.ActiveDeadlineSeconds = ptr.To(max(neverActiveDeadlineSeconds, int64(timeout)))
		return policy
	}
	var ttl int32
	switch {
	case cp.TTLSecondsAfterFinished != nil:
		ttl = *cp.TTLSecondsAfterFinished
	case cp.ActiveDeadlineSeconds != nil:
		ttl = int32(*cp.ActiveDeadlineSeconds)
	default:
		ttl = timeout * (1 + backoff)
	}
	policy.TTLSecondsAfterFinished = ptr.To(ttl + jitter(alwaysJitterSeconds))
	policy.ActiveDeadlineSeconds = cp.ActiveDeadlineSeconds
	return policy
}

// pullTimeoutAndBackoff are the job's timeout and retries, with the API defaults where unset
// (defaulting fills them in on write; this covers objects built in memory).
func pullTimeoutAndBackoff(job *v1alpha1.ImagePullJob) (timeout, backoff int32) {
	timeout, backoff = v1alpha1.DefaultImagePullTimeoutSeconds, v1alpha1.DefaultImagePullBackoffLimit
	if pp := job.Spec.PullPolicy; pp != nil {
		timeout = ptr.Deref(pp.TimeoutSeconds, timeout)
		backoff = ptr.Deref(pp.BackoffLimit, backoff)
	}
	return timeout, backoff
}

// MergeJob returns the NodeImage spec with job's image tag wanted on that node, and whether that
// changed anything. status is the NodeImage's status, secrets the pull secrets the daemon should
// use (PullSecretRefs(job) unless the controller copies secrets elsewhere), now the time.
//
//   - A tag the job already owns is left as it is (only missing secrets are added): re-merging
//     must not restart a pull.
//   - A tag another job owns gets the job as an extra owner, its version bumped and createdAt
//     reset: the version bump is what tells the daemon to pull again for the new owner. Its pull
//     policy stays the first owner's, as in OpenKruise.
//   - A new tag starts one version above any status the daemon still reports for that tag, so a
//     stale status (of a tag GC dropped earlier) is never taken for the new pull.
//
// The image's sandboxConfig becomes the job's; tags stay sorted by tag.
func MergeJob(spec v1alpha1.NodeImageSpec, status *v1alpha1.NodeImageStatus, job *v1alpha1.ImagePullJob,
	secrets []v1alpha1.ReferenceObject, now metav1.Time, jitter Jitter) (v1alpha1.NodeImageSpec, bool, error) {
	name, tag, err := SplitImage(job.Spec.Image)
	if err != nil {
		return spec, false, err
	}
	out := *spec.DeepCopy()
	if out.Images == nil {
		out.Images = map[string]v1alpha1.ImageSpec{}
	}
	image := out.Images[name]
	image.SandboxConfig = job.Spec.SandboxConfig.DeepCopy()
	for _, s := range secrets {
		if !slices.Contains(image.PullSecrets, s) {
			image.PullSecrets = append(image.PullSecrets, s)
		}
	}
	owner := OwnerRef(job)
	if i := slices.IndexFunc(image.Tags, func(t v1alpha1.ImageTagSpec) bool { return t.Tag == tag }); i < 0 {
		image.Tags = append(image.Tags, v1alpha1.ImageTagSpec{
			Tag:             tag,
			Version:         statusVersion(status, name, tag) + 1,
			PullPolicy:      TagPullPolicy(job, jitter),
			OwnerReferences: []corev1.ObjectReference{owner},
			CreatedAt:       &now,
			ImagePullPolicy: job.Spec.ImagePullPolicy,
		})
	} else if t := &image.Tags[i]; !ownedBy(t, job.UID) {
		t.OwnerReferences = append(t.OwnerReferences, owner)
		t.Version++
		t.CreatedAt = &now
		t.ImagePullPolicy = job.Spec.ImagePullPolicy
	}
	sortTags(image.Tags)
	out.Images[name] = image
	return out, !apiequality.Semantic.DeepEqual(spec, out), nil
}

// statusVersion is the version the daemon last reported for name:tag, -1 when none.
func statusVersion(status *v1alpha1.NodeImageStatus, name, tag string) int64 {
	if t := tagStatus(status, name, tag); t != nil {
		return t.Version
	}
	return -1
}

func tagStatus(status *v1alpha1.NodeImageStatus, name, tag string) *v1alpha1.ImageTagStatus {
	if status == nil {
		return nil
	}
	tags := status.ImageStatuses[name].Tags
	if i := slices.IndexFunc(tags, func(t v1alpha1.ImageTagStatus) bool { return t.Tag == tag }); i >= 0 {
		return &tags[i]
	}
	return nil
}

func ownedBy(t *v1alpha1.ImageTagSpec, uid types.UID) bool {
	return slices.ContainsFunc(t.OwnerReferences, func(r corev1.ObjectReference) bool { return r.UID == uid })
}

func sortTags(tags []v1alpha1.ImageTagSpec) {
	slices.SortStableFunc(tags, func(a, b v1alpha1.ImageTagSpec) int { return strings.Compare(a.Tag, b.Tag) })
}

// RemoveJob returns the NodeImage spec without the job of that UID among any tag's owners, and
// whether that changed anything. A tag left without owners is dropped (nobody wants it any more),
// and so is an image left without tags. The controller calls it when a job is deleted, so the
// node stops pulling without waiting for GC.
func RemoveJob(spec v1alpha1.NodeImageSpec, uid types.UID) (v1alpha1.NodeImageSpec, bool) {
	return filterOwners(spec, func(r corev1.ObjectReference) bool { return r.UID != uid })
}

// filterOwners keeps the owner references keep accepts; a tag that had owners and has none left is
// dropped, a tag that never had any is kept (a user may write a NodeImage tag by hand: TTL is what
// ends it).
func filterOwners(spec v1alpha1.NodeImageSpec, keep func(corev1.ObjectReference) bool) (v1alpha1.NodeImageSpec, bool) {
	return filterTags(spec, func(_ string, t *v1alpha1.ImageTagSpec) bool {
		if len(t.OwnerReferences) == 0 {
			return true
		}
		t.OwnerReferences = slices.DeleteFunc(t.OwnerReferences, func(r corev1.ObjectReference) bool { return !keep(r) })
		return len(t.OwnerReferences) > 0
	})
}

// TagSecrets are the pull secrets of image that a pull of its tag t may use: those in the
// namespaces of the tag's owners. A NodeImage names pull secrets per image, for all its tags; a
// job may use the Secrets of its own namespace only, as a Pod its imagePullSecrets, so that a job
// does not pull with another namespace's credentials because a job there pulls another tag of the
// same image onto that node. (Jobs of two namespaces that own one tag share it, and its pull uses
// both namespaces' Secrets.) A tag without owners (written by hand) or with a cluster-scoped owner
// may use them all.
func TagSecrets(image *v1alpha1.ImageSpec, t *v1alpha1.ImageTagSpec) []v1alpha1.ReferenceObject {
	var refs []v1alpha1.ReferenceObject
	for _, s := range image.PullSecrets {
		if mayUseSecret(t, s) {
			refs = append(refs, s)
		}
	}
	return refs
}

func mayUseSecret(t *v1alpha1.ImageTagSpec, s v1alpha1.ReferenceObject) bool {
	if len(t.OwnerReferences) == 0 {
		return true
	}
	return slices.ContainsFunc(t.OwnerReferences, func(o corev1.ObjectReference) bool {
		return o.Namespace == "" || o.Namespace == s.Namespace
	})
}

// filterTags keeps the tags keep accepts (keep may edit them), drops images left without tags
// and the pull secrets no tag left may use (TagSecrets: a job's Secrets leave with its tags), and
// reports whether the spec changed.
func filterTags(spec v1alpha1.NodeImageSpec, keep func(image string, t *v1alpha1.ImageTagSpec) bool) (v1alpha1.NodeImageSpec, bool) {
	out := *spec.DeepCopy()
	for name, image := range out.Images {
		kept := image.Tags[:0]
		for _, t := range image.Tags {
			if keep(name, &t) {
				kept = append(kept, t)
			}
		}
		image.Tags = kept
		if len(image.Tags) == 0 {
			delete(out.Images, name)
			continue
		}
		image.PullSecrets = slices.DeleteFunc(image.PullSecrets, func(s v1alpha1.ReferenceObject) bool {
			return !slices.ContainsFunc(image.Tags, func(t v1alpha1.ImageTagSpec) bool { return mayUseSecret(&t, s) })
		})
		sortTags(image.Tags)
		out.Images[name] = image
	}
	// Semantic equality: an emptied map and a nil one are the same spec.
	if apiequality.Semantic.DeepEqual(spec, out) {
		return spec, false
	}
	return out, true
}
