package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/inplace-dev/inplace/test/integration/framework"
)

// kubectl runs the real kubectl binary against one server.
type kubectl struct {
	t          *testing.T
	binary     string
	kubeconfig string
	dir        string
}

// kubectlBinary finds kubectl: $KUBECTL, else _output/bin/kubectl of this repository.
func kubectlBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("KUBECTL=%s: %v; run hack/build-kube.sh kubectl", p, err)
		}
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", "_output", "bin", "kubectl"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no kubectl: KUBECTL is not set and %s does not exist; run hack/build-kube.sh kubectl "+
			"(or set KUBECTL to a kubectl binary)", p)
	}
	return p
}

// newKubectl writes a kubeconfig for s in a temporary directory. Standalone mode needs no
// credentials, but a user without any makes kubectl prompt for a username: give it a token.
func newKubectl(t *testing.T, binary string, s *framework.Server) *kubectl {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: standalone
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: standalone
  user:
    token: standalone
contexts:
- name: standalone
  context:
    cluster: standalone
    user: standalone
    namespace: default
current-context: standalone
`, s.Config.Host)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectl{t: t, binary: binary, kubeconfig: kubeconfig, dir: dir}
}

// run runs kubectl and returns its stdout, stderr and error (an *exec.ExitError on a non-zero exit).
func (k *kubectl) run(args ...string) (string, string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.t.Context(), time.Minute)
	defer cancel()
	args = append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.dir, "cache")}, args...)
	cmd := exec.CommandContext(ctx, k.binary, args...)
	cmd.Env = append(os.Environ(), "HOME="+k.dir, "KUBECONFIG="+k.kubeconfig, "KUBECTL_INTERACTIVE_DELETE=false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// mustRun runs kubectl and fails the test on a non-zero exit.
func (k *kubectl) mustRun(args ...string) string {
	k.t.Helper()
	stdout, stderr, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// writeFile writes a file in the kubectl temp dir and returns its path.
func (k *kubectl) writeFile(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// table splits kubectl's table output into the header fields and the rows' fields.
func table(t *testing.T, out string) ([]string, [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no table in %q", out)
	}
	var rows [][]string
	for _, l := range lines[1:] {
		rows = append(rows, strings.Fields(l))
	}
	return strings.Fields(lines[0]), rows
}

// cell returns the text of column of row line, using the header's column offsets (cells may be empty).
func cell(t *testing.T, out string, row int, column string) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	start := strings.Index(header, column)
	if start < 0 || row+1 >= len(lines) {
		t.Fatalf("no column %s or row %d in\n%s", column, row, out)
	}
	end := len(header)
	for i := start + len(column); i < len(header)-1; i++ {
		if header[i] == ' ' && header[i+1] != ' ' {
			end = i + 1
			break
		}
	}
	line := lines[row+1]
	if start >= len(line) {
		return ""
	}
	return strings.TrimSpace(line[start:min(end, len(line))])
}

func TestKubectl(t *testing.T) {
	t.Parallel()
	binary := kubectlBinary(t) // before the server: fail fast without kubectl
	s := framework.StartServer(t)
	k := newKubectl(t, binary, s)
	ctx := testContext(t)
	clone := s.Client.AppsV1alpha1().CloneSets("default")

	t.Run("apply the samples", func(t *testing.T) {
		out := k.mustRun("apply", "-f", examplePath(t, "cloneset.yaml"))
		if !strings.Contains(out, "cloneset.apps.kruise.io/sample created") {
			t.Errorf("kubectl apply cloneset: %q", out)
		}
		out = k.mustRun("apply", "-f", examplePath(t, "sidecarset.yaml"), "-f", examplePath(t, "containerrecreaterequest.yaml"))
		for _, want := range []string{"sidecarset.apps.kruise.io/log-agent created", "containerrecreaterequest.apps.kruise.io/sample-recreate created"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl apply: want %q in %q", want, out)
			}
		}
		cs, err := clone.Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the applied CloneSet: %v", err)
		}
		if *cs.Spec.Replicas != 3 || cs.Spec.Template.Spec.Containers[0].Image != "inplace.local/app:v1" ||
			cs.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
			t.Errorf("the applied CloneSet: replicas %d image %s annotations %v", *cs.Spec.Replicas,
				cs.Spec.Template.Spec.Containers[0].Image, cs.Annotations)
		}

		// Applying again is a no-op; applying a changed manifest patches the object.
		out = k.mustRun("apply", "-f", examplePath(t, "cloneset.yaml"))
		if !strings.Contains(out, "cloneset.apps.kruise.io/sample unchanged") {
			t.Errorf("kubectl apply again: want unchanged, got %q", out)
		}
		manifest, err := os.ReadFile(examplePath(t, "cloneset.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		changed := strings.Replace(string(manifest), "image: inplace.local/app:v1", "image: inplace.local/app:v2", 1)
		if changed == string(manifest) {
			t.Fatal("the sample CloneSet has no image inplace.local/app:v1 to change")
		}
		out = k.mustRun("apply", "-f", k.writeFile("cloneset-v2.yaml", changed))
		if !strings.Contains(out, "cloneset.apps.kruise.io/sample configured") {
			t.Errorf("kubectl apply of a changed manifest: want configured, got %q", out)
		}
		cs, err = clone.Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := cs.Spec.Template.Spec.Containers[0].Image; img != "inplace.local/app:v2" || cs.Generation != 2 {
			t.Errorf("after kubectl apply of v2: image %s generation %d", img, cs.Generation)
		}
	})

	t.Run("get clonesets", func(t *testing.T) {
		out := k.mustRun("get", "clonesets")
		header, rows := table(t, out)
		if want := []string{"NAME", "DESIRED", "UPDATED", "UPDATED_READY", "READY", "TOTAL", "AGE"}; !slices.Equal(header, want) {
			t.Errorf("kubectl get clonesets header: want %v, got %v\n%s", want, header, out)
		}
		if len(rows) != 1 || len(rows[0]) != 7 || rows[0][0] != "sample" || rows[0][1] != "3" {
			t.Errorf("kubectl get clonesets: want one row for sample with 3 desired, got\n%s", out)
		}
		short := k.mustRun("get", "clone")
		if _, rows := table(t, short); len(rows) != 1 || rows[0][0] != "sample" {
			t.Errorf("kubectl get clone (short name):\n%s", short)
		}
		single := k.mustRun("get", "clone", "sample")
		if _, rows := table(t, single); len(rows) != 1 || rows[0][0] != "sample" {
			t.Errorf("kubectl get clone sample:\n%s", single)
		}
		name := k.mustRun("get", "clone", "-o", "name")
		if strings.TrimSpace(name) != "cloneset.apps.kruise.io/sample" {
			t.Errorf("kubectl get clone -o name: %q", name)
		}
		// Unversioned, kubectl reads the group's preferred version, v1beta1, since CloneSet is
		// served there too (as with OpenKruise's master); v1alpha1 when named.
		jsonpath := k.mustRun("get", "clone", "sample", "-o", "jsonpath={.apiVersion} {.spec.updateStrategy.rollingUpdate.podUpdatePolicy}")
		if jsonpath != "apps.kruise.io/v1beta1 InPlaceIfPossible" {
			t.Errorf("kubectl get -o jsonpath: %q", jsonpath)
		}
		jsonpath = k.mustRun("get", "clonesets.v1alpha1.apps.kruise.io", "sample", "-o", "jsonpath={.apiVersion} {.spec.updateStrategy.type}")
		if jsonpath != "apps.kruise.io/v1alpha1 InPlaceIfPossible" {
			t.Errorf("kubectl get clonesets.v1alpha1.apps.kruise.io -o jsonpath: %q", jsonpath)
		}
	})

	// OpenKruise's CRD (and every workload of kube-apiserver) prints AGE last of the default
	// columns and the priority-1 columns after it: NAME ... TOTAL AGE CONTAINERS IMAGES SELECTOR.
	t.Run("get clonesets -o wide", func(t *testing.T) {
		wide := k.mustRun("get", "clonesets.apps.kruise.io", "-o", "wide")
		header, rows := table(t, wide)
		if len(rows) != 1 || !slices.Contains(rows[0], "main") || !slices.Contains(rows[0], "inplace.local/app:v2") {
			t.Errorf("kubectl get clonesets -o wide: want the container main and image inplace.local/app:v2 in\n%s", wide)
		}
		if want := []string{"NAME", "DESIRED", "UPDATED", "UPDATED_READY", "READY", "TOTAL", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}; !slices.Equal(header, want) {
			t.Errorf("kubectl get clonesets -o wide header: want %v (as OpenKruise), got %v", want, header)
		}
	})

	t.Run("get sidecarsets", func(t *testing.T) {
		out := k.mustRun("get", "sidecarsets")
		header, rows := table(t, out)
		if want := []string{"NAME", "MATCHED", "UPDATED", "READY", "AGE"}; !slices.Equal(header, want) {
			t.Errorf("kubectl get sidecarsets header: want %v, got %v\n%s", want, header, out)
		}
		if len(rows) != 1 || rows[0][0] != "log-agent" || len(rows[0]) != 5 {
			t.Errorf("kubectl get sidecarsets:\n%s", out)
		}
		// Cluster-scoped: -A lists it without a NAMESPACE column.
		if all := k.mustRun("get", "sidecarsets", "-A"); strings.Contains(all, "NAMESPACE") {
			t.Errorf("kubectl get sidecarsets -A shows a namespace column:\n%s", all)
		}
	})

	t.Run("get crr", func(t *testing.T) {
		out := k.mustRun("get", "crr")
		header, rows := table(t, out)
		if want := []string{"NAME", "PHASE", "POD", "NODE", "AGE"}; !slices.Equal(header, want) {
			t.Errorf("kubectl get crr header: want %v, got %v\n%s", want, header, out)
		}
		if len(rows) != 1 || rows[0][0] != "sample-recreate" {
			t.Fatalf("kubectl get crr:\n%s", out)
		}
		if pod := cell(t, out, 0, "POD"); pod != "sample-abcde" {
			t.Errorf("kubectl get crr: POD column %q, want sample-abcde\n%s", pod, out)
		}
		long := k.mustRun("get", "containerrecreaterequests")
		if _, rows := table(t, long); len(rows) != 1 || rows[0][0] != "sample-recreate" {
			t.Errorf("kubectl get containerrecreaterequests:\n%s", long)
		}
	})

	t.Run("explain", func(t *testing.T) {
		// Descriptions are wrapped: compare with whitespace collapsed.
		// v1alpha1 named: unversioned, kubectl explains the preferred version, v1beta1.
		out := strings.Join(strings.Fields(k.mustRun("explain", "--api-version=apps.kruise.io/v1alpha1", "cloneset.spec.updateStrategy")), " ")
		for _, want := range []string{
			"KIND: CloneSet", "GROUP: apps.kruise.io", "VERSION: v1alpha1",
			"partition <IntOrString>", "maxUnavailable <IntOrString>", "maxSurge <IntOrString>",
			"inPlaceUpdateStrategy <InPlaceUpdateStrategy>", "paused <boolean>", "type <string>",
			"UpdateStrategy says how Pods are updated to a new revision",
			"Partition is the number or percentage of Pods kept at the old revision. Defaults to 0.",
			"MaxUnavailable is the most Pods that may be unavailable during the update, a number or a percentage. Defaults to 20%.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain cloneset.spec.updateStrategy: want %q in\n%s", want, out)
			}
		}
		out = strings.Join(strings.Fields(k.mustRun("explain", "crr.spec")), " ")
		for _, want := range []string{"KIND: ContainerRecreateRequest", "podName <string> -required-",
			"containers <[]ContainerRecreateRequestContainer> -required-", "activeDeadlineSeconds <integer>", "ttlSecondsAfterFinished <integer>"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain crr.spec: want %q in\n%s", want, out)
			}
		}
	})

	t.Run("scale", func(t *testing.T) {
		for _, replicas := range []int32{1, 3} {
			out := k.mustRun("scale", "clone/sample", fmt.Sprintf("--replicas=%d", replicas))
			if !strings.Contains(out, "cloneset.apps.kruise.io/sample scaled") {
				t.Errorf("kubectl scale: %q", out)
			}
			cs, err := clone.Get(ctx, "sample", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *cs.Spec.Replicas != replicas {
				t.Errorf("after kubectl scale --replicas=%d: spec.replicas is %d", replicas, *cs.Spec.Replicas)
			}
		}
	})

	t.Run("apply --server-side", func(t *testing.T) {
		manifest := `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: ssa
spec:
  replicas: 2
  selector:
    matchLabels:
      app: ssa
  template:
    metadata:
      labels:
        app: ssa
    spec:
      containers:
      - name: main
        image: inplace.local/app:v1
`
		path := k.writeFile("ssa.yaml", manifest)
		out := k.mustRun("apply", "--server-side", "-f", path)
		if !strings.Contains(out, "cloneset.apps.kruise.io/ssa serverside-applied") {
			t.Errorf("kubectl apply --server-side: %q", out)
		}
		cs, err := clone.Get(ctx, "ssa", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the server-side applied CloneSet: %v", err)
		}
		if !ownsField(cs.ManagedFields, "kubectl", metav1.ManagedFieldsOperationApply, "f:spec", "f:replicas") {
			t.Errorf("kubectl does not own spec.replicas after apply --server-side: %v", managers(cs.ManagedFields))
		}
		out = k.mustRun("apply", "--server-side", "-f", k.writeFile("ssa.yaml", strings.Replace(manifest, "replicas: 2", "replicas: 4", 1)))
		if !strings.Contains(out, "serverside-applied") {
			t.Errorf("kubectl apply --server-side again: %q", out)
		}
		cs, err = clone.Get(ctx, "ssa", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *cs.Spec.Replicas != 4 || cs.Generation != 2 {
			t.Errorf("after the second server-side apply: replicas %d generation %d", *cs.Spec.Replicas, cs.Generation)
		}
		// Another field manager changing replicas conflicts, until forced.
		_, stderr, err := k.run("apply", "--server-side", "--field-manager=other", "-f", k.writeFile("ssa.yaml", strings.Replace(manifest, "replicas: 2", "replicas: 6", 1)))
		if err == nil || !strings.Contains(stderr, "conflict") {
			t.Errorf("conflicting server-side apply: want a conflict, got %v: %s", err, stderr)
		}
		k.mustRun("apply", "--server-side", "--force-conflicts", "--field-manager=other", "-f", k.writeFile("ssa.yaml", strings.Replace(manifest, "replicas: 2", "replicas: 6", 1)))
		if cs, err = clone.Get(ctx, "ssa", metav1.GetOptions{}); err != nil || *cs.Spec.Replicas != 6 {
			t.Errorf("after the forced server-side apply: %v %v", cs.Spec.Replicas, err)
		}
	})

	t.Run("sidecarsets inject", func(t *testing.T) {
		// log-agent (applied above) selects app=sample: the answer is the Pod with its sidecar.
		pod := k.writeFile("pod.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"default","labels":{"app":"sample"}},`+
			`"spec":{"containers":[{"name":"main","image":"inplace.local/app:v1"}]}}`)
		out := k.mustRun("create", "--raw", "/apis/apps.kruise.io/v1alpha1/sidecarsets/log-agent/inject", "-f", pod)
		if !strings.Contains(out, `"name":"sidecar1"`) || !strings.Contains(out, `"kruise.io/sidecarset-injected-list":"log-agent"`) {
			t.Errorf("kubectl create --raw .../sidecarsets/log-agent/inject: want the Pod with sidecar1, got %s", out)
		}
	})

	t.Run("pod subresources answer 503", func(t *testing.T) {
		inplace := k.writeFile("inplaceupdate.json", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"InPlaceUpdate",`+
			`"spec":{"containers":[{"name":"main","image":"inplace.local/app:v2"}]}}`)
		recreate := k.writeFile("recreate.json", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ContainerRecreateRequest",`+
			`"metadata":{"name":"x"},"spec":{"podName":"x","containers":[{"name":"main"}]}}`)
		for _, tc := range []struct{ path, body, message string }{
			// Standalone mode has no cluster: the Pod subresources need aggregated mode.
			{"/apis/apps.kruise.io/v1alpha1/namespaces/default/pods/x/inplaceupdate", inplace, "standalone mode"},
			{"/apis/apps.kruise.io/v1alpha1/namespaces/default/pods/x/recreate", recreate, "standalone mode"},
		} {
			stdout, stderr, err := k.run("create", "--raw", tc.path, "-f", tc.body)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("kubectl create --raw %s: want a non-zero exit, got %v (stdout %q)", tc.path, err, stdout)
				continue
			}
			if !strings.Contains(stderr, tc.message) {
				t.Errorf("kubectl create --raw %s: want %q in the error, got %q", tc.path, tc.message, stderr)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		out := k.mustRun("delete", "-f", examplePath(t, "cloneset.yaml"), "--wait=false")
		if !strings.Contains(out, `cloneset.apps.kruise.io "sample" deleted`) {
			t.Errorf("kubectl delete: %q", out)
		}
		// Deletion with background propagation is immediate here (no finalizers), but poll
		// rather than assume it.
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := clone.Get(ctx, "sample", metav1.GetOptions{})
			return err != nil, nil
		})
		if err != nil {
			t.Fatalf("the CloneSet is still there after kubectl delete: %v", err)
		}
		_, err = clone.Get(ctx, "sample", metav1.GetOptions{})
		expectNotFound(t, err, "get after kubectl delete")
		if out := k.mustRun("get", "clonesets", "-o", "name"); strings.Contains(out, "sample") {
			t.Errorf("kubectl get after delete: %q", out)
		}
	})

	// policy.kruise.io: a v1alpha1 manifest as OpenKruise v1.9's users write it, its columns and
	// short name, and the v1beta1 fields its annotations become.
	t.Run("podunavailablebudgets", func(t *testing.T) {
		manifest := `apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata:
  name: web
  annotations:
    kruise.io/pub-protect-operations: DELETE,EVICT
spec:
  selector:
    matchLabels:
      app: web
  maxUnavailable: 25%
`
		if out := k.mustRun("apply", "-f", k.writeFile("pub.yaml", manifest)); !strings.Contains(out, "podunavailablebudget.policy.kruise.io/web created") {
			t.Errorf("kubectl apply of a PodUnavailableBudget: %q", out)
		}
		out := k.mustRun("get", "pub")
		header, rows := table(t, out)
		if want := []string{"NAME", "ALLOWED", "CURRENT", "DESIRED", "TOTAL", "AGE"}; !slices.Equal(header, want) || len(rows) != 1 || rows[0][0] != "web" {
			t.Errorf("kubectl get pub: want header %v and one row for web, got\n%s", want, out)
		}
		ops := k.mustRun("get", "podunavailablebudgets.v1beta1.policy.kruise.io", "web", "-o", "jsonpath={.spec.protectOperations}")
		if ops != `["DELETE","EVICT"]` {
			t.Errorf("the v1beta1 protectOperations of the applied v1alpha1 manifest: %q", ops)
		}
	})
}
