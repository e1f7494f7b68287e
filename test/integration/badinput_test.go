package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// badRequest is a malformed or forbidden request. The server must answer it with a 4xx (wantCode
// when set) whose body is a Status with a readable message naming field (when set), store
// nothing and change nothing, never answer 5xx, never hang.
type badRequest struct {
	name        string
	method      string
	path        string
	query       string
	contentType string
	body        []byte
	wantCode    int
	field       string
}

// storedKind describes one kind for the bad-input cases: where it lives, a valid object of it,
// and the fields where a wrong type or an invalid value goes.
type storedKind struct {
	resource   string
	namespaced bool
	kind       string
	valid      func(name string) map[string]any
	// wrongType is a field path (dot-separated) whose JSON type the kind does not accept, with
	// a value of the wrong type.
	wrongType      string
	wrongTypeValue any
	// statusField is a field of .status with a value of the wrong type for it.
	statusField string
	scale       bool
}

func (k storedKind) collection() string {
	if k.namespaced {
		return "/apis/apps.kruise.io/v1alpha1/namespaces/default/" + k.resource
	}
	return "/apis/apps.kruise.io/v1alpha1/" + k.resource
}

func (k storedKind) item(name string) string { return k.collection() + "/" + name }

// toMap turns a typed object into its JSON form, apiVersion and kind included.
func toMap(t *testing.T, obj runtime.Object, kind string) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["apiVersion"], m["kind"] = appsv1alpha1.SchemeGroupVersion.String(), kind
	delete(m, "status")
	return m
}

// with returns a deep copy of m with path (dot-separated) set to value (nil: removed).
func with(t *testing.T, m map[string]any, path string, value any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	cur := out
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	if value == nil {
		delete(cur, parts[len(parts)-1])
	} else {
		cur[parts[len(parts)-1]] = value
	}
	return out
}

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// nested is JSON nested depth levels deep: {"a":{"a":...}}.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// badInputKinds are the stored kinds with what the cases need of each.
func badInputKinds(t *testing.T) []storedKind {
	return []storedKind{{
		resource: "clonesets", namespaced: true, kind: "CloneSet",
		valid:     func(name string) map[string]any { return toMap(t, newCloneSet(name), "CloneSet") },
		wrongType: "spec.replicas", wrongTypeValue: "three",
		statusField: "status.replicas", scale: true,
	}, {
		resource: "sidecarsets", kind: "SidecarSet",
		valid:     func(name string) map[string]any { return toMap(t, newSidecarSet(name), "SidecarSet") },
		wrongType: "spec.containers", wrongTypeValue: "sidecar",
		statusField: "status.matchedPods",
	}, {
		resource: "containerrecreaterequests", namespaced: true, kind: "ContainerRecreateRequest",
		valid:     func(name string) map[string]any { return toMap(t, newCRR(name), "ContainerRecreateRequest") },
		wrongType: "spec.containers", wrongTypeValue: map[string]any{"name": "main"},
		statusField: "status.phase",
	}}
}

// badRequestsFor lists the malformed requests against one kind; victim is an existing object of it.
func badRequestsFor(t *testing.T, k storedKind, victim map[string]any) []badRequest {
	const (
		jsonType  = "application/json"
		jsonPatch = "application/json-patch+json"
		merge     = "application/merge-patch+json"
		strategic = "application/strategic-merge-patch+json"
		apply     = "application/apply-patch+yaml"
	)
	name := victim["metadata"].(map[string]any)["name"].(string)
	rv := victim["metadata"].(map[string]any)["resourceVersion"].(string)
	valid := k.valid("bad-new")
	validRaw := mustJSON(valid)
	coll, item := k.collection(), k.item(name)
	post := func(n string, body []byte, code int, field string) badRequest {
		return badRequest{name: "create: " + n, method: http.MethodPost, path: coll, contentType: jsonType, body: body, wantCode: code, field: field}
	}
	postQ := func(n, query string, body []byte, code int, field string) badRequest {
		r := post(n, body, code, field)
		r.query = query
		return r
	}
	put := func(n string, body []byte, code int, field string) badRequest {
		return badRequest{name: "update: " + n, method: http.MethodPut, path: item, contentType: jsonType, body: body, wantCode: code, field: field}
	}
	patch := func(n, ct string, body string, code int, field string) badRequest {
		return badRequest{name: "patch " + ct + ": " + n, method: http.MethodPatch, path: item, contentType: ct, body: []byte(body), wantCode: code, field: field}
	}
	get := func(n, path, query string, code int) badRequest {
		return badRequest{name: n, method: http.MethodGet, path: path, query: query, wantCode: code}
	}
	victimWith := func(path string, value any) []byte { return mustJSON(with(t, victim, path, value)) }
	wrongTypeTop := strings.Split(k.wrongType, ".")[0]

	reqs := []badRequest{
		// Bodies that are not the kind at all.
		post("not JSON", []byte("this is not json"), 400, ""),
		post("truncated JSON", validRaw[:len(validRaw)/2], 400, ""),
		post("a JSON array", []byte(`[]`), 400, ""),
		post("a JSON string", []byte(`"CloneSet"`), 400, ""),
		post("a JSON number", []byte(`42`), 400, ""),
		post("binary garbage", []byte{0xff, 0xfe, 0x00, 0x01, 0x80}, 400, ""),
		post("YAML sent as JSON", []byte("apiVersion: apps.kruise.io/v1alpha1\nkind: "+k.kind+"\n"), 400, ""),
		post("another kind", mustJSON(with(t, valid, "kind", "Pod")), 400, ""),
		post("another version", mustJSON(with(t, valid, "apiVersion", "apps.kruise.io/v9")), 400, ""),
		post("another group", mustJSON(with(t, valid, "apiVersion", "apps/v1")), 400, ""),
		// Wrong types.
		post("wrong type at "+k.wrongType, mustJSON(with(t, valid, k.wrongType, k.wrongTypeValue)), 400, k.wrongType),
		post("spec is a string", mustJSON(with(t, valid, "spec", "text")), 400, "spec"),
		post("metadata is a list", mustJSON(with(t, valid, "metadata", []any{"x"})), 400, "metadata"),
		post("labels is a list", mustJSON(with(t, valid, "metadata.labels", []any{"a"})), 400, "labels"),
		post("a label value is a number", mustJSON(with(t, valid, "metadata.labels", map[string]any{"a": 1})), 400, "labels"),
		post("annotations is a string", mustJSON(with(t, valid, "metadata.annotations", "a=b")), 400, "annotations"),
		post("finalizers is an object", mustJSON(with(t, valid, "metadata.finalizers", map[string]any{"a": "b"})), 400, "finalizers"),
		// Unknown and duplicate fields.
		postQ("unknown field, fieldValidation=Strict", "fieldValidation=Strict", mustJSON(with(t, valid, "spec.bogus", 1)), 400, "spec.bogus"),
		postQ("unknown top-level field, Strict", "fieldValidation=Strict", mustJSON(with(t, valid, "bogus", true)), 400, "bogus"),
		postQ("unknown metadata field, Strict", "fieldValidation=Strict", mustJSON(with(t, valid, "metadata.bogus", "x")), 400, "metadata.bogus"),
		postQ("duplicate field, Strict", "fieldValidation=Strict",
			[]byte(strings.Replace(string(validRaw), `"metadata":{`, `"metadata":{"name":"dup",`, 1)), 400, "metadata.name"),
		postQ("fieldValidation=Bogus", "fieldValidation=Bogus", validRaw, 422, "fieldValidation"),
		// Names.
		post("uppercase name", mustJSON(with(t, valid, "metadata.name", "Not_A_Name")), 422, "metadata.name"),
		post("name with a slash", mustJSON(with(t, valid, "metadata.name", "a/b")), 0, ""),
		post("name of 300 characters", mustJSON(with(t, valid, "metadata.name", strings.Repeat("a", 300))), 422, "metadata.name"),
		post("no name, no generateName", mustJSON(with(t, valid, "metadata.name", nil)), 422, "metadata.name"),
		post("bad generateName", mustJSON(with(t, with(t, valid, "metadata.name", nil), "metadata.generateName", "UP_")), 422, "metadata.generateName"),
		post("bad label key", mustJSON(with(t, valid, "metadata.labels", map[string]any{"-bad-": "x"})), 422, "metadata.labels"),
		post("bad label value", mustJSON(with(t, valid, "metadata.labels", map[string]any{"a": "has space"})), 422, "metadata.labels"),
		post("bad annotation key", mustJSON(with(t, valid, "metadata.annotations", map[string]any{"a b": "x"})), 422, "metadata.annotations"),
		post("bad finalizer", mustJSON(with(t, valid, "metadata.finalizers", []any{"not a finalizer!"})), 422, "metadata.finalizers"),
		// Sizes and depth.
		post("annotations of 300 KiB", mustJSON(with(t, valid, "metadata.annotations", map[string]any{"big": strings.Repeat("x", 300<<10)})), 422, "metadata.annotations"),
		post("a body of 4 MiB", mustJSON(with(t, valid, "metadata.annotations", map[string]any{"big": strings.Repeat("x", 4<<20)})), 413, ""),
		post("JSON nested 20000 levels deep", []byte(`{"apiVersion":"apps.kruise.io/v1alpha1","kind":"`+k.kind+`","metadata":{"name":"deep"},"spec":`+nested(20000)+`}`), 400, ""),
		postQ("JSON nested 200 levels deep in an unknown field, Strict", "fieldValidation=Strict", mustJSON(with(t, valid, "spec.bogus", json.RawMessage(nested(200)))), 400, "spec.bogus"),
		// Query parameters and media types.
		postQ("dryRun=Maybe", "dryRun=Maybe", validRaw, 422, "dryRun"),
		postQ("fieldManager of 200 characters", "fieldManager="+strings.Repeat("m", 200), validRaw, 0, "fieldManager"),
		{name: "create: text/plain", method: http.MethodPost, path: coll, contentType: "text/plain", body: validRaw, wantCode: 415},
		{name: "create: bad YAML", method: http.MethodPost, path: coll, contentType: "application/yaml", body: []byte("apiVersion: [\n  kind"), wantCode: 400},
		{name: "create: YAML of another kind", method: http.MethodPost, path: coll, contentType: "application/yaml", body: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n"), wantCode: 400},
		{name: "create: protobuf that is not protobuf", method: http.MethodPost, path: coll, contentType: "application/vnd.kubernetes.protobuf", body: []byte("k8s\x00garbage"), wantCode: 400},

		// Updates of the victim.
		put("not JSON", []byte("{"), 400, ""),
		put("name differs from the URL", victimWith("metadata.name", "someone-else"), 400, "name"),
		put("resourceVersion not a number", victimWith("metadata.resourceVersion", "abc"), 400, "metadata.resourceVersion"),
		put("stale resourceVersion", victimWith("metadata.resourceVersion", "1"), 409, ""),
		put("wrong type at "+k.wrongType, mustJSON(with(t, victim, k.wrongType, k.wrongTypeValue)), 400, k.wrongType),
		put("uid of another object", victimWith("metadata.uid", "00000000-0000-0000-0000-000000000000"), 409, "UID"),
		put("creationTimestamp not a time", victimWith("metadata.creationTimestamp", "yesterday"), 400, "yesterday"),
		put("another kind", victimWith("kind", "Deployment"), 400, ""),
		{name: "update: no such object", method: http.MethodPut, path: k.item("nobody"), contentType: jsonType, body: mustJSON(with(t, valid, "metadata.name", "nobody")), wantCode: 404},

		// Patches of the victim, each type with bad content.
		patch("not a list", jsonPatch, `{"op":"add"}`, 400, ""),
		patch("not JSON", jsonPatch, `[{"op":`, 400, ""),
		patch("unknown op", jsonPatch, `[{"op":"bogus","path":"/spec"}]`, 0, ""),
		patch("no path", jsonPatch, `[{"op":"add","value":1}]`, 0, ""),
		patch("remove a missing path", jsonPatch, `[{"op":"remove","path":"/spec/nothing/here"}]`, 422, ""),
		patch("failing test op", jsonPatch, `[{"op":"test","path":"/metadata/name","value":"other"}]`, 422, ""),
		patch("wrong type at "+k.wrongType, jsonPatch, `[{"op":"replace","path":"/`+strings.ReplaceAll(k.wrongType, ".", "/")+`","value":`+string(mustJSON(k.wrongTypeValue))+`}]`, 0, k.wrongType),
		patch("rename", jsonPatch, `[{"op":"replace","path":"/metadata/name","value":"renamed"}]`, 400, "name"),
		patch("index out of range", jsonPatch, `[{"op":"add","path":"/metadata/finalizers/7","value":"x.io/y"}]`, 422, ""),
		patch("not JSON", merge, `{"spec":`, 400, ""),
		patch("a list", merge, `[1,2]`, 0, ""),
		patch("wrong type at "+k.wrongType, merge, string(mustJSON(with(t, map[string]any{}, k.wrongType, k.wrongTypeValue))), 0, k.wrongType),
		patch(wrongTypeTop+" is a number", merge, `{"`+wrongTypeTop+`":5}`, 0, wrongTypeTop),
		patch("rename", merge, `{"metadata":{"name":"renamed"}}`, 400, "name"),
		patch("bad label value", merge, `{"metadata":{"labels":{"a":"has space"}}}`, 422, "metadata.labels"),
		patch("not JSON", strategic, `{{`, 400, ""),
		patch("unknown $patch directive", strategic, `{"metadata":{"$patch":"bogus"}}`, 400, "bogus"),
		patch("wrong type at "+k.wrongType, strategic, string(mustJSON(with(t, map[string]any{}, k.wrongType, k.wrongTypeValue))), 422, ""),
		patch("labels is a list", strategic, `{"metadata":{"labels":["a"]}}`, 0, "labels"),
		patch("bad finalizer", strategic, `{"metadata":{"finalizers":["not a finalizer!"]}}`, 422, "metadata.finalizers"),
		patch("no fieldManager", apply, "apiVersion: apps.kruise.io/v1alpha1\nkind: "+k.kind+"\nmetadata:\n  name: "+name+"\n", 422, "fieldManager"),
		{name: "apply: bad YAML", method: http.MethodPatch, path: item, query: "fieldManager=bad", contentType: apply, body: []byte("metadata: [\n"), wantCode: 400},
		{name: "apply: no apiVersion or kind", method: http.MethodPatch, path: item, query: "fieldManager=bad", contentType: apply, body: []byte("metadata:\n  name: " + name + "\n"), wantCode: 400},
		{name: "apply: another kind", method: http.MethodPatch, path: item, query: "fieldManager=bad", contentType: apply, body: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n"), wantCode: 400},
		{name: "apply: unknown field", method: http.MethodPatch, path: item, query: "fieldManager=bad&fieldValidation=Strict", contentType: apply,
			body: []byte("apiVersion: apps.kruise.io/v1alpha1\nkind: " + k.kind + "\nmetadata:\n  name: " + name + "\nspec:\n  bogus: 1\n"), wantCode: 400, field: ".spec.bogus"},
		{name: "apply: wrong type at " + k.wrongType, method: http.MethodPatch, path: item, query: "fieldManager=bad", contentType: apply,
			body: mustJSON(with(t, with(t, map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": k.kind}, "metadata.name", name), k.wrongType, k.wrongTypeValue)), wantCode: 400, field: "." + k.wrongType},
		{name: "patch: unsupported patch type", method: http.MethodPatch, path: item, contentType: "application/xml", body: []byte("<x/>"), wantCode: 415},
		{name: "patch: dryRun=Maybe", method: http.MethodPatch, path: item, query: "dryRun=Maybe", contentType: merge, body: []byte(`{}`), wantCode: 422, field: "dryRun"},
		{name: "patch: no such object", method: http.MethodPatch, path: k.item("nobody"), contentType: merge, body: []byte(`{"metadata":{"labels":{"a":"b"}}}`), wantCode: 404},

		// Status subresource.
		{name: "status: wrong type at " + k.statusField, method: http.MethodPatch, path: item + "/status", contentType: merge,
			body: mustJSON(with(t, map[string]any{}, k.statusField, []any{"x"})), field: k.statusField},
		{name: "status: not JSON", method: http.MethodPatch, path: item + "/status", contentType: merge, body: []byte(`{"status":`), wantCode: 400},
		{name: "status: POST", method: http.MethodPost, path: item + "/status", contentType: jsonType, body: validRaw, wantCode: 405},
		{name: "status: DELETE", method: http.MethodDelete, path: item + "/status", wantCode: 405},
		{name: "status: PUT another name", method: http.MethodPut, path: item + "/status", contentType: jsonType, body: victimWith("metadata.name", "someone-else"), wantCode: 400, field: "name"},
		{name: "status: stale resourceVersion", method: http.MethodPut, path: item + "/status", contentType: jsonType, body: victimWith("metadata.resourceVersion", "1"), wantCode: 409},

		// Reads, lists and watches with bad parameters.
		get("list: labelSelector does not parse", coll, "labelSelector="+url.QueryEscape("a in ("), 400),
		get("list: labelSelector with a bad key", coll, "labelSelector="+url.QueryEscape("-bad-=x"), 400),
		get("list: fieldSelector on an unknown field", coll, "fieldSelector="+url.QueryEscape("spec.bogus=x"), 400),
		get("list: fieldSelector without operator", coll, "fieldSelector=metadata.name", 400),
		get("list: resourceVersion not a number", coll, "resourceVersion=abc", 400),
		get("list: resourceVersionMatch=Exact without resourceVersion", coll, "resourceVersionMatch=Exact", 0),
		get("list: resourceVersionMatch=Bogus", coll, "resourceVersionMatch=Bogus&resourceVersion=1", 0),
		get("list: continue token that is not one", coll, "limit=1&continue=garbage", 400),
		get("list: limit not a number", coll, "limit=many", 400),
		get("list: watch not a boolean", coll, "watch=perhaps", 400),
		get("list: timeoutSeconds not a number", coll, "timeoutSeconds=soon", 400),
		get("watch: resourceVersion not a number", coll, "watch=true&resourceVersion=abc", 400),
		get("watch: labelSelector does not parse", coll, "watch=true&labelSelector="+url.QueryEscape("a in ("), 400),
		get("watch: fieldSelector on an unknown field", coll, "watch=true&fieldSelector="+url.QueryEscape("spec.bogus=x"), 400),
		get("watch: sendInitialEvents without resourceVersionMatch", coll, "watch=true&sendInitialEvents=true", 0),
		get("watch: timeoutSeconds not a number", coll, "watch=true&timeoutSeconds=soon", 400),
		get("watch: allowWatchBookmarks not a boolean", coll, "watch=true&allowWatchBookmarks=perhaps", 400),
		get("get: resourceVersion not a number", item, "resourceVersion=abc", 400),
		get("get: no such object", k.item("nobody"), "", 404),
		get("get: no such subresource", item+"/bogus", "", 404),
		get("get: bad name", k.item("UPPER_CASE"), "", 404),

		// Deletes.
		{name: "delete: body not JSON", method: http.MethodDelete, path: item, contentType: jsonType, body: []byte("{"), wantCode: 400},
		{name: "delete: propagationPolicy=Bogus", method: http.MethodDelete, path: item, query: "propagationPolicy=Bogus", wantCode: 0, field: "propagationPolicy"},
		{name: "delete: uid precondition of another object", method: http.MethodDelete, path: item, contentType: jsonType,
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`), wantCode: 409},
		{name: "delete: stale resourceVersion precondition", method: http.MethodDelete, path: item, contentType: jsonType,
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"1"}}`), wantCode: 409},
		{name: "delete: resourceVersion precondition not a number", method: http.MethodDelete, path: item, contentType: jsonType,
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"abc"}}`), wantCode: 409, field: "precondition"},
		{name: "delete: gracePeriodSeconds not a number", method: http.MethodDelete, path: item, query: "gracePeriodSeconds=later", wantCode: 400},
		{name: "delete: dryRun=Maybe", method: http.MethodDelete, path: item, query: "dryRun=Maybe", wantCode: 422, field: "dryRun"},
		{name: "deletecollection: labelSelector does not parse", method: http.MethodDelete, path: coll, query: "labelSelector=" + url.QueryEscape("a in ("), wantCode: 400},
		{name: "delete: no such object", method: http.MethodDelete, path: k.item("nobody"), wantCode: 404},
	}
	if k.namespaced {
		reqs = append(reqs,
			post("namespace differs from the URL", mustJSON(with(t, valid, "metadata.namespace", "other")), 400, "namespace"),
			post("bad namespace in the URL", validRaw, 0, ""),
			put("namespace changed", victimWith("metadata.namespace", "other"), 400, "namespace"),
		)
		reqs[len(reqs)-2].path = strings.Replace(coll, "/namespaces/default/", "/namespaces/Not_A_Namespace/", 1)
	}
	if k.scale {
		scale := item + "/scale"
		scaleBody := func(replicas any) []byte {
			return mustJSON(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"replicas": replicas}})
		}
		reqs = append(reqs,
			badRequest{name: "scale: replicas a string", method: http.MethodPut, path: scale, contentType: jsonType, body: scaleBody("three"), wantCode: 400, field: "replicas"},
			badRequest{name: "scale: replicas negative", method: http.MethodPut, path: scale, contentType: jsonType, body: scaleBody(-1), wantCode: 422, field: "spec.replicas"},
			badRequest{name: "scale: merge patch replicas negative", method: http.MethodPatch, path: scale, contentType: merge, body: []byte(`{"spec":{"replicas":-5}}`), wantCode: 422, field: "spec.replicas"},
			badRequest{name: "scale: json patch replicas a string", method: http.MethodPatch, path: scale, contentType: jsonPatch, body: []byte(`[{"op":"replace","path":"/spec/replicas","value":"x"}]`), field: "replicas"},
			badRequest{name: "scale: another kind", method: http.MethodPut, path: scale, contentType: jsonType, body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"}}`), wantCode: 400},
			badRequest{name: "scale: not JSON", method: http.MethodPut, path: scale, contentType: jsonType, body: []byte("{"), wantCode: 400},
			badRequest{name: "scale: stale resourceVersion", method: http.MethodPut, path: scale, contentType: jsonType,
				body: mustJSON(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
					"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": "1"}, "spec": map[string]any{"replicas": 3}}), wantCode: 409},
			badRequest{name: "scale: of another object", method: http.MethodPut, path: k.item("nobody") + "/scale", contentType: jsonType,
				body: []byte(strings.Replace(string(scaleBody(3)), `"name":"`+name+`"`, `"name":"nobody"`, 1)), wantCode: 404},
			badRequest{name: "scale: POST", method: http.MethodPost, path: scale, contentType: jsonType, body: scaleBody(3), wantCode: 405},
		)
	}
	_ = rv
	return reqs
}

// TestBadInput sends every malformed request of badRequestsFor to every stored kind: each is
// answered with a 4xx Status with a readable message (naming the field where the case says),
// nothing is stored or changed, no answer is a 5xx, none hangs.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	ctx := testContext(t)
	transport, err := rest.TransportFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 20 * time.Second}

	total := 0
	for _, k := range badInputKinds(t) {
		// The victim every update, patch and delete case aims at.
		code, body := send(t, client, s, badRequest{method: http.MethodPost, path: k.collection(), contentType: "application/json", body: mustJSON(k.valid("victim"))})
		if code != http.StatusCreated {
			t.Fatalf("creating the %s victim: %d %s", k.kind, code, body)
		}
		var victim map[string]any
		if err := json.Unmarshal(body, &victim); err != nil {
			t.Fatal(err)
		}
		delete(victim, "status")
		before := getJSON(t, s, k.item("victim"))

		for _, r := range badRequestsFor(t, k, victim) {
			total++
			t.Run(k.resource+"/"+r.name, func(t *testing.T) {
				code, body := send(t, client, s, r)
				checkBadAnswer(t, r, code, body)
			})
		}

		// Nothing stored, nothing changed.
		after := getJSON(t, s, k.item("victim"))
		if b, a := before["metadata"].(map[string]any)["resourceVersion"], after["metadata"].(map[string]any)["resourceVersion"]; a != b {
			t.Errorf("%s victim: resourceVersion %v -> %v: a bad request changed it:\nbefore %s\nafter  %s", k.kind, b, a, mustJSON(before), mustJSON(after))
		}
		list := getJSON(t, s, k.collection())
		if items, _ := list["items"].([]any); len(items) != 1 {
			var names []string
			for _, it := range items {
				names = append(names, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
			}
			t.Errorf("%s: %d objects after the bad requests, want only the victim: %v", k.kind, len(items), names)
		}
	}
	t.Logf("%d malformed requests answered", total)
	if total < 150 {
		t.Errorf("only %d malformed requests; the suite promises at least 150", total)
	}
	_ = ctx
}

// send does one request and returns the status code and body; a transport error (a hang past the
// client's timeout included) fails the test.
func send(t *testing.T, client *http.Client, s *framework.Server, r badRequest) (int, []byte) {
	t.Helper()
	target := s.Config.Host + r.path
	if r.query != "" {
		target += "?" + r.query
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(testContext(t), r.method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer after %v: %v", r.method, r.path, time.Since(start), err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", r.method, r.path, err)
	}
	return resp.StatusCode, out
}

// checkBadAnswer holds one answer to the promise of badRequest.
func checkBadAnswer(t *testing.T, r badRequest, code int, body []byte) {
	t.Helper()
	if code < 400 || code >= 500 || (r.wantCode != 0 && code != r.wantCode) {
		want := "a 4xx"
		if r.wantCode != 0 {
			want = fmt.Sprint(r.wantCode)
		}
		t.Fatalf("%s %s?%s: %d, want %s: %.600s", r.method, r.path, r.query, code, want, body)
	}
	var status metav1.Status
	if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
		t.Fatalf("%s %s: %d with a body that is not a Status (%v): %.300s", r.method, r.path, code, err, body)
	}
	msg := status.Message
	if strings.TrimSpace(msg) == "" {
		t.Errorf("%d with no message: %s", code, body)
	}
	for _, bad := range []string{"panic", "goroutine", "runtime error", "%!", "strconv."} {
		if strings.Contains(msg, bad) {
			t.Errorf("the message shows an internal failure (%q): %s", bad, msg)
		}
	}
	if r.field != "" {
		named := strings.Contains(msg, r.field)
		if status.Details != nil {
			for _, c := range status.Details.Causes {
				named = named || strings.Contains(c.Field, r.field) || strings.Contains(c.Message, r.field)
			}
		}
		if !named {
			t.Errorf("the answer does not name %s: %s", r.field, body)
		}
	}
}
