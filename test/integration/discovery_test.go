package integration

import (
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

var (
	allVerbs    = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs = []string{"get", "patch", "update"}
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)

	groups, err := s.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatalf("server groups: %v", err)
	}
	var found bool
	for _, g := range groups.Groups {
		if g.Name == "apps.kruise.io" {
			found = true
			// v1beta1 first, as kube-apiserver orders the versions of OpenKruise's CRDs.
			var versions []string
			for _, v := range g.Versions {
				versions = append(versions, v.GroupVersion)
			}
			if want := []string{"apps.kruise.io/v1beta1", groupVersion}; g.PreferredVersion.GroupVersion != want[0] || !slices.Equal(versions, want) {
				t.Errorf("apps.kruise.io: preferred %s, versions %v; want %v, the first preferred", g.PreferredVersion.GroupVersion, versions, want)
			}
		}
	}
	if !found {
		t.Fatalf("apps.kruise.io is not discovered: %+v", groups.Groups)
	}

	list, err := s.Client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		t.Fatalf("resources of %s: %v", groupVersion, err)
	}
	resources := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		resources[r.Name] = r
	}
	type want struct {
		namespaced bool
		kind       string
		group      string // of the kind, when not the group's
		version    string
		verbs      []string
		shortNames []string
		singular   string
	}
	wants := map[string]want{
		"clonesets":                        {namespaced: true, kind: "CloneSet", verbs: allVerbs, shortNames: []string{"clone"}, singular: "cloneset"},
		"clonesets/status":                 {namespaced: true, kind: "CloneSet", verbs: statusVerbs},
		"clonesets/scale":                  {namespaced: true, kind: "Scale", group: "autoscaling", version: "v1", verbs: statusVerbs},
		"sidecarsets":                      {namespaced: false, kind: "SidecarSet", verbs: allVerbs, singular: "sidecarset"},
		"sidecarsets/status":               {namespaced: false, kind: "SidecarSet", verbs: statusVerbs},
		"sidecarsets/inject":               {namespaced: false, kind: "Pod", group: "", version: "v1", verbs: []string{"create"}},
		"containerrecreaterequests":        {namespaced: true, kind: "ContainerRecreateRequest", verbs: allVerbs, shortNames: []string{"crr"}, singular: "containerrecreaterequest"},
		"containerrecreaterequests/status": {namespaced: true, kind: "ContainerRecreateRequest", verbs: statusVerbs},
		"pods":                             {namespaced: true, kind: "Pod", verbs: nil, singular: "pod"},
		"pods/inplaceupdate":               {namespaced: true, kind: "InPlaceUpdate", verbs: []string{"create"}},
		"pods/recreate":                    {namespaced: true, kind: "ContainerRecreateRequest", verbs: []string{"create"}},
		"statefulsets":                     {namespaced: true, kind: "StatefulSet", verbs: allVerbs, shortNames: []string{"asts"}, singular: "statefulset"},
		"statefulsets/status":              {namespaced: true, kind: "StatefulSet", verbs: statusVerbs},
		"statefulsets/scale":               {namespaced: true, kind: "Scale", group: "autoscaling", version: "v1", verbs: statusVerbs},
		"daemonsets":                       {namespaced: true, kind: "DaemonSet", verbs: allVerbs, shortNames: []string{"daemon", "ads"}, singular: "daemonset"},
		"daemonsets/status":                {namespaced: true, kind: "DaemonSet", verbs: statusVerbs},
		"imagepulljobs":                    {namespaced: true, kind: "ImagePullJob", verbs: allVerbs, singular: "imagepulljob"},
		"imagepulljobs/status":             {namespaced: true, kind: "ImagePullJob", verbs: statusVerbs},
		"imagelistpulljobs":                {namespaced: true, kind: "ImageListPullJob", verbs: allVerbs, singular: "imagelistpulljob"},
		"imagelistpulljobs/status":         {namespaced: true, kind: "ImageListPullJob", verbs: statusVerbs},
		"nodeimages":                       {namespaced: false, kind: "NodeImage", verbs: allVerbs, singular: "nodeimage"},
		"nodeimages/status":                {namespaced: false, kind: "NodeImage", verbs: statusVerbs},
	}
	var gotNames, wantNames []string
	for n := range resources {
		gotNames = append(gotNames, n)
	}
	for n := range wants {
		wantNames = append(wantNames, n)
	}
	sort.Strings(gotNames)
	sort.Strings(wantNames)
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("resources of %s: want %v, got %v", groupVersion, wantNames, gotNames)
	}
	for name, w := range wants {
		r, ok := resources[name]
		if !ok {
			continue
		}
		if r.Namespaced != w.namespaced {
			t.Errorf("%s: namespaced %v, want %v", name, r.Namespaced, w.namespaced)
		}
		if r.Kind != w.kind {
			t.Errorf("%s: kind %s, want %s", name, r.Kind, w.kind)
		}
		if w.version != "" && (r.Group != w.group || r.Version != w.version) {
			t.Errorf("%s: kind of group %q version %q, want %q %q", name, r.Group, r.Version, w.group, w.version)
		}
		verbs := slices.Clone([]string(r.Verbs))
		sort.Strings(verbs)
		if !slices.Equal(verbs, w.verbs) {
			t.Errorf("%s: verbs %v, want %v", name, verbs, w.verbs)
		}
		if !slices.Equal(r.ShortNames, w.shortNames) {
			t.Errorf("%s: shortNames %v, want %v", name, r.ShortNames, w.shortNames)
		}
		if w.singular != "" && r.SingularName != w.singular {
			t.Errorf("%s: singularName %q, want %q", name, r.SingularName, w.singular)
		}
	}
	for _, r := range []string{"clonesets", "statefulsets", "daemonsets"} {
		if c := resources[r].Categories; !slices.Contains(c, "all") {
			t.Errorf("%s: categories %v, want all", r, c)
		}
	}

	// v1beta1 serves the kinds OpenKruise v1.9 serves there, and CloneSet as OpenKruise's master
	// does, with the same subresources but sidecarsets/inject (inplace's own).
	beta, err := s.Client.Discovery().ServerResourcesForGroupVersion("apps.kruise.io/v1beta1")
	if err != nil {
		t.Fatalf("resources of apps.kruise.io/v1beta1: %v", err)
	}
	var betaNames []string
	for _, r := range beta.APIResources {
		betaNames = append(betaNames, r.Name)
	}
	sort.Strings(betaNames)
	if want := []string{"clonesets", "clonesets/scale", "clonesets/status", "containerrecreaterequests", "containerrecreaterequests/status", "daemonsets", "daemonsets/status", "imagelistpulljobs", "imagelistpulljobs/status", "imagepulljobs", "imagepulljobs/status",
		"nodeimages", "nodeimages/status", "sidecarsets", "sidecarsets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"}; !slices.Equal(betaNames, want) {
		t.Errorf("resources of apps.kruise.io/v1beta1: %v, want %v", betaNames, want)
	}

	// The pods of this group answer no verb of their own, and the subresources only POST.
	for path, want := range map[string]int{
		"/apis/apps.kruise.io/v1alpha1/namespaces/default/pods":                 http.StatusNotFound,
		"/apis/apps.kruise.io/v1alpha1/namespaces/default/pods/x":               http.StatusNotFound,
		"/apis/apps.kruise.io/v1alpha1/namespaces/default/pods/x/inplaceupdate": http.StatusMethodNotAllowed,
		"/apis/apps.kruise.io/v1alpha1/namespaces/default/pods/x/recreate":      http.StatusMethodNotAllowed,
	} {
		if code, body := httpGet(t, s, path); code != want {
			t.Errorf("GET %s: want %d, got %d: %.300s", path, want, code, body)
		}
	}
}

// TestSubresourceStubs calls the subresources that need a cluster (pods/*) through the typed
// client: they answer 503 ServiceUnavailable saying so, and store nothing.
func TestSubresourceStubs(t *testing.T) {
	s, ctx := parallelServer(t)
	apps := s.Client.AppsV1alpha1()

	expect503 := func(what string, err error, message string) {
		t.Helper()
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("%s: want 503 ServiceUnavailable, got %v", what, err)
		} else if !strings.Contains(err.Error(), message) {
			t.Errorf("%s: want %q in %q", what, message, err.Error())
		}
	}
	_, err := apps.Pods("default").InPlaceUpdate(ctx, "x", &appsv1alpha1.InPlaceUpdate{
		Spec: appsv1alpha1.InPlaceUpdateSpec{Containers: []appsv1alpha1.InPlaceUpdateContainer{{Name: "main", Image: "inplace.local/app:v2"}}},
	}, metav1.CreateOptions{})
	expect503("pods/x/inplaceupdate", err, "standalone mode")
	_, err = apps.Pods("default").Recreate(ctx, "x", newCRR("x"), metav1.CreateOptions{})
	expect503("pods/x/recreate", err, "standalone mode")
	// pods/recreate did not create a ContainerRecreateRequest behind the scenes.
	crrs, err := apps.ContainerRecreateRequests("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(crrs.Items) != 0 {
		t.Errorf("containerrecreaterequests after pods/recreate: %v %v", crrs, err)
	}
}

// gvkOf returns the x-kubernetes-group-version-kind entries of an OpenAPI schema.
func gvkOf(schema map[string]any) []map[string]any {
	raw, _ := schema["x-kubernetes-group-version-kind"].([]any)
	var out []map[string]any
	for _, e := range raw {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// findKind returns the name and schema of the definition of group/version/kind.
func findKind(t *testing.T, defs map[string]any, group, version, kind string) (string, map[string]any) {
	t.Helper()
	for name, d := range defs {
		schema, _ := d.(map[string]any)
		for _, gvk := range gvkOf(schema) {
			if gvk["group"] == group && gvk["version"] == version && gvk["kind"] == kind {
				return name, schema
			}
		}
	}
	t.Fatalf("no schema of %s/%s %s", group, version, kind)
	return "", nil
}

// resolve follows a $ref (#/definitions/X or #/components/schemas/X), also inside allOf.
func resolve(defs map[string]any, schema map[string]any) map[string]any {
	ref, _ := schema["$ref"].(string)
	if ref == "" {
		if all, ok := schema["allOf"].([]any); ok && len(all) == 1 {
			if m, ok := all[0].(map[string]any); ok {
				return resolve(defs, m)
			}
		}
		return schema
	}
	name := ref[strings.LastIndex(ref, "/")+1:]
	d, _ := defs[name].(map[string]any)
	return d
}

func properties(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}

// expectCloneSetSchema checks the CloneSet schema and what it refers to in defs.
func expectCloneSetSchema(t *testing.T, which string, defs map[string]any) {
	t.Helper()
	name, cloneSet := findKind(t, defs, "apps.kruise.io", "v1alpha1", "CloneSet")
	props := properties(cloneSet)
	for _, p := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
		if _, ok := props[p]; !ok {
			t.Errorf("%s %s: no property %s", which, name, p)
		}
	}
	specRef, _ := props["spec"].(map[string]any)
	spec := resolve(defs, specRef)
	for _, p := range []string{"replicas", "selector", "template", "volumeClaimTemplates", "scaleStrategy", "updateStrategy", "revisionHistoryLimit", "minReadySeconds", "lifecycle"} {
		if _, ok := properties(spec)[p]; !ok {
			t.Errorf("%s CloneSet spec: no property %s (%v)", which, p, spec)
		}
	}
	if req, _ := spec["required"].([]any); !slices.Contains(req, any("selector")) || !slices.Contains(req, any("template")) {
		t.Errorf("%s CloneSet spec: required %v, want selector and template", which, req)
	}
	usRef, _ := properties(spec)["updateStrategy"].(map[string]any)
	us := resolve(defs, usRef)
	partition, _ := properties(us)["partition"].(map[string]any)
	if desc, _ := partition["description"].(string); !strings.Contains(desc, "old revision") {
		t.Errorf("%s CloneSet updateStrategy.partition: description %q", which, desc)
	}
	if _, ok := properties(cloneSet)["status"]; ok {
		stRef, _ := props["status"].(map[string]any)
		if _, ok := properties(resolve(defs, stRef))["updatedReadyReplicas"]; !ok {
			t.Errorf("%s CloneSet status: no updatedReadyReplicas", which)
		}
	}
}

func TestOpenAPI(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)

	t.Run("v2", func(t *testing.T) {
		doc := getJSON(t, s, "/openapi/v2")
		if doc["swagger"] != "2.0" {
			t.Errorf("/openapi/v2: swagger %v", doc["swagger"])
		}
		defs, _ := doc["definitions"].(map[string]any)
		expectCloneSetSchema(t, "v2", defs)
		findKind(t, defs, "apps.kruise.io", "v1alpha1", "SidecarSet")
		findKind(t, defs, "apps.kruise.io", "v1alpha1", "ContainerRecreateRequest")
		paths, _ := doc["paths"].(map[string]any)
		for _, p := range []string{
			"/apis/apps.kruise.io/v1alpha1/namespaces/{namespace}/clonesets",
			"/apis/apps.kruise.io/v1alpha1/namespaces/{namespace}/clonesets/{name}/scale",
			"/apis/apps.kruise.io/v1alpha1/sidecarsets/{name}",
			"/apis/apps.kruise.io/v1alpha1/namespaces/{namespace}/containerrecreaterequests/{name}/status",
			"/apis/apps.kruise.io/v1alpha1/namespaces/{namespace}/pods/{name}/inplaceupdate",
		} {
			if _, ok := paths[p]; !ok {
				t.Errorf("/openapi/v2: no path %s", p)
			}
		}
	})

	t.Run("v3", func(t *testing.T) {
		index := getJSON(t, s, "/openapi/v3")
		paths, _ := index["paths"].(map[string]any)
		if _, ok := paths["apis/apps.kruise.io/v1alpha1"]; !ok {
			t.Errorf("/openapi/v3 does not list apis/apps.kruise.io/v1alpha1: %v", paths)
		}
		doc := getJSON(t, s, "/openapi/v3/apis/apps.kruise.io/v1alpha1")
		if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
			t.Errorf("/openapi/v3/apis/apps.kruise.io/v1alpha1: openapi %q", v)
		}
		components, _ := doc["components"].(map[string]any)
		schemas, _ := components["schemas"].(map[string]any)
		expectCloneSetSchema(t, "v3", schemas)
		findKind(t, schemas, "apps.kruise.io", "v1alpha1", "SidecarSet")
		findKind(t, schemas, "apps.kruise.io", "v1alpha1", "ContainerRecreateRequest")
		v3paths, _ := doc["paths"].(map[string]any)
		if _, ok := v3paths["/apis/apps.kruise.io/v1alpha1/namespaces/{namespace}/clonesets/{name}"]; !ok {
			t.Errorf("/openapi/v3/apis/apps.kruise.io/v1alpha1: no clonesets/{name} path")
		}
	})
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	for _, path := range []string{"/healthz", "/livez", "/readyz", "/readyz/etcd", "/livez/etcd"} {
		code, body := httpGet(t, s, path)
		if code != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("GET %s: want 200 ok, got %d %q", path, code, body)
		}
	}
	if code, body := httpGet(t, s, "/readyz?verbose"); code != http.StatusOK || !strings.Contains(string(body), "[+]etcd ok") {
		t.Errorf("GET /readyz?verbose: want the etcd check, got %d %s", code, body)
	}

	// Make a request of our own so that it shows in the counters.
	if _, err := s.Client.AppsV1alpha1().CloneSets("default").List(testContext(t), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	code, body := httpGet(t, s, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %.300s", code, body)
	}
	text := string(body)
	for _, want := range []string{
		"# TYPE apiserver_request_total counter",
		`apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps.kruise.io",resource="clonesets",scope="namespace",subresource="",verb="LIST",version="v1alpha1"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics: want %q", want)
		}
	}
	if code, body := httpGet(t, s, "/version"); code != http.StatusOK || !strings.Contains(string(body), "gitVersion") {
		t.Errorf("GET /version: %d %s", code, body)
	}
}

// TestSidecarSetInject: POST sidecarsets/NAME/inject answers the Pod as the SidecarSet would
// inject it (even in standalone mode: it reads no Pod), stores nothing, and refuses with 422 a Pod
// the SidecarSet does not select, saying why.
func TestSidecarSetInject(t *testing.T) {
	s, ctx := parallelServer(t)
	apps := s.Client.AppsV1alpha1()
	if _, err := apps.SidecarSets().Create(ctx, newSidecarSet("agent"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, injected := injectAgent(t, ctx, apps, "")
	if injected.Annotations["kruise.io/sidecarset-injected-list"] != "agent" || injected.Annotations["kruise.io/sidecarset-hash"] == "" {
		t.Errorf("annotations %v, want OpenKruise's injected list and hash", injected.Annotations)
	}
	other := pod.DeepCopy()
	other.Labels = map[string]string{"app": "another"}
	_, err := apps.SidecarSets().Inject(ctx, "agent", other, metav1.CreateOptions{})
	if statusCode(err) != 422 || !strings.Contains(err.Error(), "not injected") {
		t.Errorf("inject into a Pod the SidecarSet does not select: %v, want 422 saying why", err)
	}
	if _, err := apps.SidecarSets().Inject(ctx, "missing", pod, metav1.CreateOptions{}); statusCode(err) != 404 {
		t.Errorf("inject of a missing SidecarSet: %v, want 404", err)
	}
}
