package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// preDownloadTimeout bounds how long the controller takes to create or delete a pre-download job
// after the CloneSet changed (one sync).
const preDownloadTimeout = 30 * time.Second

// TestCloneSetPreDownload: an in-place rollout held back by its partition gets an ImagePullJob,
// controlled by the CloneSet, for its new image, aimed at the Pods not updated yet with the
// parallelism of the CloneSet's annotation; the ImagePullJob controller counts those Pods' nodes
// and writes the tag into their NodeImages; the job is deleted once the rollout completes. Whether
// a node then pulls is the daemon's business, not checked here.
func TestCloneSetPreDownload(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-predl")
	// 4 replicas: OpenKruise (and inplace) skip pre-download for 3 or fewer.
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:      v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition: ptr.To(intstr.FromInt32(3)),
	}, func(cs *v1alpha1.CloneSet) {
		cs.Annotations = map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "2"}
	})
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })

	// The update revision, once the status names it.
	var updateRevision string
	framework.Poll(t, ctx, preDownloadTimeout, "the CloneSet's new update revision", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.ObservedGeneration != got.Generation || got.Status.UpdateRevision == got.Status.CurrentRevision {
			return false, fmt.Errorf("status %+v", got.Status)
		}
		updateRevision = got.Status.UpdateRevision
		return true, nil
	})
	jobName := updateRevision + "-main"
	var job *v1alpha1.ImagePullJob
	framework.Poll(t, ctx, preDownloadTimeout, "ImagePullJob "+jobName, func(ctx context.Context) (bool, error) {
		var err error
		job, err = framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		return err == nil, err
	})
	checkPreDownloadJob(t, cs, job, updateRevision)
	if n := listJobs(t, ctx, ns); n != 1 {
		t.Errorf("%d ImagePullJobs in the namespace, want 1", n)
	}
	rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, updateRevision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[v1alpha1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("revision %s labels %v, want %s=true", updateRevision, rev.Labels, v1alpha1.ImagePreDownloadCreatedKey)
	}
	framework.WaitCloneSetEvent(t, ctx, cs, "CreatedImagePullJob", "created ImagePullJob "+jobName)

	// The ImagePullJob controller counts the nodes of the 3 Pods not updated (those with a
	// NodeImage) and writes the job's tag into their NodeImages (parallelism 2 covers them).
	checkJobCountsNodes(t, ctx, cs, job, updateRevision)

	// Partition 0: the rollout completes and the job goes.
	patch := `{"spec":{"updateStrategy":{"partition":0}}}`
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, cs.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitRolledOut(t, ctx, cs, 4)
	framework.Poll(t, ctx, preDownloadTimeout, "ImagePullJob "+jobName+" deleted", func(ctx context.Context) (bool, error) {
		_, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, jobName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
	framework.WaitCloneSetEvent(t, ctx, cs, "DeletedImagePullJob", "deleted ImagePullJob "+jobName)
}

// checkPreDownloadJob checks the job's owner, image, selector and settings.
func checkPreDownloadJob(t *testing.T, cs *v1alpha1.CloneSet, job *v1alpha1.ImagePullJob, updateRevision string) {
	t.Helper()
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CloneSet" || ref.UID != cs.UID {
		t.Errorf("job controller %+v, want CloneSet %s (%s)", ref, cs.Name, cs.UID)
	}
	if job.Spec.Image != framework.AppImageV2 {
		t.Errorf("job image %s, want %s", job.Spec.Image, framework.AppImageV2)
	}
	if p := job.Spec.Parallelism; p == nil || p.IntValue() != 2 {
		t.Errorf("job parallelism %v, want 2 (the annotation)", p)
	}
	sel := job.Spec.PodSelector
	if sel == nil || sel.MatchLabels["app"] != "web" || len(sel.MatchExpressions) != 1 {
		t.Fatalf("job podSelector %+v, want app=web and controller-revision-hash NotIn the update revision", sel)
	}
	if e := sel.MatchExpressions[0]; e.Key != appsv1.ControllerRevisionHashLabelKey || e.Operator != metav1.LabelSelectorOpNotIn ||
		!slices.Contains(e.Values, updateRevision) {
		t.Errorf("job podSelector requirement %+v, want controller-revision-hash NotIn [%s ...]", e, updateRevision)
	}
	if cp := job.Spec.CompletionPolicy; cp.Type != v1alpha1.Always || ptr.Deref(cp.TTLSecondsAfterFinished, 0) != 600 {
		t.Errorf("job completionPolicy %+v, want Always with a TTL of 600 s", cp)
	}
	if pp := job.Spec.PullPolicy; pp == nil || ptr.Deref(pp.BackoffLimit, -1) != 1 || ptr.Deref(pp.TimeoutSeconds, 0) != 300 {
		t.Errorf("job pullPolicy %+v, want backoffLimit 1, timeout 300 s", pp)
	}
	if job.Labels["controller.kubernetes.io/hash"] != strings.TrimPrefix(updateRevision, cs.Name+"-") || job.Labels["app"] != "web" {
		t.Errorf("job labels %v, want the template's and the revision hash", job.Labels)
	}
}

func listJobs(t *testing.T, ctx context.Context, ns string) int {
	t.Helper()
	list, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// checkJobCountsNodes waits until the job's status counts the nodes (with a NodeImage) of the
// CloneSet's Pods not at the update revision, and each of their NodeImages names the job for its
// tag.
func checkJobCountsNodes(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, job *v1alpha1.ImagePullJob, updateRevision string) {
	t.Helper()
	name, tag, err := imagepull.SplitImage(job.Spec.Image)
	if err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, preDownloadTimeout, "ImagePullJob "+job.Name+" counting the nodes of the Pods not updated", func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return false, err
		}
		waiting := sets.New[string]()
		for _, p := range pods {
			if framework.PodRevision(p) != updateRevision {
				waiting.Insert(p.Spec.NodeName)
			}
		}
		var nodes []string
		for node := range waiting {
			ni, err := framework.Inplace.AppsV1alpha1().NodeImages().Get(ctx, node, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue // not a candidate: nothing can be asked of its node
			}
			if err != nil {
				return false, err
			}
			nodes = append(nodes, node)
			if !tagOwnedBy(ni, name, tag, job) {
				return false, fmt.Errorf("NodeImage %s has no tag %s:%s of job %s: %+v", node, name, tag, job.Name, ni.Spec.Images[name])
			}
		}
		if len(nodes) == 0 {
			return false, fmt.Errorf("no NodeImage for the nodes %v of the Pods not updated", sets.List(waiting))
		}
		got, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.Desired != int32(len(nodes)) {
			return false, fmt.Errorf("job status %+v, want desired %d (nodes %v)", got.Status, len(nodes), nodes)
		}
		return true, nil
	})
}

func tagOwnedBy(ni *v1alpha1.NodeImage, name, tag string, job *v1alpha1.ImagePullJob) bool {
	for _, t := range ni.Spec.Images[name].Tags {
		if t.Tag != tag {
			continue
		}
		for _, r := range t.OwnerReferences {
			if r.UID == job.UID {
				return true
			}
		}
	}
	return false
}

// TestCloneSetPreDownloadSkipped: as in OpenKruise, a CloneSet of 3 replicas or fewer pre-downloads
// nothing: its update revision is labelled ignored and no job appears.
func TestCloneSetPreDownloadSkipped(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-predl-skip")
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{
		Type:      v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition: ptr.To(intstr.FromInt32(2)),
	})
	framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	framework.Poll(t, ctx, preDownloadTimeout, "the update revision labelled "+v1alpha1.ImagePreDownloadIgnoredKey, func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got.Status.UpdateRevision == got.Status.CurrentRevision {
			return false, fmt.Errorf("status %+v", got.Status)
		}
		rev, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, got.Status.UpdateRevision, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if rev.Labels[v1alpha1.ImagePreDownloadIgnoredKey] != "true" {
			return false, fmt.Errorf("revision %s labels %v", rev.Name, rev.Labels)
		}
		return true, nil
	})
	// The label is written in the sync that decided; a job would have been created before it.
	if n := listJobs(t, ctx, ns); n != 0 {
		t.Errorf("%d ImagePullJobs for a CloneSet of 3 replicas, want none", n)
	}
}

// TestCloneSetPreDownloadSavesThePull: OpenKruise's promise, end to end on both real nodes and the
// local registry. A CloneSet of 4 Pods, two on each node, pulling remote/app from the registry,
// rolls out remote/app:v2 (on no node: removed first) held back by its partition: its ImagePullJob
// ends Succeeded on both nodes (inplace-daemon pulled through CRI; containerd has the image), and
// once the partition is lifted, the held-back Pods are updated in place without the kubelet
// pulling for any of them (no Pulling event; "already present"). The first Pod updated may pull
// on its node (its kubelet and the job race); the other node's held-back Pods prove the point:
// nothing but the job brought the image there.
func TestCloneSetPreDownloadSavesThePull(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	if len(nodes) < 2 {
		t.Skip("needs the second node (inplace installed in the cluster runs one)")
	}
	ctx := framework.Context(t)
	oldImage, newImage := reg+"/remote/app:v1", reg+"/remote/app:v2"
	for _, n := range nodes {
		if err := framework.RemoveCRIImage(ctx, n, newImage); err != nil {
			t.Fatalf("removing %s from %s: %v", newImage, n.Name, err)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = framework.RemoveCRIImage(context.Background(), n, newImage)
		}
	})

	ns := framework.NewNamespace(t, ctx, "clone-predl-pull")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:      v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition: ptr.To(intstr.FromInt32(3)),
	}, func(cs *v1alpha1.CloneSet) {
		cs.Annotations = map[string]string{v1alpha1.ImagePreDownloadParallelismKey: "2"}
		spec := &cs.Spec.Template.Spec
		spec.Containers[0].Image, spec.Containers[0].ImagePullPolicy = oldImage, corev1.PullIfNotPresent
		spec.Tolerations = []corev1.Toleration{{Key: framework.Node2Taint, Operator: corev1.TolerationOpExists}}
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: cs.Spec.Selector,
		}}
	})
	perNode := map[string]int{}
	for _, p := range before {
		perNode[p.Spec.NodeName]++
	}
	if perNode[nodes[0].Name] != 2 || perNode[nodes[1].Name] != 2 {
		t.Fatalf("Pods per node %v, want 2 on each of %s and %s", perNode, nodes[0].Name, nodes[1].Name)
	}
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = newImage })

	// The job for the new image, then its end: Succeeded on both nodes.
	var job *v1alpha1.ImagePullJob
	framework.Poll(t, ctx, framework.PodTimeout, "the CloneSet's ImagePullJob for "+newImage+" to succeed on both nodes", func(ctx context.Context) (bool, error) {
		jobs, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(jobs.Items) != 1 {
			return false, fmt.Errorf("%d jobs (%v)", len(jobs.Items), err)
		}
		job = &jobs.Items[0]
		st := job.Status
		if job.Spec.Image != newImage || st.CompletionTime == nil || st.Succeeded != 2 || st.Desired != 2 {
			return false, fmt.Errorf("job %s image %s status %+v", job.Name, job.Spec.Image, st)
		}
		return true, nil
	})
	for _, n := range nodes {
		if framework.CRIImage(t, ctx, n, newImage) == nil {
			t.Errorf("node %s has no %s after the job succeeded", n.Name, newImage)
		}
	}

	// The Pod the partition lets through first, and the three held back.
	held := map[string]string{} // Pod name -> node
	framework.Poll(t, ctx, framework.RolloutTimeout, "one Pod updated and ready, three held back", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if st := got.Status; st.ObservedGeneration != got.Generation || st.UpdatedReadyReplicas != 1 {
			return false, fmt.Errorf("status %+v", st)
		}
		pods, err := framework.CloneSetPods(ctx, got)
		if err != nil {
			return false, err
		}
		clear(held)
		for _, p := range pods {
			if framework.PodRevision(p) != got.Status.UpdateRevision {
				held[p.Name] = p.Spec.NodeName
			}
		}
		return len(held) == 3, fmt.Errorf("held back: %v", held)
	})
	patch := `{"spec":{"updateStrategy":{"partition":0}}}`
	if _, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Patch(ctx, cs.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, after := framework.WaitRolledOut(t, ctx, cs, 4)
	framework.CheckSamePods(t, before, after)

	// The kubelet's image events of the held-back Pods: "already present", never "Pulling".
	events, err := framework.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, e := range events.Items {
		node, isHeld := held[e.InvolvedObject.Name]
		if !isHeld || !strings.Contains(e.Message, newImage) {
			continue
		}
		switch e.Reason {
		case "Pulling":
			t.Errorf("the kubelet of %s pulled %s for held-back Pod %s after the job had: %s", node, newImage, e.InvolvedObject.Name, e.Message)
		case "Pulled":
			if strings.Contains(e.Message, "already present") {
				present[e.InvolvedObject.Name] = true
			}
		}
	}
	for name, node := range held {
		if !present[name] {
			t.Errorf("held-back Pod %s on %s: no \"already present\" event for %s", name, node, newImage)
		}
	}
}
