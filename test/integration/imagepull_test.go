package integration

import (
	"strings"
	"testing"
	"time"

	kruisev1alpha1 "github.com/openkruise/kruise-api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// TestCRUDImagePull runs the CRUD test (create, get, list with selectors, watch, metadata, status
// and spec updates, conflicts, delete) on ImagePullJobs, ImageListPullJobs and NodeImages with the
// generated clients, in JSON and in protobuf.
func TestCRUDImagePull(t *testing.T) {
	t.Parallel()
	forEachEncoding(t, func(t *testing.T, s *framework.Server, client clientset.Interface) {
		t.Run("ImagePullJob", func(t *testing.T) {
			testCRUD(t, s, kindCase[*appsv1alpha1.ImagePullJob, *appsv1alpha1.ImagePullJobList]{
				client:          client.AppsV1alpha1().ImagePullJobs("default"),
				newObj:          newImagePullJob,
				items:           func(l *appsv1alpha1.ImagePullJobList) []*appsv1alpha1.ImagePullJob { return ptrs(l.Items) },
				changeSpec:      func(j *appsv1alpha1.ImagePullJob) { j.Spec.Image = "inplace.local/app:v3" },
				changeSpecOther: func(j *appsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(5)) },
				setStatus: func(j *appsv1alpha1.ImagePullJob, v int32) {
					j.Status = appsv1alpha1.ImagePullJobStatus{Desired: 2 * v, Active: v, Succeeded: v,
						Message: "variant " + string(rune('a'+v)), FailedNodes: []string{"node-2"}}
				},
				spec:   func(j *appsv1alpha1.ImagePullJob) any { return j.Spec },
				status: func(j *appsv1alpha1.ImagePullJob) any { return j.Status },
			})
		})
		t.Run("ImageListPullJob", func(t *testing.T) {
			testCRUD(t, s, kindCase[*appsv1alpha1.ImageListPullJob, *appsv1alpha1.ImageListPullJobList]{
				client: client.AppsV1alpha1().ImageListPullJobs("default"),
				newObj: newImageListPullJob,
				items: func(l *appsv1alpha1.ImageListPullJobList) []*appsv1alpha1.ImageListPullJob {
					return ptrs(l.Items)
				},
				changeSpec: func(j *appsv1alpha1.ImageListPullJob) { j.Spec.Images = append(j.Spec.Images, "busybox") },
				changeSpecOther: func(j *appsv1alpha1.ImageListPullJob) {
					j.Spec.CompletionPolicy = appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Never}
				},
				setStatus: func(j *appsv1alpha1.ImageListPullJob, v int32) {
					j.Status = appsv1alpha1.ImageListPullJobStatus{Desired: 2, Active: v, Completed: v,
						FailedImageStatuses: []appsv1alpha1.FailedImageStatus{{ImagePullJob: "job-" + string(rune('a'+v)), Name: "busybox"}}}
				},
				spec:   func(j *appsv1alpha1.ImageListPullJob) any { return j.Spec },
				status: func(j *appsv1alpha1.ImageListPullJob) any { return j.Status },
			})
		})
		t.Run("NodeImage", func(t *testing.T) {
			testCRUD(t, s, kindCase[*appsv1alpha1.NodeImage, *appsv1alpha1.NodeImageList]{
				client: client.AppsV1alpha1().NodeImages(),
				newObj: newNodeImage,
				items:  func(l *appsv1alpha1.NodeImageList) []*appsv1alpha1.NodeImage { return ptrs(l.Items) },
				changeSpec: func(n *appsv1alpha1.NodeImage) {
					n.Spec.Images["busybox"] = appsv1alpha1.ImageSpec{Tags: []appsv1alpha1.ImageTagSpec{{Tag: "1.36", Version: 1,
						CreatedAt: ptr.To(metav1.NewTime(time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC))),
						PullPolicy: &appsv1alpha1.ImageTagPullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1),
							TTLSecondsAfterFinished: ptr.To[int32](60)}}}}
				},
				changeSpecOther: func(n *appsv1alpha1.NodeImage) { n.Spec.Images = nil },
				setStatus: func(n *appsv1alpha1.NodeImage, v int32) {
					n.Status = appsv1alpha1.NodeImageStatus{Desired: 1, Pulling: v, Waiting: 1 - v%2,
						ImageStatuses: map[string]appsv1alpha1.ImageStatus{"inplace.local/app": {Tags: []appsv1alpha1.ImageTagStatus{
							{Tag: "v2", Phase: appsv1alpha1.ImagePhasePulling, Progress: 10 * v}}}}}
				},
				spec:   func(n *appsv1alpha1.NodeImage) any { return n.Spec },
				status: func(n *appsv1alpha1.NodeImage) any { return n.Status },
			})
		})
	})
}

// TestKruiseClientImagePull: OpenKruise's own typed client (kruise-api v1.8.0), unchanged, runs
// the same CRUD test (create, get, list, watch, update, update status, delete) on the three kinds,
// sees OpenKruise's defaults, and what it writes reads back with kubectl's columns.
func TestKruiseClientImagePull(t *testing.T) {
	s, ctx := parallelServer(t)
	kc := kruiseClient(t, s)
	apps := kc.AppsV1alpha1()

	t.Run("ImagePullJob", func(t *testing.T) {
		testCRUD(t, s, kindCase[*kruisev1alpha1.ImagePullJob, *kruisev1alpha1.ImagePullJobList]{
			client: apps.ImagePullJobs("crud"),
			newObj: func(name string) *kruisev1alpha1.ImagePullJob {
				return &kruisev1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: kruisev1alpha1.ImagePullJobSpec{Image: "nginx:1.27"}}
			},
			items:           func(l *kruisev1alpha1.ImagePullJobList) []*kruisev1alpha1.ImagePullJob { return ptrs(l.Items) },
			changeSpec:      func(j *kruisev1alpha1.ImagePullJob) { j.Spec.Image = "nginx:1.28" },
			changeSpecOther: func(j *kruisev1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(4)) },
			setStatus: func(j *kruisev1alpha1.ImagePullJob, v int32) {
				j.Status = kruisev1alpha1.ImagePullJobStatus{Desired: 3, Active: v, Failed: 1, Message: "variant " + string(rune('a'+v)),
					FailedNodes: []string{"node-3"}, StartTime: ptr.To(metav1.NewTime(time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)))}
			},
			spec:   func(j *kruisev1alpha1.ImagePullJob) any { return j.Spec },
			status: func(j *kruisev1alpha1.ImagePullJob) any { return j.Status },
		})
	})
	t.Run("ImageListPullJob", func(t *testing.T) {
		testCRUD(t, s, kindCase[*kruisev1alpha1.ImageListPullJob, *kruisev1alpha1.ImageListPullJobList]{
			client: apps.ImageListPullJobs("crud"),
			newObj: func(name string) *kruisev1alpha1.ImageListPullJob {
				return &kruisev1alpha1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: kruisev1alpha1.ImageListPullJobSpec{Images: []string{"nginx:1.27", "busybox"}}}
			},
			items: func(l *kruisev1alpha1.ImageListPullJobList) []*kruisev1alpha1.ImageListPullJob {
				return ptrs(l.Items)
			},
			changeSpec: func(j *kruisev1alpha1.ImageListPullJob) { j.Spec.Images = j.Spec.Images[:1] },
			changeSpecOther: func(j *kruisev1alpha1.ImageListPullJob) {
				j.Spec.PodSelector = &kruisev1alpha1.ImagePullJobPodSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}
			},
			setStatus: func(j *kruisev1alpha1.ImageListPullJob, v int32) {
				j.Status = kruisev1alpha1.ImageListPullJobStatus{Desired: 2, Active: 1, Completed: v, Succeeded: v,
					FailedImageStatuses: []*kruisev1alpha1.FailedImageStatus{{ImagePullJob: "job-x", Name: "busybox", Message: string(rune('a' + v))}}}
			},
			spec:   func(j *kruisev1alpha1.ImageListPullJob) any { return j.Spec },
			status: func(j *kruisev1alpha1.ImageListPullJob) any { return j.Status },
		})
	})
	t.Run("NodeImage", func(t *testing.T) {
		created := metav1.NewTime(time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC))
		testCRUD(t, s, kindCase[*kruisev1alpha1.NodeImage, *kruisev1alpha1.NodeImageList]{
			client: apps.NodeImages(),
			newObj: func(name string) *kruisev1alpha1.NodeImage {
				return &kruisev1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: kruisev1alpha1.NodeImageSpec{Images: map[string]kruisev1alpha1.ImageSpec{"nginx": {
						PullSecrets: []kruisev1alpha1.ReferenceObject{{Namespace: "default", Name: "regcred"}},
						Tags: []kruisev1alpha1.ImageTagSpec{{Tag: "1.27", CreatedAt: &created, Version: 2,
							PullPolicy: &kruisev1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](300)},
							OwnerReferences: []corev1.ObjectReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ImagePullJob",
								Namespace: "default", Name: "pull", UID: "0123"}}}},
					}}}}
			},
			items:           func(l *kruisev1alpha1.NodeImageList) []*kruisev1alpha1.NodeImage { return ptrs(l.Items) },
			changeSpec:      func(n *kruisev1alpha1.NodeImage) { n.Spec.Images["nginx"].Tags[0].Version = 3 },
			changeSpecOther: func(n *kruisev1alpha1.NodeImage) { delete(n.Spec.Images, "nginx") },
			setStatus: func(n *kruisev1alpha1.NodeImage, v int32) {
				n.Status = kruisev1alpha1.NodeImageStatus{Desired: 1, Succeeded: v % 2, Pulling: 1 - v%2,
					ImageStatuses: map[string]kruisev1alpha1.ImageStatus{"nginx": {Tags: []kruisev1alpha1.ImageTagStatus{{
						Tag: "1.27", Phase: kruisev1alpha1.ImagePhasePulling, Progress: 10 * v, Version: 2, ImageID: "sha256:abc"}}}},
					FirstSyncStatus: &kruisev1alpha1.SyncStatus{SyncAt: created, Status: kruisev1alpha1.SyncStatusSucceeded, Message: "ok"}}
			},
			spec:   func(n *kruisev1alpha1.NodeImage) any { return n.Spec },
			status: func(n *kruisev1alpha1.NodeImage) any { return n.Status },
		})
	})

	t.Run("defaults", func(t *testing.T) {
		j, err := apps.ImagePullJobs("default").Create(ctx, &kruisev1alpha1.ImagePullJob{ObjectMeta: metav1.ObjectMeta{Name: "minimal"},
			Spec: kruisev1alpha1.ImagePullJobSpec{Image: "nginx"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ImagePullJob: %v", err)
		}
		if p := j.Spec.PullPolicy; j.Spec.CompletionPolicy.Type != kruisev1alpha1.Always || p == nil || *p.TimeoutSeconds != 600 ||
			*p.BackoffLimit != 3 || j.Spec.ImagePullPolicy != kruisev1alpha1.PullIfNotPresent || j.Spec.Parallelism != nil {
			t.Errorf("ImagePullJob defaults: %+v; want completionPolicy Always, pullPolicy 600/3, imagePullPolicy IfNotPresent, no parallelism", j.Spec)
		}
		l, err := apps.ImageListPullJobs("default").Create(ctx, &kruisev1alpha1.ImageListPullJob{ObjectMeta: metav1.ObjectMeta{Name: "minimal"},
			Spec: kruisev1alpha1.ImageListPullJobSpec{Images: []string{"nginx"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ImageListPullJob: %v", err)
		}
		if p := l.Spec.PullPolicy; l.Spec.CompletionPolicy.Type != kruisev1alpha1.Always || p == nil || *p.TimeoutSeconds != 600 ||
			*p.BackoffLimit != 3 || l.Spec.ImagePullPolicy != "" {
			t.Errorf("ImageListPullJob defaults: %+v", l.Spec)
		}
		before := time.Now().Add(-2 * time.Second)
		n, err := apps.NodeImages().Create(ctx, &kruisev1alpha1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-minimal"},
			Spec: kruisev1alpha1.NodeImageSpec{Images: map[string]kruisev1alpha1.ImageSpec{"nginx": {Tags: []kruisev1alpha1.ImageTagSpec{
				{Tag: "b", PullPolicy: &kruisev1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](0)}},
				{Tag: "a", PullPolicy: &kruisev1alpha1.ImageTagPullPolicy{TTLSecondsAfterFinished: ptr.To[int32](0)}},
			}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create NodeImage: %v", err)
		}
		tags := n.Spec.Images["nginx"].Tags
		if tags[0].Tag != "a" || tags[1].Tag != "b" {
			t.Errorf("NodeImage tags not sorted: %+v", tags)
		}
		for _, tag := range tags {
			if tag.CreatedAt == nil || tag.CreatedAt.Time.Before(before) || *tag.PullPolicy.TimeoutSeconds != 600 || *tag.PullPolicy.BackoffLimit != 3 {
				t.Errorf("NodeImage tag %s defaults: createdAt %v, pullPolicy %+v", tag.Tag, tag.CreatedAt, tag.PullPolicy)
			}
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		k := newKubectl(t, kubectlBinary(t), s)
		for _, f := range []string{"imagepulljob.yaml", "imagelistpulljob.yaml", "nodeimage.yaml"} {
			k.mustRun("apply", "-f", examplePath(t, f))
		}
		j, err := apps.ImagePullJobs("default").Get(ctx, "sample-pull", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j.Status = kruisev1alpha1.ImagePullJobStatus{Desired: 4, Active: 2, Succeeded: 1, Failed: 1, Message: "pulling on 2 nodes"}
		if _, err := apps.ImagePullJobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
		n, err := apps.NodeImages().Get(ctx, "inplace-node", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status = kruisev1alpha1.NodeImageStatus{Desired: 1, Pulling: 1}
		if _, err := apps.NodeImages().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}

		// OpenKruise v1.9's printer columns: kubectl reads v1beta1, which has no MESSAGE column.
		out := k.mustRun("get", "imagepulljobs", "sample-pull")
		if header, rows := table(t, out); strings.Join(header, " ") != "NAME TOTAL ACTIVE SUCCEED FAILED AGE" ||
			len(rows) != 1 || strings.Join(rows[0][:5], " ") != "sample-pull 4 2 1 1" {
			t.Errorf("kubectl get imagepulljobs:\n%s", out)
		}
		// v1alpha1's, in its order (MESSAGE after AGE).
		out = k.mustRun("get", "imagepulljobs.v1alpha1.apps.kruise.io", "sample-pull")
		if header, rows := table(t, out); strings.Join(header, " ") != "NAME TOTAL ACTIVE SUCCEED FAILED AGE MESSAGE" ||
			len(rows) != 1 || strings.Join(rows[0][:5], " ") != "sample-pull 4 2 1 1" || !strings.HasSuffix(strings.TrimSpace(out), "pulling on 2 nodes") {
			t.Errorf("kubectl get imagepulljobs:\n%s", out)
		}
		out = k.mustRun("get", "imagelistpulljobs")
		if header, _ := table(t, out); strings.Join(header, " ") != "NAME TOTAL SUCCEEDED COMPLETED AGE" || !strings.Contains(out, "sample-list-pull") {
			t.Errorf("kubectl get imagelistpulljobs:\n%s", out)
		}
		out = k.mustRun("get", "nodeimages", "inplace-node")
		if header, rows := table(t, out); strings.Join(header, " ") != "NAME DESIRED PULLING SUCCEED FAILED AGE" ||
			len(rows) != 1 || strings.Join(rows[0][:5], " ") != "inplace-node 1 1 0 0" {
			t.Errorf("kubectl get nodeimages:\n%s", out)
		}
		// Several kinds at once, as the brief's `kubectl get imagepulljobs,nodeimages`.
		out = k.mustRun("get", "imagepulljobs,nodeimages")
		for _, want := range []string{"imagepulljob.apps.kruise.io/sample-pull", "nodeimage.apps.kruise.io/inplace-node",
			"TOTAL", "DESIRED", "PULLING"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get imagepulljobs,nodeimages lacks %q:\n%s", want, out)
			}
		}
		if out := strings.Join(strings.Fields(k.mustRun("explain", "imagepulljob.spec.completionPolicy")), " "); !strings.Contains(out, "activeDeadlineSeconds") {
			t.Errorf("kubectl explain imagepulljob.spec.completionPolicy:\n%s", out)
		}
		_, stderr, err := k.run("patch", "imagepulljob", "sample-pull", "--type=merge", "-p", `{"spec":{"parallelism":"50%"}}`)
		if err == nil || !strings.Contains(stderr, "spec.parallelism") {
			t.Errorf("parallelism 50%%: err %v, stderr %s; want a refusal naming spec.parallelism", err, stderr)
		}
	})
}

// TestImagePullValidation: bad ImagePullJobs, ImageListPullJobs and NodeImages are refused with
// 422 naming each offending field, on create, update and status update.
func TestImagePullValidation(t *testing.T) {
	s, ctx := parallelServer(t)
	apps := s.Client.AppsV1alpha1()

	jobs := apps.ImagePullJobs("default")
	expectInvalidCreates(t, ctx, "ImagePullJob", func() *appsv1alpha1.ImagePullJob { return newImagePullJob("bad") }, jobs.Create, []invalidCase[*appsv1alpha1.ImagePullJob]{
		{"bad image", func(j *appsv1alpha1.ImagePullJob) { j.Spec.Image = "Not A/Reference" }, []string{"spec.image"}},
		{"no image", func(j *appsv1alpha1.ImagePullJob) { j.Spec.Image = "" }, []string{"spec.image"}},
		{"names and labels", func(j *appsv1alpha1.ImagePullJob) { j.Spec.Selector.MatchLabels = map[string]string{"a": "b"} },
			[]string{"spec.selector.names"}},
		{"duplicate node", func(j *appsv1alpha1.ImagePullJob) { j.Spec.Selector.Names = []string{"n", "n"} },
			[]string{"spec.selector.names[1]"}},
		{"selector and podSelector", func(j *appsv1alpha1.ImagePullJob) {
			j.Spec.PodSelector = &appsv1alpha1.ImagePullJobPodSelector{}
		}, []string{"spec.podSelector"}},
		{"percent parallelism", func(j *appsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromString("20%")) },
			[]string{"spec.parallelism"}},
		{"negative parallelism", func(j *appsv1alpha1.ImagePullJob) { j.Spec.Parallelism = ptr.To(intstr.FromInt32(-1)) },
			[]string{"spec.parallelism"}},
		{"completion type", func(j *appsv1alpha1.ImagePullJob) { j.Spec.CompletionPolicy.Type = "Later" },
			[]string{"spec.completionPolicy.type"}},
		{"deadline with Never", func(j *appsv1alpha1.ImagePullJob) {
			j.Spec.CompletionPolicy = appsv1alpha1.CompletionPolicy{Type: appsv1alpha1.Never, ActiveDeadlineSeconds: ptr.To[int64](900)}
		}, []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"deadline below the pull timeout", func(j *appsv1alpha1.ImagePullJob) {
			j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](30)
		}, []string{"spec.completionPolicy.activeDeadlineSeconds"}},
		{"negative backoff and timeout", func(j *appsv1alpha1.ImagePullJob) {
			j.Spec.PullPolicy = &appsv1alpha1.PullPolicy{BackoffLimit: ptr.To[int32](-1), TimeoutSeconds: ptr.To[int32](-5)}
		}, []string{"spec.pullPolicy.backoffLimit", "spec.pullPolicy.timeoutSeconds"}},
		{"imagePullPolicy", func(j *appsv1alpha1.ImagePullJob) { j.Spec.ImagePullPolicy = "Never" }, []string{"spec.imagePullPolicy"}},
	})
	j, err := jobs.Create(ctx, newImagePullJob("good"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j.Spec.PullSecrets = []string{"another"}
	_, err = jobs.Update(ctx, j, metav1.UpdateOptions{})
	expectInvalid(t, err, "spec.pullSecrets")
	j.Spec.PullSecrets = nil
	j.Status.Failed = -1
	_, err = jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.failed")

	lists := apps.ImageListPullJobs("default")
	for _, tc := range []struct {
		name   string
		images []string
		fields []string
	}{
		{"no images", nil, []string{"spec.images"}},
		{"duplicate", []string{"nginx", "nginx"}, []string{"spec.images[1]"}},
		{"bad image", []string{"nginx", "UPPER:case"}, []string{"spec.images[1]"}},
	} {
		t.Run("ImageListPullJob/"+tc.name, func(t *testing.T) {
			l := newImageListPullJob("bad")
			l.Spec.Images = tc.images
			_, err := lists.Create(ctx, l, metav1.CreateOptions{})
			expectInvalid(t, err, tc.fields...)
		})
	}

	nodes := apps.NodeImages()
	expectInvalidCreates(t, ctx, "NodeImage", func() *appsv1alpha1.NodeImage { return newNodeImage("node-bad") }, nodes.Create, []invalidCase[*appsv1alpha1.NodeImage]{
		{"duplicate tag", func(n *appsv1alpha1.NodeImage) {
			img := n.Spec.Images["inplace.local/app"]
			img.Tags = append(img.Tags, img.Tags[0])
			n.Spec.Images["inplace.local/app"] = img
		}, []string{"spec.images[inplace.local/app].tags[1].tag"}},
		{"negative version", func(n *appsv1alpha1.NodeImage) { n.Spec.Images["inplace.local/app"].Tags[0].Version = -1 },
			[]string{"spec.images[inplace.local/app].tags[0].version"}},
		{"no ttl", func(n *appsv1alpha1.NodeImage) { n.Spec.Images["inplace.local/app"].Tags[0].PullPolicy = nil },
			[]string{"spec.images[inplace.local/app].tags[0].pullPolicy.ttlSecondsAfterFinished"}},
		{"image name with its tag", func(n *appsv1alpha1.NodeImage) {
			n.Spec.Images["nginx:1.27"] = n.Spec.Images["inplace.local/app"]
		}, []string{"spec.images[nginx:1.27]"}},
		{"bad node name", func(n *appsv1alpha1.NodeImage) { n.Name = "Node_1" }, []string{"metadata.name"}},
	})
	n, err := nodes.Create(ctx, newNodeImage("node-good"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.ImageStatuses = map[string]appsv1alpha1.ImageStatus{"inplace.local/app": {Tags: []appsv1alpha1.ImageTagStatus{
		{Tag: "v2", Phase: "Stuck", Progress: 120}}}}
	_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
	expectInvalid(t, err, "status.imageStatuses[inplace.local/app].tags[0].phase", "status.imageStatuses[inplace.local/app].tags[0].progress")
}
