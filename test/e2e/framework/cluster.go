package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

const (
	InplaceNamespace = "inplace-system"
	APIServiceName   = "v1alpha1.apps.kruise.io"
	// BetaAPIServiceName serves the Advanced StatefulSet's v1beta1 from the same server.
	BetaAPIServiceName = "v1beta1.apps.kruise.io"
	// PolicyAPIServiceName and PolicyBetaAPIServiceName serve policy.kruise.io
	// (PodUnavailableBudgets) from the same server.
	PolicyAPIServiceName     = "v1alpha1.policy.kruise.io"
	PolicyBetaAPIServiceName = "v1beta1.policy.kruise.io"
	GroupVersion             = "apps.kruise.io/v1alpha1"
	AppImageV1               = "inplace.local/app:v1"
	// PodTimeout bounds a pod's way to Running on the local node (measured: ~1 s).
	PodTimeout = 60 * time.Second
)

// The cluster, as the child process sees it (set by setUp).
var (
	Repo          string // repository root
	KubectlBin    string // _output/bin/kubectl
	Kubeconfig    string // cluster-admin kubeconfig written by hack/local-up.sh
	KubectlCache  string // kubectl's discovery cache, private to this run
	AdminConfig   *rest.Config
	Kube          kubernetes.Interface
	Inplace       clientset.Interface
	DynamicClient dynamic.Interface
	// The second node (INPLACE_NODES=2 hack/local-up.sh), empty without it.
	Node2Name, Node2Taint string
)

var APIServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// setUp reads the environment hack/local-up.sh wrote and makes the clients.
func setUp() error {
	var err error
	if Repo, err = repoRoot(); err != nil {
		return err
	}
	vars, err := ReadEnvFile(filepath.Join(Repo, "_output/local/env"))
	if err != nil {
		return fmt.Errorf("reading the local cluster's environment: %w", err)
	}
	Kubeconfig = vars["KUBECONFIG"]
	if Kubeconfig == "" {
		return fmt.Errorf("no KUBECONFIG in _output/local/env")
	}
	Node2Name, Node2Taint = vars["NODE2_NAME"], vars["NODE2_TAINT"]
	KubectlBin = filepath.Join(Repo, "_output/bin/kubectl")
	if _, err := os.Stat(KubectlBin); err != nil {
		return fmt.Errorf("kubectl: %w", err)
	}
	if KubectlCache, err = os.MkdirTemp("", "inplace-e2e-kubectl-cache-"); err != nil {
		return err
	}
	if AdminConfig, err = clientcmd.BuildConfigFromFlags("", Kubeconfig); err != nil {
		return fmt.Errorf("loading %s: %w", Kubeconfig, err)
	}
	AdminConfig.QPS, AdminConfig.Burst = 100, 200
	if Kube, err = kubernetes.NewForConfig(AdminConfig); err != nil {
		return err
	}
	if Inplace, err = clientset.NewForConfig(AdminConfig); err != nil {
		return err
	}
	DynamicClient, err = dynamic.NewForConfig(AdminConfig)
	return err
}

// NewNamespace creates a namespace for the test (deleted afterwards, without waiting) and waits
// for its default ServiceAccount, which Pods need.
func NewNamespace(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	name := "e2e-" + prefix + "-" + utilrand.String(5)
	_, err := Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	Poll(t, ctx, 30*time.Second, "ServiceAccount "+name+"/default", func(ctx context.Context) (bool, error) {
		_, err := Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return name
}

// ServiceAccountConfig is a client configuration that authenticates as the ServiceAccount, with
// a token from the TokenRequest API (and nothing of the admin's credentials).
func ServiceAccountConfig(t *testing.T, ctx context.Context, namespace, name string) *rest.Config {
	t.Helper()
	if _, err := Kube.CoreV1().ServiceAccounts(namespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating ServiceAccount %s/%s: %v", namespace, name, err)
	}
	expiry := int64(3600)
	tr, err := Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(AdminConfig)
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// APIServiceNames are every APIService inplace-apiserver is registered with.
var APIServiceNames = []string{APIServiceName, BetaAPIServiceName, PolicyAPIServiceName, PolicyBetaAPIServiceName}

// APIServiceAvailable reads the Available condition of every APIService of inplace.
func APIServiceAvailable(ctx context.Context) (bool, error) {
	for _, name := range APIServiceNames {
		if ok, err := oneAPIServiceAvailable(ctx, name); !ok {
			return false, fmt.Errorf("APIService %s: %w", name, err)
		}
	}
	return true, nil
}

func oneAPIServiceAvailable(ctx context.Context, name string) (bool, error) {
	obj, err := DynamicClient.Resource(APIServiceGVR).Get(ctx, name, metav1.GetOptions{})
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
			return false, fmt.Errorf("condition Available=%v: %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return false, fmt.Errorf("no Available condition yet")
}

// SecondNode returns the second node's name; it fails the test when the cluster lacks one and
// could have it.
func SecondNode(t *testing.T) string {
	t.Helper()
	if Node2Name != "" {
		return Node2Name
	}
	if InClusterMode() {
		t.Skip("the second node runs only with the inplace programs on the host (INPLACE_NODES=2 hack/local-up.sh)")
	}
	t.Fatal("the local cluster has no second node: start it with INPLACE_NODES=2 hack/local-up.sh (the e2e harness does)")
	return ""
}

// OnNode pins the Pod to the node (tolerating the second node's taint).
func OnNode(pod *corev1.Pod, node string) *corev1.Pod {
	pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: Node2Taint, Operator: corev1.TolerationOpExists})
	return pod
}

// RbacTimeout bounds how long a new RoleBinding (or ClusterRole aggregation) takes to be
// honoured: kube-apiserver's RBAC informers, and inplace-apiserver's cache of
// SubjectAccessReview answers (10 s for a denial).
const RbacTimeout = 45 * time.Second

// Start begins a test on the cluster: the test's context and a namespace of its own (NewNamespace).
func Start(t *testing.T, prefix string) (context.Context, string) {
	t.Helper()
	ctx := Context(t)
	return ctx, NewNamespace(t, ctx, prefix)
}
