package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	"github.com/inplace-dev/inplace/hack/benchlib"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	"github.com/inplace-dev/inplace/test/badinput"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestBadInputSubresources: malformed requests to pods/inplaceupdate, pods/recreate and
// sidecarsets/inject through kube-apiserver are each answered with a 4xx Status (naming the field
// where the case says), never a 5xx, never a hang; the Pods and the SidecarSet they name are not
// changed, no ContainerRecreateRequest is created, and a body that names another Pod than the
// path never acts on that Pod.
func TestBadInputSubresources(t *testing.T) {
	ctx, ns := framework.Start(t, "bad-input")
	framework.RunPod(t, ctx, ns, "target")
	framework.RunPod(t, ctx, ns, "other")
	set := testSidecarSet("e2e-bad-input-" + utilrand.String(5))
	if _, err := framework.Inplace.AppsV1alpha1().SidecarSets().Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = framework.Inplace.AppsV1alpha1().SidecarSets().Delete(ctx, set.Name, metav1.DeleteOptions{})
	})
	setBefore, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, set.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// inplace-controller writes the SidecarSet's status and hash annotations; its spec and
	// generation are what a request could change.
	specOf := func(name string) (corev1.PodSpec, map[string]string, map[string]string) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Spec, p.Labels, p.Annotations
	}
	before := map[string][3]any{}
	for _, name := range []string{"target", "other"} {
		spec, labels, annotations := specOf(name)
		before[name] = [3]any{spec, labels, annotations}
	}

	const group = "/apis/apps.kruise.io/v1alpha1"
	inplaceUpdate := group + "/namespaces/" + ns + "/pods/target/inplaceupdate"
	recreate := group + "/namespaces/" + ns + "/pods/target/recreate"
	inject := group + "/sidecarsets/" + set.Name + "/inject"
	validUpdate := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"InPlaceUpdate","spec":{"containers":[{"name":"main","image":"inplace.local/app:v2"}]}}`
	validRecreate := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ContainerRecreateRequest","spec":{"containers":[{"name":"main"}]}}`
	validInject := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"` + ns + `","labels":{"app":"x"}},"spec":{"containers":[{"name":"main","image":"inplace.local/app:v1"}]}}`

	var reqs []badinput.Request
	for _, sub := range []struct{ name, path, valid string }{
		{"inplaceupdate", inplaceUpdate, validUpdate}, {"recreate", recreate, validRecreate}, {"inject", inject, validInject},
	} {
		post := func(n, query, ct, body string, code int, field string) badinput.Request {
			return badinput.Request{Name: sub.name + ": " + n, Method: http.MethodPost, Path: sub.path, Query: query, ContentType: ct, Body: []byte(body), WantCode: code, Field: field}
		}
		const js = "application/json"
		reqs = append(reqs,
			post("not JSON", "", js, "not json", 400, ""),
			post("truncated JSON", "", js, sub.valid[:len(sub.valid)/2], 400, ""),
			post("a JSON array", "", js, "[]", 400, ""),
			post("a JSON string", "", js, `"x"`, 400, ""),
			post("binary garbage", "", js, "\xff\xfe\x00\x80", 400, ""),
			post("another kind", "", js, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`, 400, ""),
			post("a body of 4 MiB", "", js, `{"metadata":{"annotations":{"big":"`+strings.Repeat("x", 4<<20)+`"}}}`, 413, ""),
			post("JSON nested 20000 levels deep", "", js, `{"spec":`+strings.Repeat(`{"a":`, 20000)+"1"+strings.Repeat("}", 20000)+`}`, 400, ""),
			post("spec is a string", "", js, `{"spec":"x"}`, 400, "spec"),
			post("unknown field, Strict", "fieldValidation=Strict", js, strings.Replace(sub.valid, `"spec":{`, `"spec":{"bogus":1,`, 1), 400, "spec.bogus"),
			post("fieldValidation=Bogus", "fieldValidation=Bogus", js, sub.valid, 422, "fieldValidation"),
			post("dryRun=Maybe", "dryRun=Maybe", js, sub.valid, 422, "dryRun"),
			post("text/plain", "", "text/plain", sub.valid, 415, ""),
			post("bad YAML", "", "application/yaml", "spec: [\n", 400, ""),
			badinput.Request{Name: sub.name + ": GET", Method: http.MethodGet, Path: sub.path, WantCode: 405},
			badinput.Request{Name: sub.name + ": PUT", Method: http.MethodPut, Path: sub.path, ContentType: js, Body: []byte(sub.valid), WantCode: 405},
			badinput.Request{Name: sub.name + ": DELETE", Method: http.MethodDelete, Path: sub.path, WantCode: 405},
			badinput.Request{Name: sub.name + ": PATCH", Method: http.MethodPatch, Path: sub.path, ContentType: "application/merge-patch+json", Body: []byte(`{}`), WantCode: 405},
		)
		missing := strings.Replace(strings.Replace(sub.path, "/pods/target/", "/pods/nobody/", 1), "/sidecarsets/"+set.Name+"/", "/sidecarsets/nobody/", 1)
		ofNothing := badinput.Request{Name: sub.name + ": of nothing", Method: http.MethodPost, Path: missing, ContentType: js, Body: []byte(sub.valid), WantCode: 404}
		if sub.name == "recreate" {
			// Admission of the ContainerRecreateRequest finds no such Pod.
			ofNothing.WantCode, ofNothing.Field = 422, "spec.podName"
		}
		reqs = append(reqs, ofNothing)
	}
	post := func(n, path, body string, code int, field string) badinput.Request {
		return badinput.Request{Name: n, Method: http.MethodPost, Path: path, ContentType: "application/json", Body: []byte(body), WantCode: code, Field: field}
	}
	reqs = append(reqs,
		post("inplaceupdate: containers is a string", inplaceUpdate, `{"spec":{"containers":"main"}}`, 400, "containers"),
		post("inplaceupdate: a container the Pod lacks", inplaceUpdate, `{"spec":{"containers":[{"name":"nope","image":"inplace.local/app:v2"}]}}`, 422, "spec.containers[0].name"),
		post("inplaceupdate: a container without name", inplaceUpdate, `{"spec":{"containers":[{"image":"inplace.local/app:v2"}]}}`, 422, "spec.containers[0].name"),
		post("inplaceupdate: nothing to change", inplaceUpdate, `{"spec":{"containers":[{"name":"main"}]}}`, 422, "spec.containers"),
		post("inplaceupdate: a reserved label", inplaceUpdate, `{"spec":{"metadata":{"labels":{"controller-revision-hash":"x"}}}}`, 422, "spec.metadata.labels"),
		post("inplaceupdate: a label value that is not one", inplaceUpdate, `{"spec":{"metadata":{"labels":{"a":"has space"}}}}`, 422, "spec.metadata.labels"),
		post("inplaceupdate: a negative grace period", inplaceUpdate, `{"spec":{"gracePeriodSeconds":-1,"containers":[{"name":"main","image":"inplace.local/app:v2"}]}}`, 422, "spec.gracePeriodSeconds"),
		post("inplaceupdate: stay in service through a grace period", inplaceUpdate,
			`{"spec":{"stayInService":true,"gracePeriodSeconds":5,"containers":[{"name":"main","image":"inplace.local/app:v2"}]}}`, 422, "spec.stayInService"),
		post("inplaceupdate: a body in another namespace", inplaceUpdate,
			`{"metadata":{"namespace":"kube-system"},"spec":{"containers":[{"name":"main","image":"inplace.local/app:v2"}]}}`, 400, "namespace"),
		post("recreate: containers is a string", recreate, `{"spec":{"containers":"main"}}`, 400, "containers"),
		post("recreate: a container the Pod lacks", recreate, `{"spec":{"containers":[{"name":"nope"}]}}`, 422, "spec.containers"),
		post("recreate: failurePolicy Bogus", recreate, `{"spec":{"containers":[{"name":"main"}],"strategy":{"failurePolicy":"Bogus"}}}`, 422, "spec.strategy.failurePolicy"),
		post("recreate: a negative deadline", recreate, `{"spec":{"containers":[{"name":"main"}],"activeDeadlineSeconds":-1}}`, 422, "spec.activeDeadlineSeconds"),
		post("recreate: a body for another Pod", recreate, `{"spec":{"podName":"other","containers":[{"name":"main"}]}}`, 422, "spec.podName"),
		post("inject: containers is a string", inject, `{"apiVersion":"v1","kind":"Pod","spec":{"containers":"main"}}`, 400, "containers"),
		post("inject: a CloneSet", inject, `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"CloneSet","metadata":{"name":"c"}}`, 400, ""),
	)

	httpClient, err := rest.HTTPClientFor(framework.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = 30 * time.Second
	for _, r := range reqs {
		t.Run(r.Name, func(t *testing.T) {
			code, body := badinput.Send(t, framework.Context(t), httpClient, framework.AdminConfig.Host, r)
			badinput.Check(t, r, code, body)
		})
	}
	t.Logf("%d malformed requests answered", len(reqs))

	// A valid body that names another Pod acts on the Pod of the path only (dry run: nothing
	// changes either way): the answer is about target, never other.
	t.Run("inplaceupdate: a body that names another Pod", func(t *testing.T) {
		code, body := badinput.Send(t, framework.Context(t), httpClient, framework.AdminConfig.Host, badinput.Request{Method: http.MethodPost, Path: inplaceUpdate, Query: "dryRun=All",
			ContentType: "application/json", Body: []byte(`{"metadata":{"name":"other"},"spec":{"containers":[{"name":"main","image":"inplace.local/app:v2"}]}}`)})
		var answer metav1.PartialObjectMetadata
		if err := json.Unmarshal(body, &answer); err != nil || (code < 400 && answer.Name != "target") || code >= 500 {
			t.Errorf("%d %s: want the answer about target (or a 4xx)", code, body)
		}
	})

	for _, name := range []string{"target", "other"} {
		spec, labels, annotations := specOf(name)
		if !reflect.DeepEqual([3]any{spec, labels, annotations}, before[name]) {
			t.Errorf("Pod %s changed by a malformed request:\nbefore %+v\nafter  %+v", name, before[name], [3]any{spec, labels, annotations})
		}
	}
	crrs, err := framework.Inplace.AppsV1alpha1().ContainerRecreateRequests(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(crrs.Items) != 0 {
		t.Errorf("ContainerRecreateRequests after the malformed requests: %v %v, want none", crrs, err)
	}
	if after, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, set.Name, metav1.GetOptions{}); err != nil ||
		after.Generation != setBefore.Generation || !reflect.DeepEqual(after.Spec, setBefore.Spec) {
		t.Errorf("SidecarSet %s changed by a malformed request (%v):\nbefore %+v\nafter  %+v", set.Name, err, setBefore.Spec, after)
	}
}

// TestLoadSmoke: the load of hack/bench-load.sh, short: 10 clients for 10 s over two namespaces
// through kube-apiserver. Every answer is a success or an expected 409 (an update or delete that
// raced another client) or 404 (one that raced a delete); every verb was served.
func TestLoadSmoke(t *testing.T) {
	ctx := framework.Context(t)
	namespaces := []string{framework.NewNamespace(t, ctx, "load"), framework.NewNamespace(t, ctx, "load")}
	cfg := rest.CopyConfig(framework.AdminConfig)
	cfg.QPS, cfg.Burst = -1, 0
	res := benchlib.Load(ctx, clientset.NewForConfigOrDie(cfg), benchlib.LoadConfig{
		Clients: 10, Duration: 10 * time.Second, Namespaces: namespaces, Seed: 1})
	t.Logf("10 clients x 10 s:\n%s", res.Table())
	if bad := res.Unexpected(); len(bad) > 0 {
		t.Errorf("%d unexpected answers:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	for verb, s := range res.Verbs {
		if s.Count == 0 {
			t.Errorf("no %s was sent", verb)
		}
	}
}
