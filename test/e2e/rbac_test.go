package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestRBAC: apps.kruise.io requests are authorized per user, with the ClusterRoles of
// artifacts/deploy: a ServiceAccount without rights gets 403 on creating a CloneSet and on
// pods/inplaceupdate; with inplace:edit (or the built-in edit/admin/view it aggregates into) it
// gets through.
func TestRBAC(t *testing.T) {
	ctx, ns := framework.Start(t, "rbac")
	framework.RunPod(t, ctx, ns, "target")

	nobody := saClient(t, ctx, ns, "nobody", "")
	t.Run("no rights", func(t *testing.T) {
		expectWritesForbidden(t, ctx, nobody, ns, "nobody", "without rights")
	})

	editor := saClient(t, ctx, ns, "editor", "inplace:edit")
	t.Run("inplace:edit", func(t *testing.T) {
		framework.Poll(t, ctx, framework.RbacTimeout, "CloneSet create allowed with inplace:edit", func(ctx context.Context) (bool, error) {
			_, err := editor.AppsV1alpha1().CloneSets(ns).Create(ctx, testCloneSet("by-editor"), metav1.CreateOptions{})
			return err == nil, err
		})
		framework.Poll(t, ctx, framework.RbacTimeout, "pods/inplaceupdate past authorization with inplace:edit", func(ctx context.Context) (bool, error) {
			_, err := editor.AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "target", testInPlaceUpdate(), metav1.CreateOptions{})
			return reachedSubresource(err)
		})
		framework.Poll(t, ctx, framework.RbacTimeout, "pods/recreate past authorization with inplace:edit", func(ctx context.Context) (bool, error) {
			_, err := editor.AppsV1alpha1().Pods(ns).Recreate(ctx, "target", &v1alpha1.ContainerRecreateRequest{}, metav1.CreateOptions{})
			return reachedSubresource(err)
		})
	})

	// A RoleBinding gives rights in its namespace only: the editor of ns acts on no Pod of another
	// namespace, and gets no cluster-scoped sidecarsets/inject (that takes a ClusterRoleBinding).
	t.Run("one namespace only", func(t *testing.T) {
		other := framework.NewNamespace(t, ctx, "rbac-other")
		framework.RunPod(t, ctx, other, "target")
		expectWritesForbidden(t, ctx, editor, other, "editor", "by the editor of "+ns)
		set, err := framework.Inplace.AppsV1alpha1().SidecarSets().Create(ctx, testSidecarSet("e2e-"+ns+"-inject"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = framework.Inplace.AppsV1alpha1().SidecarSets().Delete(context.Background(), set.Name, metav1.DeleteOptions{})
		})
		probe := framework.AppPod(ns, "probe", framework.AppImageV1)
		probe.Labels = set.Spec.Selector.MatchLabels // a Pod the SidecarSet selects
		_, err = editor.AppsV1alpha1().SidecarSets().Inject(ctx, set.Name, probe, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("POST sidecarsets/%s/inject by the editor of %s (a RoleBinding): %v, want 403 Forbidden", set.Name, ns, err)
		}
		injector := saClient(t, ctx, ns, "injector", "")
		binding, err := framework.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + ns + "-injector"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "inplace:edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "injector", Namespace: ns}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = framework.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
		framework.Poll(t, ctx, framework.RbacTimeout, "sidecarsets/inject allowed with a ClusterRoleBinding of inplace:edit", func(ctx context.Context) (bool, error) {
			injected, err := injector.AppsV1alpha1().SidecarSets().Inject(ctx, set.Name, probe, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			if len(injected.Spec.Containers) != 2 {
				t.Fatalf("inject answered containers %+v, want main and the sidecar", injected.Spec.Containers)
			}
			return true, nil
		})
	})

	// The ClusterRoles aggregate into the built-in ones.
	t.Run("built-in admin", func(t *testing.T) {
		admin := saClient(t, ctx, ns, "ns-admin", "admin")
		framework.Poll(t, ctx, framework.RbacTimeout, "CloneSet create allowed with admin", func(ctx context.Context) (bool, error) {
			_, err := admin.AppsV1alpha1().CloneSets(ns).Create(ctx, testCloneSet("by-admin"), metav1.CreateOptions{})
			return err == nil, err
		})
	})
	t.Run("built-in view", func(t *testing.T) {
		viewer := saClient(t, ctx, ns, "viewer", "view")
		framework.Poll(t, ctx, framework.RbacTimeout, "CloneSet list allowed with view", func(ctx context.Context) (bool, error) {
			_, err := viewer.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{})
			return err == nil, err
		})
		expectWritesForbidden(t, ctx, viewer, ns, "viewer", "with view")
	})

	// kube-apiserver authorizes before it proxies; inplace-apiserver authorizes again itself,
	// delegating to kube-apiserver (TokenReview, SubjectAccessReview). Asked directly, on the
	// address the aggregator dials, it gives the same answers.
	t.Run("inplace-apiserver directly", func(t *testing.T) {
		host := inplaceAPIServerAddress(t, ctx)
		direct := func(c *rest.Config) clientset.Interface {
			c = rest.CopyConfig(c)
			c.Host = "https://" + host
			directTLS(t, ctx, c)
			return clientset.NewForConfigOrDie(c)
		}
		_, err := direct(framework.ServiceAccountConfig(t, ctx, ns, "nobody")).AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "target", testInPlaceUpdate(), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("direct pods/inplaceupdate without rights: %v, want 403 Forbidden", err)
		}
		_, err = direct(framework.ServiceAccountConfig(t, ctx, ns, "editor")).AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "target", testInPlaceUpdate(), metav1.CreateOptions{})
		if ok, _ := reachedSubresource(err); !ok {
			t.Errorf("direct pods/inplaceupdate with inplace:edit: %v, want it past authorization", err)
		}
		_, err = direct(rest.AnonymousClientConfig(framework.AdminConfig)).AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
			t.Errorf("direct anonymous list: %v, want 401 or 403", err)
		}
	})
}

// reachedSubresource: the request got past authentication and authorization to the
// subresource's handler in inplace-apiserver: served, answered by the not-yet-implemented stub
// (503 "not implemented"; a 503 of the aggregator itself does not count), or refused by the
// handler for what it asked (a 4xx other than 401 and 403).
func reachedSubresource(err error) (bool, error) {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsServiceUnavailable(err) && strings.Contains(err.Error(), "not implemented"):
		return true, nil
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return false, err
	case errors.As(err, &status) && status.Status().Code >= 400 && status.Status().Code < 500:
		return true, nil
	default:
		return false, err
	}
}

// expectWritesForbidden: the client (who, as the CloneSet's name says; how: with which rights)
// gets 403 on creating a CloneSet in ns and on POST pods/target/inplaceupdate and
// pods/target/recreate there.
func expectWritesForbidden(t *testing.T, ctx context.Context, c clientset.Interface, ns, who, how string) {
	t.Helper()
	writes := []struct {
		what string
		do   func() error
	}{
		{"create CloneSet", func() error {
			_, err := c.AppsV1alpha1().CloneSets(ns).Create(ctx, testCloneSet("by-"+who), metav1.CreateOptions{})
			return err
		}},
		{"POST pods/target/inplaceupdate", func() error {
			_, err := c.AppsV1alpha1().Pods(ns).InPlaceUpdate(ctx, "target", testInPlaceUpdate(), metav1.CreateOptions{})
			return err
		}},
		{"POST pods/target/recreate", func() error {
			_, err := c.AppsV1alpha1().Pods(ns).Recreate(ctx, "target", &v1alpha1.ContainerRecreateRequest{}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, w := range writes {
		if err := w.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s in %s %s: %v, want 403 Forbidden", w.what, ns, how, err)
		}
	}
}

// saClient creates the ServiceAccount, binds it to clusterRole in the namespace (none if
// empty), and returns a clientset that authenticates as it.
func saClient(t *testing.T, ctx context.Context, ns, name, clusterRole string) clientset.Interface {
	t.Helper()
	cfg := framework.ServiceAccountConfig(t, ctx, ns, name)
	if clusterRole != "" {
		_, err := framework.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + clusterRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("binding %s to %s: %v", name, clusterRole, err)
		}
	}
	return clientset.NewForConfigOrDie(cfg)
}

// inplaceAPIServerAddress is an address the aggregator dials for inplace-apiserver: a ready
// endpoint of its Service (the host process's EndpointSlice, or the one of its Pods when it runs
// in the cluster).
func inplaceAPIServerAddress(t *testing.T, ctx context.Context) string {
	t.Helper()
	slices, err := framework.Kube.DiscoveryV1().EndpointSlices(framework.InplaceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=inplace-apiserver"})
	if err != nil {
		t.Fatal(err)
	}
	for _, slice := range slices.Items {
		if len(slice.Ports) == 0 || slice.Ports[0].Port == nil {
			continue
		}
		for _, e := range slice.Endpoints {
			if len(e.Addresses) > 0 && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				return net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*slice.Ports[0].Port)))
			}
		}
	}
	t.Fatalf("no ready endpoint of Service %s/inplace-apiserver: %+v", framework.InplaceNamespace, slices.Items)
	return ""
}

// directTLS makes c trust inplace-apiserver's serving certificate as the aggregator does: the
// APIService's caBundle, for the Service's DNS name.
func directTLS(t *testing.T, ctx context.Context, c *rest.Config) {
	t.Helper()
	svc, err := framework.DynamicClient.Resource(framework.APIServiceGVR).Get(ctx, framework.APIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bundle, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle")
	ca, err := base64.StdEncoding.DecodeString(bundle)
	if err != nil || len(ca) == 0 {
		t.Fatalf("APIService %s caBundle %q: %v", framework.APIServiceName, bundle, err)
	}
	c.TLSClientConfig.CAFile, c.TLSClientConfig.CAData = "", ca
	c.TLSClientConfig.ServerName = "inplace-apiserver." + framework.InplaceNamespace + ".svc"
}

func testCloneSet(name string) *v1alpha1.CloneSet {
	replicas := int32(1)
	labels := map[string]string{"app": name}
	cs := &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	cs.Spec.Template.Labels = labels
	cs.Spec.Template.Spec = framework.AppPod("", name, framework.AppImageV1).Spec
	return cs
}

func testInPlaceUpdate() *v1alpha1.InPlaceUpdate {
	return &v1alpha1.InPlaceUpdate{Spec: v1alpha1.InPlaceUpdateSpec{
		Containers: []v1alpha1.InPlaceUpdateContainer{{Name: "main", Image: "inplace.local/app:v2"}},
	}}
}

// TestProxiedRequestsNeedNoSubjectAccessReview: kube-apiserver authorizes a request to
// apps.kruise.io before it proxies it, so inplace-apiserver does not ask it the same question again
// (--authorization-trust-front-proxy, on by default): reads of many distinct objects by a user
// with inplace:view cost kube-apiserver no SubjectAccessReview each, while the user still gets
// only what RBAC gives it (TestRBAC).
func TestProxiedRequestsNeedNoSubjectAccessReview(t *testing.T) {
	ctx, ns := framework.Start(t, "sar")
	viewer := saClient(t, ctx, ns, "viewer", "inplace:view")
	framework.Poll(t, ctx, framework.RbacTimeout, "CloneSet reads allowed with inplace:view", func(ctx context.Context) (bool, error) {
		_, err := viewer.AppsV1alpha1().CloneSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	const reads = 40
	before := subjectAccessReviews(t, ctx)
	for i := range reads {
		// Each name is new to inplace-apiserver's cache of authorization answers.
		_, err := viewer.AppsV1alpha1().CloneSets(ns).Get(ctx, fmt.Sprintf("absent-%d", i), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("get absent-%d by the viewer: %v, want 404 Not Found", i, err)
		}
	}
	// Other programs' requests may ask a few meanwhile (a scrape of inplace-apiserver's /metrics,
	// say); one per read would be reads.
	if n := subjectAccessReviews(t, ctx) - before; n >= reads/2 {
		t.Errorf("%d reads through kube-apiserver cost %.0f SubjectAccessReviews, want far fewer than one each", reads, n)
	}
	_, err := viewer.AppsV1alpha1().CloneSets(ns).Create(ctx, testCloneSet("by-viewer"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create by the viewer: %v, want 403 Forbidden", err)
	}
}

// subjectAccessReviews is how many SubjectAccessReviews kube-apiserver has served.
func subjectAccessReviews(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	body, err := framework.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("kube-apiserver /metrics: %v", err)
	}
	var n float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "apiserver_request_total{") && strings.Contains(line, `resource="subjectaccessreviews"`) {
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			n += v
		}
	}
	return n
}
