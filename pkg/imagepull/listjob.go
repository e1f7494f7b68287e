package imagepull

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// imageListPullJobKind is the kind of the controller reference on an ImageListPullJob's children.
var imageListPullJobKind = v1alpha1.SchemeGroupVersion.WithKind("ImageListPullJob")

// TemplateHash is the hash of an ImageListPullJob's template that labels it and its ImagePullJobs
// (label controller-revision-hash), computed as OpenKruise does (FNV-32a over the template's hash
// dump). The dump names the Go type, so the values differ from OpenKruise's: only this server's
// controller compares them.
func TemplateHash(t *v1alpha1.ImagePullJobTemplate) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*t))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// ChildActions are the ImagePullJobs the ImageListPullJob controller keeps, creates and deletes.
type ChildActions struct {
	// Current are the children kept: per image, the child of the current template. ListJobStatus
	// counts these only, so a replaced child's outcome is not taken for the new template's.
	Current []*v1alpha1.ImagePullJob
	Create  []*v1alpha1.ImagePullJob
	Delete  []*v1alpha1.ImagePullJob
}

// Children returns what makes listJob's ImagePullJobs one current job per image of spec.images:
// an image without a child gets one (NewChild); a child of an outdated template (another
// controller-revision-hash) is replaced — deleted and created again, since a running pull cannot
// be retargeted; a child whose image left the list, or a second child of the same image, is
// deleted. existing may hold any ImagePullJobs of the namespace: only those listJob controls and
// that are not being deleted are considered. The lists follow spec.images order; deletions of
// images no longer listed come last, by name.
func Children(listJob *v1alpha1.ImageListPullJob, existing []*v1alpha1.ImagePullJob) ChildActions {
	template := &listJob.Spec.ImagePullJobTemplate
	hash := TemplateHash(template)
	byImage := ownedChildren(listJob, existing)
	var actions ChildActions
	wanted := map[string]bool{}
	for _, image := range listJob.Spec.Images {
		if wanted[image] {
			continue
		}
		wanted[image] = true
		children := byImage[image]
		current := slices.IndexFunc(children, func(c *v1alpha1.ImagePullJob) bool { return isCurrent(c, template, hash) })
		if current < 0 {
			actions.Create = append(actions.Create, NewChild(listJob, image, hash))
		} else {
			actions.Current = append(actions.Current, children[current])
		}
		for i, c := range children {
			if i != current {
				actions.Delete = append(actions.Delete, c)
			}
		}
	}
	var gone []*v1alpha1.ImagePullJob
	for image, children := range byImage {
		if !wanted[image] {
			gone = append(gone, children...)
		}
	}
	slices.SortFunc(gone, func(a, b *v1alpha1.ImagePullJob) int { return strings.Compare(a.Name, b.Name) })
	actions.Delete = append(actions.Delete, gone...)
	return actions
}

// ownedChildren groups by image the jobs listJob controls that are not being deleted, oldest
// first (then by name), so that of two current children of one image the older is kept.
func ownedChildren(listJob *v1alpha1.ImageListPullJob, existing []*v1alpha1.ImagePullJob) map[string][]*v1alpha1.ImagePullJob {
	byImage := map[string][]*v1alpha1.ImagePullJob{}
	for _, j := range existing {
		if ref := metav1.GetControllerOf(j); ref == nil || ref.UID != listJob.UID || j.DeletionTimestamp != nil {
			continue
		}
		byImage[j.Spec.Image] = append(byImage[j.Spec.Image], j)
	}
	for _, children := range byImage {
		slices.SortFunc(children, func(a, b *v1alpha1.ImagePullJob) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	return byImage
}

// isCurrent says whether child was made from the template of that hash. A child without the hash
// label (written by hand or by an older controller) is current when its template is the same.
func isCurrent(child *v1alpha1.ImagePullJob, t *v1alpha1.ImagePullJobTemplate, hash string) bool {
	h, ok := child.Labels[appsv1.ControllerRevisionHashLabelKey]
	if ok {
		return h == hash
	}
	return apiequality.Semantic.DeepEqual(child.Spec.ImagePullJobTemplate, *t)
}

// NewChild is the ImagePullJob listJob wants for image: named "<listJob>-" plus a suffix the
// server generates (OpenKruise's generateName), labelled with the template hash, controlled by
// listJob, with listJob's template. Its imagePullPolicy is left for defaulting (IfNotPresent),
// as the list job's template has none of its own.
func NewChild(listJob *v1alpha1.ImageListPullJob, image, hash string) *v1alpha1.ImagePullJob {
	return &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       listJob.Namespace,
			GenerateName:    listJob.Name + "-",
			Labels:          map[string]string{appsv1.ControllerRevisionHashLabelKey: hash},
			Annotations:     map[string]string{},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(listJob, imageListPullJobKind)},
		},
		Spec: v1alpha1.ImagePullJobSpec{
			Image:                image,
			ImagePullJobTemplate: *listJob.Spec.ImagePullJobTemplate.DeepCopy(),
		},
	}
}

// ListJobStatus computes an ImageListPullJob's status from its current children
// (ChildActions.Current).
// desired is the number of images; a child that has started counts as active while it has active
// pulls, completed once all its nodes succeeded or failed, succeeded once all succeeded, and is
// listed in failedImageStatuses when any node failed. With completionPolicy Always the list job
// completes when every image's child completed; with Never it never does. A list job already
// completed keeps its status.
func ListJobStatus(listJob *v1alpha1.ImageListPullJob, children []*v1alpha1.ImagePullJob, now metav1.Time) v1alpha1.ImageListPullJobStatus {
	if listJob.Status.CompletionTime != nil {
		return *listJob.Status.DeepCopy()
	}
	status := v1alpha1.ImageListPullJobStatus{StartTime: listJob.Status.StartTime, Desired: int32(len(uniqueImages(listJob.Spec.Images)))}
	if status.StartTime == nil {
		status.StartTime = &now
	}
	for _, c := range children {
		s := &c.Status
		if s.StartTime == nil {
			continue // not reconciled yet: its zero counters would read as "completed"
		}
		if s.Active > 0 {
			status.Active++
		}
		if s.Succeeded+s.Failed == s.Desired {
			status.Completed++
		}
		if s.Succeeded == s.Desired {
			status.Succeeded++
		}
		if s.Failed > 0 {
			status.FailedImageStatuses = append(status.FailedImageStatuses, v1alpha1.FailedImageStatus{
				ImagePullJob: c.Name,
				Name:         c.Spec.Image,
				Message:      fmt.Sprintf("Please check for details which nodes failed by 'kubectl get ImagePullJob %s'.", c.Name),
			})
		}
	}
	if listJob.Spec.CompletionPolicy.Type != v1alpha1.Never && status.Completed == status.Desired {
		status.CompletionTime = &now
	}
	return status
}

func uniqueImages(images []string) []string {
	var out []string
	for _, i := range images {
		if !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out
}
