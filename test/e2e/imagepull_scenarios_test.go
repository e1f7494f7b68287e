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
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/imagepull"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

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

// TestImagePullJobPullSecrets: an image of a repository that asks basic auth fails on every node
// without a pull secret and with a Secret of a wrong password (the registry's 401 in each
// NodeImage), and once that same Secret holds the right password the next job pulls it on every
// node: the daemon reads the Secret when it pulls.
func TestImagePullJobPullSecrets(t *testing.T) {
	reg, nodes := framework.RegistryNodes(t)
	user, password := privateRegistryAuth(t)
	ctx := framework.Context(t)
	image := reg + "/private/app:v1"
	removeFromNodes(t, ctx, nodes, image)
	waitNoJobPulls(t, ctx, nodes, image)
	ns := framework.NewNamespace(t, ctx, "imagepull-secret")
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

	secret, err := framework.Kube.CoreV1().Secrets(ns).Create(ctx, dockerConfigSecret(ns, "registry-login", reg, user, "wrong-"+password), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failsUnauthorized(createPullJob(t, ctx, pullJob(ns, "wrong-password", image, once, withSecret)))

	right := dockerConfigSecret(ns, "registry-login", reg, user, password)
	secret.Data = right.Data
	if _, err := framework.Kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := createPullJob(t, ctx, pullJob(ns, "right-password", image, once, withSecret))
	if s := job.Status; s.Desired != want || s.Succeeded != want || s.Failed != 0 {
		t.Errorf("job right-password: status %+v, want desired = succeeded = %d", s, want)
	}
	name, _, _ := imagepull.SplitImage(image)
	for _, n := range nodes {
		img := framework.CRIImage(t, ctx, n, image)
		if img == nil {
			t.Errorf("node %s: containerd has no %s after the job with the right password", n.Name, image)
			continue
		}
		_, st := nodeImageTag(t, ctx, n.Name, image)
		if st == nil || st.Phase != v1alpha1.ImagePhaseSucceeded || !strings.HasSuffix(st.ImageID, "@"+img.Id) {
			t.Errorf("node %s: NodeImage status %+v, want Succeeded with image id ...@%s", n.Name, st, img.Id)
		}
		ni, err := framework.Inplace.AppsV1alpha1().NodeImages().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if refs := ni.Spec.Images[name].PullSecrets; !slices.Contains(refs, v1alpha1.ReferenceObject{Namespace: ns, Name: "registry-login"}) {
			t.Errorf("node %s: NodeImage names pull secrets %v, want the job's %s/registry-login", n.Name, refs, ns)
		}
	}
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
	reg, nodes := framework.RegistryNodes(t)
	node2 := framework.SecondNode(t)
	user, password := privateRegistryAuth(t)
	ctx := framework.Context(t)
	image := reg + "/private/app:v1"
	removeFromNodes(t, ctx, nodes, image)
	waitNoJobPulls(t, ctx, nodes, image)
	ns := framework.NewNamespace(t, ctx, "imagepull-never")
	key := "e2e.inplace.dev/pull-" + ns
	labelNode(t, ctx, nodes[0].Name, key, "yes")
	secret, err := framework.Kube.CoreV1().Secrets(ns).Create(ctx, dockerConfigSecret(ns, "registry-login", reg, user, "wrong-"+password), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

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
	secret.Data = dockerConfigSecret(ns, "registry-login", reg, user, password).Data
	if _, err := framework.Kube.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
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
	reg, nodes := framework.RegistryNodes(t)
	ctx := framework.Context(t)
	image := reg + "/remote/app:v1"
	removeFromNodes(t, ctx, nodes, image)
	ns := framework.NewNamespace(t, ctx, "imagepull-two")
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
