package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

const (
	inplaceNamespace = "inplace-system"
	apiServiceName   = "v1alpha1.apps.kruise.io"
	// betaAPIServiceName serves the Advanced StatefulSet's v1beta1 from the same server.
	betaAPIServiceName = "v1beta1.apps.kruise.io"
	groupVersion       = "apps.kruise.io/v1alpha1"
	appImageV1         = "inplace.local/app:v1"
	// podTimeout bounds a pod's way to Running on the local node (measured: ~1 s).
	podTimeout = 60 * time.Second
)

// The cluster, as the child process sees it (set by setUp).
var (
	repo          string // repository root
	kubectlBin    string // _output/bin/kubectl
	kubeconfig    string // cluster-admin kubeconfig written by hack/local-up.sh
	kubectlCache  string // kubectl's discovery cache, private to this run
	adminConfig   *rest.Config
	kube          kubernetes.Interface
	inplace       clientset.Interface
	dynamicClient dynamic.Interface
	// The second node (INPLACE_NODES=2 hack/local-up.sh), empty without it.
	node2Name, node2Taint string
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// setUp reads the environment hack/local-up.sh wrote and makes the clients.
func setUp() error {
	var err error
	if repo, err = repoRoot(); err != nil {
		return err
	}
	vars, err := readEnvFile(filepath.Join(repo, "_output/local/env"))
	if err != nil {
		return fmt.Errorf("reading the local cluster's environment: %w", err)
	}
	kubeconfig = vars["KUBECONFIG"]
	if kubeconfig == "" {
		return fmt.Errorf("no KUBECONFIG in _output/local/env")
	}
	node2Name, node2Taint = vars["NODE2_NAME"], vars["NODE2_TAINT"]
	kubectlBin = filepath.Join(repo, "_output/bin/kubectl")
	if _, err := os.Stat(kubectlBin); err != nil {
		return fmt.Errorf("kubectl: %w", err)
	}
	if kubectlCache, err = os.MkdirTemp("", "inplace-e2e-kubectl-cache-"); err != nil {
		return err
	}
	if adminConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	adminConfig.QPS, adminConfig.Burst = 100, 200
	if kube, err = kubernetes.NewForConfig(adminConfig); err != nil {
		return err
	}
	if inplace, err = clientset.NewForConfig(adminConfig); err != nil {
		return err
	}
	dynamicClient, err = dynamic.NewForConfig(adminConfig)
	return err
}

// testContext ends with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// poll calls cond every 100 ms until it reports done, and fails the test at the deadline with
// the last error cond gave (cond may explain a "not yet" with an error; done wins over it).
func poll(t *testing.T, ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		done, err := cond(ctx)
		if done {
			return true, nil
		}
		// The deadline's own errors say nothing about the condition: keep the one before them.
		// client-go's rate limiter refuses a request that would outlast the deadline with an
		// error of its own (not context.DeadlineExceeded), before the context itself ends.
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) &&
			!strings.Contains(err.Error(), "would exceed context deadline") {
			last = err
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// kubectl runs _output/bin/kubectl as cluster-admin and returns its stdout and stderr.
func kubectl(ctx context.Context, stdin string, args ...string) (string, string, error) {
	return kubectlWith(ctx, time.Minute, nil, stdin, args...)
}

// kubectlWith is kubectl with a timeout and more environment variables.
func kubectlWith(ctx context.Context, timeout time.Duration, env []string, stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, args...)
	cmd.Dir = repo
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBECACHEDIR="+kubectlCache), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), stderr.String(), err
}

// mustKubectl runs kubectl and fails the test when it fails.
func mustKubectl(t *testing.T, ctx context.Context, stdin string, args ...string) string {
	t.Helper()
	out, _, err := kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newNamespace creates a namespace for the test (deleted afterwards, without waiting) and waits
// for its default ServiceAccount, which Pods need.
func newNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	name := "e2e-" + prefix + "-" + utilrand.String(5)
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	poll(t, ctx, 30*time.Second, "ServiceAccount "+name+"/default", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return name
}

// appPod is a Pod running the local test image (no registry: pull policy Never).
func appPod(namespace, name, image string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: image, ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

// waitPodRunning waits until the Pod runs and returns it.
func waitPodRunning(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, ctx, podTimeout, "Pod "+namespace+"/"+name+" Running", func(ctx context.Context) (bool, error) {
		var err error
		pod, err = kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod ended: phase %s, %s", pod.Status.Phase, pod.Status.Message)
		}
		return pod.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s, statuses %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	return pod
}

// runPod creates a Pod on the local image and waits until it runs.
func runPod(t *testing.T, ctx context.Context, namespace, name string) *corev1.Pod {
	t.Helper()
	if _, err := kube.CoreV1().Pods(namespace).Create(ctx, appPod(namespace, name, appImageV1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod %s/%s: %v", namespace, name, err)
	}
	return waitPodRunning(t, ctx, namespace, name)
}

// serviceAccountConfig is a client configuration that authenticates as the ServiceAccount, with
// a token from the TokenRequest API (and nothing of the admin's credentials).
func serviceAccountConfig(t *testing.T, ctx context.Context, namespace, name string) *rest.Config {
	t.Helper()
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ServiceAccount %s/%s: %v", namespace, name, err)
	}
	expiry := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(adminConfig)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// apiServiceAvailable reads the APIService's Available condition.
func apiServiceAvailable(ctx context.Context) (bool, error) {
	for _, name := range []string{apiServiceName, betaAPIServiceName} {
		if ok, err := oneAPIServiceAvailable(ctx, name); !ok {
			return false, fmt.Errorf("APIService %s: %w", name, err)
		}
	}
	return true, nil
}

func oneAPIServiceAvailable(ctx context.Context, name string) (bool, error) {
	obj, err := dynamicClient.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Available" {
			if m["status"] == "True" {
				return true, nil
			}
			return false, fmt.Errorf("Available=%v: %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return false, fmt.Errorf("no Available condition yet")
}
