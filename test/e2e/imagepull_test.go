package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// Image pre-pull on the local cluster, as OpenKruise's test/e2e/apps/pullimages.go: ImagePullJobs
// and ImageListPullJobs written by inplace-controller into the NodeImages of the nodes, pulled
// by each node's inplace-daemon through its containerd from the local registry
// (registry.inplace.local:5000).

// pullJobTimeout bounds a job of the local registry's small images on both nodes (measured: a
// few seconds).
const pullJobTimeout = 2 * time.Minute

// pullJob is an ImagePullJob of image on every node, both at once, completing (Always).
func pullJob(ns, name, image string, mutate ...func(*v1alpha1.ImagePullJob)) *v1alpha1.ImagePullJob {
	job := &v1alpha1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ImagePullJobSpec{Image: image, ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			Parallelism:      ptr.To(intstr.FromInt32(2)),
			PullPolicy:       &v1alpha1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](1)},
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always},
		}},
	}
	for _, m := range mutate {
		m(job)
	}
	return job
}

// createPullJob creates the job and waits until it completed.
func createPullJob(t *testing.T, ctx context.Context, job *v1alpha1.ImagePullJob) *v1alpha1.ImagePullJob {
	t.Helper()
	if _, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ImagePullJob %s: %v", job.Name, err)
	}
	return waitPullJobCompleted(t, ctx, job.Namespace, job.Name)
}

func waitPullJobCompleted(t *testing.T, ctx context.Context, ns, name string) *v1alpha1.ImagePullJob {
	t.Helper()
	return waitPullJob(t, ctx, ns, name, "completed", func(s v1alpha1.ImagePullJobStatus) bool { return s.CompletionTime != nil })
}

// startImagePull begins a test of pulling the local registry's image at path (remote/app:v1): the
// test's context, a namespace of its own, the nodes, and the image's reference, removed from
// every node and asked for by no earlier test's job (whose namespace may still be going away: its
// job would own the image's tag with the test's).
func startImagePull(t *testing.T, namespace, path string) (context.Context, string, []framework.LocalNode, string) {
	t.Helper()
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	image := reg + "/" + path
	removeFromNodes(t, ctx, nodes, image)
	waitNoJobPulls(t, ctx, nodes, image)
	return ctx, framework.NewNamespace(t, ctx, namespace), nodes, image
}

// nodeImageTag is what node's NodeImage reports for image (its spec's tag and status), failing
// the test when the spec lacks it.
func nodeImageTag(t *testing.T, ctx context.Context, node, image string) (v1alpha1.ImageTagSpec, *v1alpha1.ImageTagStatus) {
	t.Helper()
	name, tag, err := imagepull.SplitImage(image)
	if err != nil {
		t.Fatal(err)
	}
	ni, err := framework.Inplace.AppsV1alpha1().NodeImages().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("NodeImage %s: %v", node, err)
	}
	var spec *v1alpha1.ImageTagSpec
	for i, ts := range ni.Spec.Images[name].Tags {
		if ts.Tag == tag {
			spec = &ni.Spec.Images[name].Tags[i]
		}
	}
	if spec == nil {
		t.Fatalf("NodeImage %s asks for no %s: spec %+v", node, image, ni.Spec.Images[name])
	}
	for i, ts := range ni.Status.ImageStatuses[name].Tags {
		if ts.Tag == tag {
			return *spec, &ni.Status.ImageStatuses[name].Tags[i]
		}
	}
	return *spec, nil
}

// removeFromNodes removes a registry-only image (remote/app, a distinct image id) from every
// node, before and after the test, so that a pull has something to do.
func removeFromNodes(t *testing.T, ctx context.Context, nodes []framework.LocalNode, images ...string) {
	t.Helper()
	for _, n := range nodes {
		for _, image := range images {
			if framework.CRIImage(t, ctx, n, image) == nil {
				continue
			}
			if err := framework.RemoveCRIImage(ctx, n, image); err != nil {
				t.Fatalf("removing %s from %s: %v", image, n.Name, err)
			}
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range nodes {
			for _, image := range images {
				if err := framework.RemoveCRIImage(ctx, n, image); err != nil {
					t.Logf("removing %s from %s: %v", image, n.Name, err)
				}
			}
		}
	})
}

func nodeNames(nodes []framework.LocalNode) []string {
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names
}

// TestImagePullNodeImages: every node of the cluster has its NodeImage, named after it.
func TestImagePullNodeImages(t *testing.T) {
	ctx := framework.Context(t)
	nodes, err := framework.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		framework.Poll(t, ctx, time.Minute, "the NodeImage of "+n.Name, func(ctx context.Context) (bool, error) {
			_, err := framework.Inplace.AppsV1alpha1().NodeImages().Get(ctx, n.Name, metav1.GetOptions{})
			return err == nil, err
		})
	}
}

// TestImagePullJobPullsOnEveryNode: an ImagePullJob of a registry image no node has ends
// Succeeded on every node, and each node's containerd has the image afterwards, with the id its
// NodeImage reports; node 1's inplace-daemon counts the pull on /metrics.
func TestImagePullJobPullsOnEveryNode(t *testing.T) {
	ctx, ns, nodes, image := startImagePull(t, "imagepull", "remote/app:v1")
	for _, n := range nodes {
		if img := framework.CRIImage(t, ctx, n, image); img != nil {
			t.Fatalf("node %s has %s before the job", n.Name, image)
		}
	}
	daemon := framework.ProgramAddress(t, "inplace-daemon") // node 1's
	const pulled = `inplace_daemon_imagepuller_pulls_total{result="succeeded"}`
	pulledBefore := framework.MetricValue(t, ctx, daemon, pulled)

	start := time.Now()
	job := createPullJob(t, ctx, pullJob(ns, "remote-v1", image))
	t.Logf("ImagePullJob completed in %.1fs: %+v", time.Since(start).Seconds(), job.Status)
	want := int32(len(nodes))
	if s := job.Status; s.Desired != want || s.Succeeded != want || s.Failed != 0 || s.Active != 0 || len(s.FailedNodes) != 0 {
		t.Errorf("job status %+v: want desired = succeeded = %d", s, want)
	}
	if n := framework.MetricValue(t, ctx, daemon, pulled); n != pulledBefore+1 {
		t.Errorf("node 1's inplace-daemon: %s %v, was %v: want one pull more", pulled, n, pulledBefore)
	}
	expectPulledOnNodes(t, ctx, nodes, image, "the job", func(n framework.LocalNode, spec v1alpha1.ImageTagSpec, st *v1alpha1.ImageTagStatus) {
		if st.Version != spec.Version || st.Progress != 100 || st.StartTime == nil || st.CompletionTime == nil {
			t.Errorf("node %s: NodeImage status %+v (spec version %d): want the version's, 100%%, with start and completion times",
				n.Name, st, spec.Version)
		}
	})
}

// expectPulledOnNodes: after the job every node's containerd has the image, and the node's
// NodeImage reports its tag Succeeded with that image's id; more (if not nil) checks the rest of
// each such node's tag.
func expectPulledOnNodes(t *testing.T, ctx context.Context, nodes []framework.LocalNode, image, job string,
	more func(n framework.LocalNode, spec v1alpha1.ImageTagSpec, st *v1alpha1.ImageTagStatus)) {
	t.Helper()
	for _, n := range nodes {
		img := framework.CRIImage(t, ctx, n, image)
		if img == nil {
			t.Errorf("node %s: containerd has no %s after %s", n.Name, image, job)
			continue
		}
		spec, st := nodeImageTag(t, ctx, n.Name, image)
		if st == nil || st.Phase != v1alpha1.ImagePhaseSucceeded || !strings.HasSuffix(st.ImageID, "@"+img.Id) {
			t.Errorf("node %s: NodeImage status %+v, want Succeeded with image id ...@%s", n.Name, st, img.Id)
			continue
		}
		if more != nil {
			more(n, spec, st)
		}
	}
}

// TestImagePullJobMissingTag: a tag the registry lacks fails on every node after 1+backoffLimit
// attempts; the job lists the nodes as failed, and each NodeImage says why.
func TestImagePullJobMissingTag(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	image := reg + "/app:no-such-tag"
	ns := framework.NewNamespace(t, ctx, "imagepull-missing")

	job := createPullJob(t, ctx, pullJob(ns, "missing", image))
	want := int32(len(nodes))
	if s := job.Status; s.Desired != want || s.Failed != want || s.Succeeded != 0 || !slices.Equal(s.FailedNodes, nodeNames(nodes)) {
		t.Errorf("job status %+v: want %d failed nodes %v", s, want, nodeNames(nodes))
	}
	for _, n := range nodes {
		spec, st := nodeImageTag(t, ctx, n.Name, image)
		if st == nil || st.Phase != v1alpha1.ImagePhaseFailed || st.Version != spec.Version || !strings.Contains(st.Message, "not found") {
			t.Errorf("node %s: NodeImage status %+v: want Failed with the runtime's not found", n.Name, st)
			continue
		}
		t.Logf("node %s: %s", n.Name, st.Message)
		if img := framework.CRIImage(t, ctx, n, image); img != nil {
			t.Errorf("node %s has an image %s (%s)", n.Name, image, img.Id)
		}
	}
}

// TestImagePullJobActiveDeadline: a job whose pulls outlast its activeDeadlineSeconds (a missing
// tag retried many times) completes at the deadline with its nodes failed; the nodes stop
// retrying at the same deadline, which the tag carries.
func TestImagePullJobActiveDeadline(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	image := reg + "/app:missing-until-deadline"
	ns := framework.NewNamespace(t, ctx, "imagepull-deadline")
	const deadline = 8
	job := createPullJob(t, ctx, pullJob(ns, "deadline", image, func(j *v1alpha1.ImagePullJob) {
		j.Spec.PullPolicy.BackoffLimit = ptr.To[int32](20)  // 1+2+4+8+16 s of backoff: well past the deadline
		j.Spec.PullPolicy.TimeoutSeconds = ptr.To[int32](5) // validation: no longer than the deadline
		j.Spec.CompletionPolicy.ActiveDeadlineSeconds = ptr.To[int64](deadline)
	}))
	s := job.Status
	if took := s.CompletionTime.Sub(s.StartTime.Time); took < deadline*time.Second {
		t.Errorf("job completed %s after its start, before its %ds deadline", took, deadline)
	}
	if s.Message != "job exceeds activeDeadlineSeconds" || s.Failed != int32(len(nodes)) || s.Succeeded != 0 {
		t.Errorf("job status %+v: want every node failed at the deadline", s)
	}
	for _, n := range nodes {
		framework.Poll(t, ctx, time.Minute, "node "+n.Name+" giving up at the deadline", func(ctx context.Context) (bool, error) {
			spec, st := nodeImageTag(t, ctx, n.Name, image)
			if spec.PullPolicy == nil || ptr.Deref(spec.PullPolicy.ActiveDeadlineSeconds, 0) != deadline {
				return false, fmt.Errorf("tag pull policy %+v: want the job's deadline", spec.PullPolicy)
			}
			return st != nil && st.Phase == v1alpha1.ImagePhaseFailed && strings.Contains(st.Message, "activeDeadlineSeconds"),
				fmt.Errorf("status %+v", st)
		})
	}
}

// TestImageListPullJobCompletes: an ImageListPullJob of two registry images makes one
// ImagePullJob each, and completes with both succeeded; the nodes have both images.
func TestImageListPullJobCompletes(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	images := []string{reg + "/remote/app:v1", reg + "/remote/app:v2"}
	removeFromNodes(t, ctx, nodes, images...)
	ns := framework.NewNamespace(t, ctx, "imagelistpull")
	list := &v1alpha1.ImageListPullJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"},
		Spec: v1alpha1.ImageListPullJobSpec{Images: images, ImagePullJobTemplate: v1alpha1.ImagePullJobTemplate{
			Parallelism:      ptr.To(intstr.FromInt32(2)),
			CompletionPolicy: v1alpha1.CompletionPolicy{Type: v1alpha1.Always},
		}},
	}
	if _, err := framework.Inplace.AppsV1alpha1().ImageListPullJobs(ns).Create(ctx, list, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ImageListPullJob: %v", err)
	}
	framework.Poll(t, ctx, pullJobTimeout, "ImageListPullJob completed", func(ctx context.Context) (bool, error) {
		var err error
		list, err = framework.Inplace.AppsV1alpha1().ImageListPullJobs(ns).Get(ctx, "two", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return list.Status.CompletionTime != nil, fmt.Errorf("status %+v", list.Status)
	})
	if s := list.Status; s.Desired != 2 || s.Completed != 2 || s.Succeeded != 2 || s.Active != 0 || len(s.FailedImageStatuses) != 0 {
		t.Errorf("list status %+v: want 2 desired, completed and succeeded", s)
	}
	jobs, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pulled []string
	for _, j := range jobs.Items {
		pulled = append(pulled, j.Spec.Image)
	}
	slices.Sort(pulled)
	if !slices.Equal(pulled, images) {
		t.Errorf("ImagePullJobs of %v, want one for each of %v", pulled, images)
	}
	for _, n := range nodes {
		for _, image := range images {
			if framework.CRIImage(t, ctx, n, image) == nil {
				t.Errorf("node %s: containerd has no %s after the list job", n.Name, image)
			}
		}
	}
}

// TestImagePullKubectlColumns: kubectl get prints OpenKruise's columns of ImagePullJobs and
// NodeImages, with their numbers.
func TestImagePullKubectlColumns(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	ctx, ns := framework.Start(t, "imagepull-kubectl")
	// app:v1 of the registry is the imported inplace.local/app:v1 (one image id): every node has
	// it, so the job succeeds at once without a pull.
	createPullJob(t, ctx, pullJob(ns, "cols", reg+"/app:v1"))

	// At v1alpha1, with its MESSAGE column (OpenKruise v1.9 dropped it from v1beta1, which kubectl
	// reads by default).
	out := framework.MustKubectl(t, ctx, "", "-n", ns, "get", "imagepulljobs.v1alpha1.apps.kruise.io")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE", "MESSAGE"}) {
		t.Fatalf("kubectl get imagepulljobs:\n%s", out)
	}
	n := fmt.Sprint(len(nodes))
	if f := strings.Fields(lines[1]); len(f) < 5 || !slices.Equal(f[:5], []string{"cols", n, "0", n, "0"}) ||
		!strings.Contains(lines[1], "job has completed") {
		t.Errorf("kubectl get imagepulljobs: row %q, want cols %s 0 %s 0 ... job has completed", lines[1], n, n)
	}
	out = framework.MustKubectl(t, ctx, "", "-n", ns, "get", "imagepulljobs")
	if lines = strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "TOTAL", "ACTIVE", "SUCCEED", "FAILED", "AGE"}) {
		t.Errorf("kubectl get imagepulljobs (v1beta1):\n%s", out)
	}

	out = framework.MustKubectl(t, ctx, "", "get", "nodeimages")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if !slices.Equal(strings.Fields(lines[0]), []string{"NAME", "DESIRED", "PULLING", "SUCCEED", "FAILED", "AGE"}) {
		t.Fatalf("kubectl get nodeimages:\n%s", out)
	}
	for _, node := range nodeNames(nodes) {
		if !slices.ContainsFunc(lines[1:], func(l string) bool { return strings.Fields(l)[0] == node }) {
			t.Errorf("kubectl get nodeimages: no row for node %s:\n%s", node, out)
		}
	}
	t.Logf("kubectl get imagepulljobs,nodeimages:\n%s", framework.MustKubectl(t, ctx, "", "-n", ns, "get", "imagepulljobs,nodeimages"))
}

// OpenKruise's remaining image pre-pull scenarios (test/e2e/apps/v1alpha1/pullimages.go: "pull
// image with secret", "never completion pull job with updated pull secrets", "create a never job
// to pull an image on all nodes", "create two jobs to pull a same image") on the local cluster's
// registry and containerds.
//
// Where inplace differs from OpenKruise, by design: OpenKruise copies a job's pull secrets into
// its daemon's namespace and keeps the copies in sync; inplace's NodeImages name the job's own
// Secrets and each node's inplace-daemon reads them when it pulls, so an updated Secret is what
// the next pull uses, with no copy to go stale.

// dockerConfigSecret is a kubernetes.io/dockerconfigjson Secret with user:password for registry.
func dockerConfigSecret(ns, name, registry, user, password string) *corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{
		registry: map[string]string{"username": user, "password": password, "auth": auth},
	}})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
}

// privateRegistryAuth is the user and password the registry's private/* repositories ask
// (hack/lib/local.sh REGISTRY_PRIVATE_*, written to _output/local/env by local-up).
func privateRegistryAuth(t *testing.T) (string, string) {
	t.Helper()
	vars, err := framework.ReadEnvFile(framework.Repo + "/_output/local/env")
	if err != nil {
		t.Fatal(err)
	}
	user, password, ok := strings.Cut(vars["INPLACE_REGISTRY_PRIVATE_AUTH"], ":")
	if !ok {
		t.Fatal("_output/local/env has no INPLACE_REGISTRY_PRIVATE_AUTH: the registry has no private repositories (hack/local-up.d/05-registry.sh)")
	}
	return user, password
}

// startPrivatePull begins a test of the registry's private/app:v1, which asks basic auth (see
// startImagePull), with a Secret registry-login in the namespace that holds a wrong password;
// correctSecret puts the right one in it.
func startPrivatePull(t *testing.T, namespace string) (ctx context.Context, ns string, nodes []framework.LocalNode, image string, correctSecret func()) {
	t.Helper()
	user, password := privateRegistryAuth(t)
	ctx, ns, nodes, image = startImagePull(t, namespace, "private/app:v1")
	registry, _, _ := strings.Cut(image, "/")
	secrets := framework.Kube.CoreV1().Secrets(ns)
	secret, err := secrets.Create(ctx, dockerConfigSecret(ns, "registry-login", registry, user, "wrong-"+password), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Secret registry-login: %v", err)
	}
	return ctx, ns, nodes, image, func() {
		t.Helper()
		secret.Data = dockerConfigSecret(ns, "registry-login", registry, user, password).Data
		if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("putting the right password in Secret registry-login: %v", err)
		}
	}
}

// TestImagePullJobPullSecrets: an image of a repository that asks basic auth fails on every node
// without a pull secret and with a Secret of a wrong password (the registry's 401 in each
// NodeImage), and once that same Secret holds the right password the next job pulls it on every
// node: the daemon reads the Secret when it pulls.
func TestImagePullJobPullSecrets(t *testing.T) {
	ctx, ns, nodes, image, correctSecret := startPrivatePull(t, "imagepull-secret")
	want := int32(len(nodes))
	once := func(j *v1alpha1.ImagePullJob) { j.Spec.PullPolicy.BackoffLimit = ptr.To[int32](0) }
	withSecret := func(j *v1alpha1.ImagePullJob) { j.Spec.PullSecrets = []string{"registry-login"} }

	// failsUnauthorized: the job fails on every node with the registry's refusal, and no node has
	// the image.
	failsUnauthorized := func(job *v1alpha1.ImagePullJob) {
		t.Helper()
		if s := job.Status; s.Desired != want || s.Failed != want || s.Succeeded != 0 {
			t.Errorf("job %s: status %+v, want %d failed nodes", job.Name, s, want)
		}
		for _, n := range nodes {
			_, st := nodeImageTag(t, ctx, n.Name, image)
			if st == nil || st.Phase != v1alpha1.ImagePhaseFailed || !strings.Contains(st.Message, "401 Unauthorized") {
				t.Errorf("job %s, node %s: NodeImage status %+v, want Failed with the registry's 401 Unauthorized", job.Name, n.Name, st)
			} else {
				t.Logf("job %s, node %s: %s", job.Name, n.Name, st.Message)
			}
			if img := framework.CRIImage(t, ctx, n, image); img != nil {
				t.Fatalf("job %s: node %s has %s (%s) without the credentials", job.Name, n.Name, image, img.Id)
			}
		}
	}

	failsUnauthorized(createPullJob(t, ctx, pullJob(ns, "anonymous", image, once)))
	failsUnauthorized(createPullJob(t, ctx, pullJob(ns, "wrong-password", image, once, withSecret)))
	correctSecret()
	job := createPullJob(t, ctx, pullJob(ns, "right-password", image, once, withSecret))
	if s := job.Status; s.Desired != want || s.Succeeded != want || s.Failed != 0 {
		t.Errorf("job right-password: status %+v, want desired = succeeded = %d", s, want)
	}
	name, _, _ := imagepull.SplitImage(image)
	expectPulledOnNodes(t, ctx, nodes, image, "the job with the right password", func(n framework.LocalNode, _ v1alpha1.ImageTagSpec, _ *v1alpha1.ImageTagStatus) {
		ni, err := framework.Inplace.AppsV1alpha1().NodeImages().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if refs := ni.Spec.Images[name].PullSecrets; !slices.Contains(refs, v1alpha1.ReferenceObject{Namespace: ns, Name: "registry-login"}) {
			t.Errorf("node %s: NodeImage names pull secrets %v, want the job's %s/registry-login", n.Name, refs, ns)
		}
	})
}

// labelNode sets (value != "") or removes a label of a node, and removes it when the test ends.
func labelNode(t *testing.T, ctx context.Context, node, key, value string) {
	t.Helper()
	patch := func(ctx context.Context, v any) error {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
		_, err := framework.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
	var v any
	if value != "" {
		v = value
	}
	if err := patch(ctx, v); err != nil {
		t.Fatalf("labelling node %s %s=%s: %v", node, key, value, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := patch(ctx, nil); err != nil {
			t.Errorf("removing label %s of node %s: %v", key, node, err)
		}
	})
}

// waitPullJob polls the job until done accepts its status.
func waitPullJob(t *testing.T, ctx context.Context, ns, name, what string, done func(v1alpha1.ImagePullJobStatus) bool) *v1alpha1.ImagePullJob {
	t.Helper()
	var job *v1alpha1.ImagePullJob
	framework.Poll(t, ctx, pullJobTimeout, "ImagePullJob "+name+": "+what, func(ctx context.Context) (bool, error) {
		var err error
		job, err = framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return done(job.Status), fmt.Errorf("status %+v", job.Status)
	})
	return job
}

// waitNoJobPulls waits until no NodeImage asks for image: an earlier test's jobs of it are gone.
// A job that joins another's tag pulls with both jobs' Secrets, which would hide what a test of
// credentials is about.
func waitNoJobPulls(t *testing.T, ctx context.Context, nodes []framework.LocalNode, image string) {
	t.Helper()
	for _, n := range nodes {
		waitTagGone(t, ctx, n.Name, image)
	}
}

// waitTagGone waits until node's NodeImage no longer asks for image.
func waitTagGone(t *testing.T, ctx context.Context, node, image string) {
	t.Helper()
	name, tag, err := imagepull.SplitImage(image)
	if err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, time.Minute, "NodeImage "+node+" without "+image, func(ctx context.Context) (bool, error) {
		ni, err := framework.Inplace.AppsV1alpha1().NodeImages().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		tags := ni.Spec.Images[name].Tags
		return !slices.ContainsFunc(tags, func(ts v1alpha1.ImageTagSpec) bool { return ts.Tag == tag }), fmt.Errorf("tags %+v", tags)
	})
}

// TestImagePullJobNeverCompletion: a completionPolicy Never job never completes, all its nodes
// done or not, and takes in a node that comes to match its selector later; that node pulls with
// the job's Secret as it is then (OpenKruise's "never completion pull job with updated pull
// secrets"): its first node failed with a wrong password, the Secret is corrected, the node
// labelled later pulls. The failed node is not retried (OpenKruise neither: a tag's version is
// pulled once). Deleting the job takes its tag off every NodeImage.
func TestImagePullJobNeverCompletion(t *testing.T) {
	node2 := framework.SecondNode(t)
	ctx, ns, nodes, image, correctSecret := startPrivatePull(t, "imagepull-never")
	key := "e2e.inplace.dev/pull-" + ns
	labelNode(t, ctx, nodes[0].Name, key, "yes")

	job := pullJob(ns, "never", image, func(j *v1alpha1.ImagePullJob) {
		j.Spec.CompletionPolicy = v1alpha1.CompletionPolicy{Type: v1alpha1.Never}
		j.Spec.Selector = &v1alpha1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: "yes"}}}
		j.Spec.PullSecrets = []string{"registry-login"}
		j.Spec.PullPolicy.BackoffLimit = ptr.To[int32](0)
	})
	if _, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ImagePullJob: %v", err)
	}
	j := waitPullJob(t, ctx, ns, "never", "failed on the labelled node", func(s v1alpha1.ImagePullJobStatus) bool {
		return s.Desired == 1 && s.Failed == 1
	})
	// An Always job's status would carry its completion time in this very write.
	if s := j.Status; s.CompletionTime != nil || s.Active != 0 || s.Succeeded != 0 || !slices.Equal(s.FailedNodes, []string{nodes[0].Name}) {
		t.Errorf("Never job with its one node failed: status %+v, want no completion time, %s failed", s, nodes[0].Name)
	}
	if _, st := nodeImageTag(t, ctx, nodes[0].Name, image); st == nil || !strings.Contains(st.Message, "401 Unauthorized") {
		t.Errorf("node %s: NodeImage status %+v, want the registry's 401 Unauthorized", nodes[0].Name, st)
	}

	// The Secret is corrected, and a node comes to match: it joins the job and pulls with it.
	correctSecret()
	labelNode(t, ctx, node2, key, "yes")
	j = waitPullJob(t, ctx, ns, "never", "the new node succeeded", func(s v1alpha1.ImagePullJobStatus) bool {
		return s.Desired == 2 && s.Succeeded == 1
	})
	if s := j.Status; s.CompletionTime != nil || s.Failed != 1 || !slices.Equal(s.FailedNodes, []string{nodes[0].Name}) {
		t.Errorf("Never job after the new node's pull: status %+v, want no completion time, %s still failed", s, nodes[0].Name)
	}
	if framework.CRIImage(t, ctx, nodes[1], image) == nil {
		t.Errorf("node %s: containerd has no %s after it joined the job", node2, image)
	}
	if img := framework.CRIImage(t, ctx, nodes[0], image); img != nil {
		t.Errorf("node %s, failed, has %s", nodes[0].Name, image)
	}

	if err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Delete(ctx, "never", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		waitTagGone(t, ctx, n.Name, image)
	}
}

// TestImagePullJobsSameImage: two jobs pulling one image both own its tag on every node and both
// succeed; deleting one leaves the tag to the other, deleting both removes it.
func TestImagePullJobsSameImage(t *testing.T) {
	ctx, ns, nodes, image := startImagePull(t, "imagepull-two", "remote/app:v1")
	want := int32(len(nodes))
	never := func(j *v1alpha1.ImagePullJob) {
		j.Spec.CompletionPolicy = v1alpha1.CompletionPolicy{Type: v1alpha1.Never}
	}

	uids := map[string]types.UID{}
	for _, name := range []string{"first", "second"} {
		created, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Create(ctx, pullJob(ns, name, image, never), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ImagePullJob %s: %v", name, err)
		}
		uids[name] = created.UID
	}
	for name := range uids {
		waitPullJob(t, ctx, ns, name, "succeeded on every node", func(s v1alpha1.ImagePullJobStatus) bool {
			return s.Desired == want && s.Succeeded == want
		})
	}
	owners := func(node string) []types.UID {
		spec, _ := nodeImageTag(t, ctx, node, image)
		var got []types.UID
		for _, r := range spec.OwnerReferences {
			got = append(got, r.UID)
		}
		slices.Sort(got)
		return got
	}
	both := []types.UID{uids["first"], uids["second"]}
	slices.Sort(both)
	for _, n := range nodes {
		if got := owners(n.Name); !slices.Equal(got, both) {
			t.Errorf("node %s: tag owners %v, want both jobs %v", n.Name, got, both)
		}
		if framework.CRIImage(t, ctx, n, image) == nil {
			t.Errorf("node %s: containerd has no %s", n.Name, image)
		}
	}

	if err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, time.Minute, "ImagePullJob first gone", func(ctx context.Context) (bool, error) {
		_, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, "first", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	for _, n := range nodes {
		framework.Poll(t, ctx, time.Minute, "node "+n.Name+": the tag owned by the second job alone", func(ctx context.Context) (bool, error) {
			got := owners(n.Name)
			return slices.Equal(got, []types.UID{uids["second"]}), fmt.Errorf("owners %v", got)
		})
	}
	// The second job, its tag untouched, stays succeeded everywhere.
	if j, err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Get(ctx, "second", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if s := j.Status; s.Desired != want || s.Succeeded != want {
		t.Errorf("second job after the first's deletion: status %+v, want desired = succeeded = %d", s, want)
	}

	if err := framework.Inplace.AppsV1alpha1().ImagePullJobs(ns).Delete(ctx, "second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		waitTagGone(t, ctx, n.Name, image)
	}
}
