// Package predownload pre-downloads the new images of a workload's in-place rollout onto the
// nodes of its Pods that are still waiting for the new revision (OpenKruise's
// PreDownloadImageForInPlaceUpdate): while partition, maxUnavailable or a pause holds Pods back,
// their nodes pull the images they will need, so that each in-place update only restarts a
// container instead of pulling first.
//
// The workload controller creates one ImagePullJob per changed image, owned by the workload and
// targeted at its Pods not at the update revision (podSelector: the workload's selector plus
// controller-revision-hash NotIn the update revision); the ImagePullJob controller does the rest
// (it writes the tags into the NodeImages of those Pods' nodes). The update revision is then
// labelled apps.kruise.io/pre-predownload-created, or apps.kruise.io/image-predownload-ignored
// when pre-download does not apply, so a revision's jobs are created once even after they
// completed and their TTL deleted them. The jobs are deleted when the rollout completes (current
// revision == update revision) and when a newer update revision replaces theirs.
//
// Decide is the whole decision, pure; Writer carries it out with the clients, behind
// expectations so that a slow cache never creates or deletes a job twice.
//
// Advanced DaemonSets use it too (OpenKruise's PreDownloadImageForDaemonSetUpdate), with
// OpenKruise's DaemonSet rules (Rollout.DaemonSet).
//
// Behaviour follows OpenKruise v1.9 (pkg/controller/cloneset/cloneset_predownload_image.go,
// pkg/controller/daemonset/daemonset_predownload_image.go, pkg/util/imagejob/utilfunction); where
// it differs the comment says so and why.
package predownload

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// OpenKruise's fixed settings of a pre-download job.
const (
	// MinimumReplicas: a workload of this many replicas or fewer is not worth it (OpenKruise's
	// minimumReplicasToPreDownloadImage).
	MinimumReplicas = 3
	// DefaultParallelism is the jobs' parallelism without the parallelism annotation.
	DefaultParallelism = 1
	// DefaultTimeoutSeconds is one pull's timeout without the timeout annotation.
	DefaultTimeoutSeconds = 300
	// BackoffLimit is how many times a node retries a failed pull.
	BackoffLimit = 1
	// TTLSecondsAfterFinished deletes a job this long after it finished; the revision label
	// keeps it from being created again.
	TTLSecondsAfterFinished = 600
)

// RevisionHashLabel labels each job with the hash of the revision it pre-downloads (kube's
// ControllerRevision hash label, which OpenKruise's jobs carry).
const RevisionHashLabel = "controller.kubernetes.io/hash"

// Object is a workload: the owner of its jobs, and what events are recorded on.
type Object interface {
	metav1.Object
	runtime.Object
}

// Rollout is what Decide reads of a workload. Numbers are Pods.
type Rollout struct {
	// Owner is the workload; its annotations hold the apps.kruise.io/image-predownload-* settings.
	Owner Object
	// OwnerRef is the controllerRef its jobs carry.
	OwnerRef metav1.OwnerReference
	// Selector is the workload's Pod selector.
	Selector *metav1.LabelSelector
	// Template is the workload's Pod template: its labels label the jobs, its labels and
	// annotations are the jobs' sandboxConfig, its imagePullSecrets their pullSecrets.
	Template *corev1.PodTemplateSpec
	// InPlace says the update strategy updates Pods in place when the change allows.
	InPlace bool
	// Replicas, Partition and MaxUnavailable are the desired Pods and the update strategy's
	// bounds scaled to them (MaxUnavailable rounded down, as OpenKruise scales it here).
	Replicas, Partition, MaxUnavailable int
	// UpdatedReady counts the Pods at the update revision that are ready.
	UpdatedReady int
	// Current and Update are the workload's current and update revisions.
	Current, Update *appsv1.ControllerRevision

	// DaemonSet selects OpenKruise's Advanced DaemonSet rules (PreDownloadImageForDaemonSetUpdate,
	// pkg/controller/daemonset/daemonset_predownload_image.go) over the CloneSet's: whatever the
	// update strategy and the number of Pods, no check that the change goes in place, no wait for
	// updated ready Pods (OpenKruise reads that annotation for a DaemonSet but does not act on
	// it), and the images compared with every older revision (Old) instead of Current.
	DaemonSet bool
	// Old are, for a DaemonSet, its revisions other than Update.
	Old []*appsv1.ControllerRevision
	// Done says, for a DaemonSet, that its rollout is over: its status shows every node's Pod
	// at the update revision. (A CloneSet's is over when Current is Update.)
	Done bool
}

// done says the rollout is over: its jobs go, none is created.
func (r Rollout) done() bool {
	if r.DaemonSet {
		return r.Done
	}
	return r.Current.Name == r.Update.Name
}

// Plan is what Decide says to do.
type Plan struct {
	// Create are the jobs to create.
	Create []*v1alpha1.ImagePullJob
	// Delete are the jobs to delete.
	Delete []*v1alpha1.ImagePullJob
	// Mark is the label to set to "true" on the update revision once Create is done
	// (ImagePreDownloadCreatedKey or ImagePreDownloadIgnoredKey); empty for none.
	Mark string
	// Why says why no job is created, for the log.
	Why string
	// Problems are the annotations that could not be read, each replaced by its default: the
	// caller reports them as events on the workload.
	Problems []string
}

// Decide says which pre-download jobs to create and delete for a workload, given the jobs it
// controls (from the cache).
func Decide(r Rollout, jobs []*v1alpha1.ImagePullJob) (Plan, error) {
	var p Plan
	if r.done() {
		p.Delete = live(jobs, func(*v1alpha1.ImagePullJob) bool { return true })
		p.Why = "no rollout under way"
		return p, nil
	}
	hash := RevisionHash(r.Owner.GetName(), r.Update)
	// Jobs of an update revision that a newer one replaced pull images no Pod will run.
	p.Delete = live(jobs, func(j *v1alpha1.ImagePullJob) bool { return j.Labels[RevisionHashLabel] != hash })
	if key := marked(r.Update); key != "" {
		p.Why = "revision " + r.Update.Name + " is labelled " + key
		return p, nil
	}
	if !r.DaemonSet {
		minReady, problem := MinUpdatedReady(r.Owner.GetAnnotations(), r.Replicas)
		p.addProblem(problem)
		if r.UpdatedReady < minReady {
			p.Why = fmt.Sprintf("%d updated ready Pods, waiting for %d", r.UpdatedReady, minReady)
			return p, nil
		}
	}
	newT, err := history.Template(r.Update)
	if err != nil {
		return p, fmt.Errorf("decoding the template of revision %s: %w", r.Update.Name, err)
	}
	var images map[string]string
	var why string
	if r.DaemonSet {
		images, why, err = daemonSetImages(r, newT)
	} else {
		images, why, err = cloneSetImages(r, newT)
	}
	if err != nil || why != "" {
		if err == nil {
			p.Mark, p.Why = v1alpha1.ImagePreDownloadIgnoredKey, why
		}
		return p, err
	}
	settings := readSettings(r.Owner.GetAnnotations())
	for _, problem := range settings.problems {
		p.addProblem(problem)
	}
	existing := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		existing[j.Name] = true
	}
	for _, container := range slices.Sorted(maps.Keys(images)) {
		job := newJob(r, hash, container, images[container], settings)
		if !existing[job.Name] {
			p.Create = append(p.Create, job)
		}
	}
	p.Mark = v1alpha1.ImagePreDownloadCreatedKey
	return p, nil
}

func (p *Plan) addProblem(problem string) {
	if problem != "" {
		p.Problems = append(p.Problems, problem)
	}
}

// live are the jobs that match and are not being deleted already.
func live(jobs []*v1alpha1.ImagePullJob, match func(*v1alpha1.ImagePullJob) bool) []*v1alpha1.ImagePullJob {
	var out []*v1alpha1.ImagePullJob
	for _, j := range jobs {
		if j.DeletionTimestamp == nil && match(j) {
			out = append(out, j)
		}
	}
	return out
}

// marked is the pre-download label the revision has, empty when none: it was decided already.
func marked(rev *appsv1.ControllerRevision) string {
	for _, k := range []string{v1alpha1.ImagePreDownloadCreatedKey, v1alpha1.ImagePreDownloadIgnoredKey} {
		if _, ok := rev.Labels[k]; ok {
			return k
		}
	}
	return ""
}

// cloneSetImages are the images to pre-download for a CloneSet, or why none are.
func cloneSetImages(r Rollout, newT *corev1.PodTemplateSpec) (map[string]string, string, error) {
	oldT, err := history.Template(r.Current)
	if err != nil {
		return nil, "", fmt.Errorf("decoding the template of revision %s: %w", r.Current.Name, err)
	}
	if why, err := skipReason(r, oldT, newT); err != nil || why != "" {
		return nil, why, err
	}
	return ChangedImages(oldT, newT), "", nil
}

// daemonSetImages are the images to pre-download for a DaemonSet, or why none are: as
// OpenKruise, none when every Pod updates in the first batch (partition 0 and maxUnavailable
// covering every node), else each container's new image that an older revision runs under
// another image or that no older revision has.
func daemonSetImages(r Rollout, newT *corev1.PodTemplateSpec) (map[string]string, string, error) {
	if r.Partition == 0 && r.MaxUnavailable >= r.Replicas {
		return nil, fmt.Sprintf("every Pod updates at once (partition 0, maxUnavailable %d of %d nodes)", r.MaxUnavailable, r.Replicas), nil
	}
	images := map[string]string{}
	found := map[string]bool{}
	for _, rev := range r.Old {
		oldT, err := history.Template(rev)
		if err != nil {
			return nil, "", fmt.Errorf("decoding the template of revision %s: %w", rev.Name, err)
		}
		for name, image := range ChangedImages(oldT, newT) {
			if slices.ContainsFunc(oldT.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }) {
				images[name] = image
			}
		}
		for _, c := range oldT.Spec.Containers {
			found[c.Name] = true
		}
	}
	for _, c := range newT.Spec.Containers {
		if !found[c.Name] {
			images[c.Name] = c.Image
		}
	}
	return images, "", nil
}

// skipReason says why the revision's images are not pre-downloaded, as OpenKruise decides: Pods
// are recreated (they pull when created, on a node not chosen yet), there are too few of them,
// every Pod updates in the first batch (nothing waits), or the change cannot go in place.
func skipReason(r Rollout, oldT, newT *corev1.PodTemplateSpec) (string, error) {
	switch {
	case !r.InPlace:
		return "the update strategy recreates Pods", nil
	case r.Replicas <= MinimumReplicas:
		return fmt.Sprintf("%d replicas, not more than %d", r.Replicas, MinimumReplicas), nil
	case r.Partition == 0 && r.MaxUnavailable >= r.Replicas:
		return fmt.Sprintf("every Pod updates at once (partition 0, maxUnavailable %d of %d)", r.MaxUnavailable, r.Replicas), nil
	}
	_, err := inplaceupdate.CalculateSpec(oldT, newT, r.Update.Name)
	var notInPlace *inplaceupdate.NotInPlaceError
	switch {
	case errors.As(err, &notInPlace):
		return "the change cannot go in place: " + notInPlace.Error(), nil
	case err != nil:
		return "", fmt.Errorf("comparing the templates of revisions %s and %s: %w", r.Current.Name, r.Update.Name, err)
	}
	return "", nil
}

// ChangedImages maps each container of the new template whose image the old one does not run
// under that name (a changed image, or a new container) to its new image. Init containers are
// left out, as in OpenKruise: they never update in place.
func ChangedImages(oldT, newT *corev1.PodTemplateSpec) map[string]string {
	old := make(map[string]string, len(oldT.Spec.Containers))
	for _, c := range oldT.Spec.Containers {
		old[c.Name] = c.Image
	}
	out := map[string]string{}
	for _, c := range newT.Spec.Containers {
		if image, ok := old[c.Name]; !ok || image != c.Image {
			out[c.Name] = c.Image
		}
	}
	return out
}

// RevisionHash is the hash of a revision of owner: its kube hash label when it has one (a revision
// OpenKruise created), else its name without the "<owner>-" prefix (inplace names revisions
// history.RevisionName(owner, hash) and labels them with the template's labels only).
func RevisionHash(owner string, rev *appsv1.ControllerRevision) string {
	if h := rev.Labels[RevisionHashLabel]; h != "" {
		return h
	}
	return strings.TrimPrefix(rev.Name, history.RevisionName(owner, ""))
}

// JobName is the name of the job of a container's image for a revision (OpenKruise's).
func JobName(revision, container string) string {
	return revision + "-" + container
}

// PodSelector selects the workload's Pods not at the update revision: its selector plus
// controller-revision-hash NotIn the revision's name and hash (OpenKruise's Pods may carry
// either).
func PodSelector(selector *metav1.LabelSelector, update *appsv1.ControllerRevision, hash string) metav1.LabelSelector {
	sel := selector.DeepCopy()
	values := []string{update.Name}
	if hash != update.Name {
		values = append(values, hash)
	}
	sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: appsv1.ControllerRevisionHashLabelKey, Operator: metav1.LabelSelectorOpNotIn, Values: values})
	return *sel
}

// newJob is the job that pulls a container's new image, as OpenKruise's CreateJobForWorkload
// builds it: labelled like the workload's Pods plus the revision hash (whatever a workload owns
// matches its selector), completing once every node pulled, deleted 10 minutes later.
func newJob(r Rollout, hash, container, image string, s settings) *v1alpha1.ImagePullJob {
	labels := maps.Clone(r.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RevisionHashLabel] = hash
	var secrets []string
	for _, s := range r.Template.Spec.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	sel := PodSelector(r.Selector, r.Update, hash)
	ref := r.OwnerRef
	return &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       r.Owner.GetNamespace(),
			Name:            JobName(r.Update.Name, container),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: v1alpha1.ImagePullJobSpec{
			Image: image,
			ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
				PullSecrets: secrets,
				PodSelector: &v1alpha1.ImagePullJobPodSelector{LabelSelector: sel},
				Parallelism: ptr.To(intstr.FromInt32(s.parallelism)),
				PullPolicy:  &v1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](BackoffLimit), TimeoutSeconds: ptr.To(s.timeoutSeconds)},
				CompletionPolicy: v1alpha1.CompletionPolicy{
					Type:                    v1alpha1.Always,
					TTLSecondsAfterFinished: ptr.To[int32](TTLSecondsAfterFinished),
				},
				SandboxConfig: &v1alpha1.SandboxConfig{Labels: maps.Clone(labels), Annotations: maps.Clone(r.Template.Annotations)},
			},
		},
	}
}

// settings are the jobs' settings read from the workload's annotations.
type settings struct {
	parallelism, timeoutSeconds int32
	problems                    []string
}

// readSettings reads the parallelism and timeout annotations. A value that cannot be read is a
// problem and its default is used: OpenKruise silently uses the default, which leaves a user
// wondering why the annotation has no effect.
func readSettings(annotations map[string]string) settings {
	s := settings{parallelism: DefaultParallelism, timeoutSeconds: DefaultTimeoutSeconds}
	if v, ok := annotations[v1alpha1.ImagePreDownloadParallelismKey]; ok {
		// A number of nodes, as the job's parallelism must be (validation refuses percentages).
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			s.problems = append(s.problems, fmt.Sprintf("annotation %s=%q: must be a non-negative integer; using %d",
				v1alpha1.ImagePreDownloadParallelismKey, v, DefaultParallelism))
		} else {
			s.parallelism = int32(n)
		}
	}
	if v, ok := annotations[v1alpha1.ImagePreDownloadTimeoutSecondsKey]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n <= 0 {
			s.problems = append(s.problems, fmt.Sprintf("annotation %s=%q: must be a positive integer; using %d",
				v1alpha1.ImagePreDownloadTimeoutSecondsKey, v, DefaultTimeoutSeconds))
		} else {
			s.timeoutSeconds = int32(n)
		}
	}
	return s
}

// MinUpdatedReady is how many updated ready Pods the jobs wait for: the annotation
// apps.kruise.io/image-predownload-min-updated-ready-pods, a count or a percentage of replicas
// (rounded up), 0 without it. A value that cannot be read is 0, as in OpenKruise, with a problem
// to report.
func MinUpdatedReady(annotations map[string]string, replicas int) (int, string) {
	v, ok := annotations[v1alpha1.ImagePreDownloadMinUpdatedReadyPods]
	if !ok {
		return 0, ""
	}
	is := intstr.Parse(strings.TrimSpace(v))
	n, err := intstr.GetScaledValueFromIntOrPercent(&is, replicas, true)
	if err != nil || n < 0 {
		return 0, fmt.Sprintf("annotation %s=%q: must be a non-negative integer or percentage; using 0",
			v1alpha1.ImagePreDownloadMinUpdatedReadyPods, v)
	}
	return n, ""
}
