package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/test/badinput"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

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
	// group is the kind's API group version when not apps.kruise.io/v1alpha1.
	group string
}

// groupVersion is the kind's API group and version.
func (k storedKind) groupVersion() string {
	if k.group != "" {
		return k.group
	}
	return appsv1alpha1.SchemeGroupVersion.String()
}

func (k storedKind) collection() string {
	if k.namespaced {
		return "/apis/" + k.groupVersion() + "/namespaces/default/" + k.resource
	}
	return "/apis/" + k.groupVersion() + "/" + k.resource
}

func (k storedKind) item(name string) string { return k.collection() + "/" + name }

// toMap turns a typed object into its JSON form, apiVersion and kind included.
func toMap(t *testing.T, obj runtime.Object, kind string) map[string]any {
	return toMapAt(t, obj, appsv1alpha1.SchemeGroupVersion.String(), kind)
}

// toMapAt is obj as JSON fields, at the API version apiVersion, without its status.
func toMapAt(t *testing.T, obj runtime.Object, apiVersion, kind string) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["apiVersion"], m["kind"] = apiVersion, kind
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
	}, {
		resource: "imagepulljobs", namespaced: true, kind: "ImagePullJob",
		valid:     func(name string) map[string]any { return toMap(t, newImagePullJob(name), "ImagePullJob") },
		wrongType: "spec.image", wrongTypeValue: 42,
		statusField: "status.desired",
	}, {
		resource: "imagelistpulljobs", namespaced: true, kind: "ImageListPullJob",
		valid:     func(name string) map[string]any { return toMap(t, newImageListPullJob(name), "ImageListPullJob") },
		wrongType: "spec.images", wrongTypeValue: "nginx",
		statusField: "status.completed",
	}, {
		resource: "nodeimages", kind: "NodeImage",
		valid:     func(name string) map[string]any { return toMap(t, newNodeImage(name), "NodeImage") },
		wrongType: "spec.images", wrongTypeValue: []any{"nginx"},
		statusField: "status.imageStatuses",
	}, {
		resource: "podunavailablebudgets", namespaced: true, kind: "PodUnavailableBudget", group: policyv1alpha1.SchemeGroupVersion.String(),
		valid: func(name string) map[string]any {
			return toMapAt(t, newPUBV1alpha1(name), policyv1alpha1.SchemeGroupVersion.String(), "PodUnavailableBudget")
		},
		wrongType: "spec.selector", wrongTypeValue: "app=web",
		statusField: "status.unavailableAllowed",
	}}
}

// badRequestsFor lists the malformed requests against one kind; victim is an existing object of it.
func badRequestsFor(t *testing.T, k storedKind, victim map[string]any) []badinput.Request {
	const (
		jsonType  = "application/json"
		jsonPatch = "application/json-patch+json"
		merge     = "application/merge-patch+json"
		strategic = "application/strategic-merge-patch+json"
		apply     = "application/apply-patch+yaml"
	)
	name := victim["metadata"].(map[string]any)["name"].(string)
	valid := k.valid("bad-new")
	validRaw := mustJSON(valid)
	coll, item := k.collection(), k.item(name)
	post := func(n string, body []byte, code int, field string) badinput.Request {
		return badinput.Request{Name: "create: " + n, Method: http.MethodPost, Path: coll, ContentType: jsonType, Body: body, WantCode: code, Field: field}
	}
	postQ := func(n, query string, body []byte, code int, field string) badinput.Request {
		r := post(n, body, code, field)
		r.Query = query
		return r
	}
	put := func(n string, body []byte, code int, field string) badinput.Request {
		return badinput.Request{Name: "update: " + n, Method: http.MethodPut, Path: item, ContentType: jsonType, Body: body, WantCode: code, Field: field}
	}
	patch := func(n, ct string, body string, code int, field string) badinput.Request {
		return badinput.Request{Name: "patch " + ct + ": " + n, Method: http.MethodPatch, Path: item, ContentType: ct, Body: []byte(body), WantCode: code, Field: field}
	}
	get := func(n, path, query string, code int) badinput.Request {
		return badinput.Request{Name: n, Method: http.MethodGet, Path: path, Query: query, WantCode: code}
	}
	victimWith := func(path string, value any) []byte { return mustJSON(with(t, victim, path, value)) }
	wrongTypeTop := strings.Split(k.wrongType, ".")[0]

	reqs := []badinput.Request{
		// Bodies that are not the kind at all.
		post("not JSON", []byte("this is not json"), 400, ""),
		post("truncated JSON", validRaw[:len(validRaw)/2], 400, ""),
		post("a JSON array", []byte(`[]`), 400, ""),
		post("a JSON string", []byte(`"CloneSet"`), 400, ""),
		post("a JSON number", []byte(`42`), 400, ""),
		post("binary garbage", []byte{0xff, 0xfe, 0x00, 0x01, 0x80}, 400, ""),
		post("YAML sent as JSON", []byte("apiVersion: "+k.groupVersion()+"\nkind: "+k.kind+"\n"), 400, ""),
		post("another kind", mustJSON(with(t, valid, "kind", "Pod")), 400, ""),
		post("another version", mustJSON(with(t, valid, "apiVersion", strings.Split(k.groupVersion(), "/")[0]+"/v9")), 400, ""),
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
		post("JSON nested 20000 levels deep", []byte(`{"apiVersion":"`+k.groupVersion()+`","kind":"`+k.kind+`","metadata":{"name":"deep"},"spec":`+nested(20000)+`}`), 400, ""),
		postQ("JSON nested 200 levels deep in an unknown field, Strict", "fieldValidation=Strict", mustJSON(with(t, valid, "spec.bogus", json.RawMessage(nested(200)))), 400, "spec.bogus"),
		// Query parameters and media types.
		postQ("dryRun=Maybe", "dryRun=Maybe", validRaw, 422, "dryRun"),
		postQ("fieldManager of 200 characters", "fieldManager="+strings.Repeat("m", 200), validRaw, 0, "fieldManager"),
		{Name: "create: text/plain", Method: http.MethodPost, Path: coll, ContentType: "text/plain", Body: validRaw, WantCode: 415},
		{Name: "create: bad YAML", Method: http.MethodPost, Path: coll, ContentType: "application/yaml", Body: []byte("apiVersion: [\n  kind"), WantCode: 400},
		{Name: "create: YAML of another kind", Method: http.MethodPost, Path: coll, ContentType: "application/yaml", Body: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  Name: x\n"), WantCode: 400},
		{Name: "create: protobuf that is not protobuf", Method: http.MethodPost, Path: coll, ContentType: "application/vnd.kubernetes.protobuf", Body: []byte("k8s\x00garbage"), WantCode: 400},

		// Updates of the victim.
		put("not JSON", []byte("{"), 400, ""),
		put("name differs from the URL", victimWith("metadata.name", "someone-else"), 400, "name"),
		put("resourceVersion not a number", victimWith("metadata.resourceVersion", "abc"), 400, "metadata.resourceVersion"),
		put("stale resourceVersion", victimWith("metadata.resourceVersion", "1"), 409, ""),
		put("wrong type at "+k.wrongType, mustJSON(with(t, victim, k.wrongType, k.wrongTypeValue)), 400, k.wrongType),
		put("uid of another object", victimWith("metadata.uid", "00000000-0000-0000-0000-000000000000"), 409, "UID"),
		put("creationTimestamp not a time", victimWith("metadata.creationTimestamp", "yesterday"), 400, "yesterday"),
		put("another kind", victimWith("kind", "Deployment"), 400, ""),
		{Name: "update: no such object", Method: http.MethodPut, Path: k.item("nobody"), ContentType: jsonType, Body: mustJSON(with(t, valid, "metadata.name", "nobody")), WantCode: 404},

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
		patch("no fieldManager", apply, "apiVersion: "+k.groupVersion()+"\nkind: "+k.kind+"\nmetadata:\n  name: "+name+"\n", 422, "fieldManager"),
		{Name: "apply: bad YAML", Method: http.MethodPatch, Path: item, Query: "fieldManager=bad", ContentType: apply, Body: []byte("metadata: [\n"), WantCode: 400},
		{Name: "apply: no apiVersion or kind", Method: http.MethodPatch, Path: item, Query: "fieldManager=bad", ContentType: apply, Body: []byte("metadata:\n  Name: " + name + "\n"), WantCode: 400},
		{Name: "apply: another kind", Method: http.MethodPatch, Path: item, Query: "fieldManager=bad", ContentType: apply, Body: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  Name: " + name + "\n"), WantCode: 400},
		{Name: "apply: unknown field", Method: http.MethodPatch, Path: item, Query: "fieldManager=bad&fieldValidation=Strict", ContentType: apply,
			Body: []byte("apiVersion: " + k.groupVersion() + "\nkind: " + k.kind + "\nmetadata:\n  Name: " + name + "\nspec:\n  bogus: 1\n"), WantCode: 400, Field: ".spec.bogus"},
		{Name: "apply: wrong type at " + k.wrongType, Method: http.MethodPatch, Path: item, Query: "fieldManager=bad", ContentType: apply,
			Body: mustJSON(with(t, with(t, map[string]any{"apiVersion": k.groupVersion(), "kind": k.kind}, "metadata.name", name), k.wrongType, k.wrongTypeValue)), WantCode: 400, Field: "." + k.wrongType},
		{Name: "patch: unsupported patch type", Method: http.MethodPatch, Path: item, ContentType: "application/xml", Body: []byte("<x/>"), WantCode: 415},
		{Name: "patch: dryRun=Maybe", Method: http.MethodPatch, Path: item, Query: "dryRun=Maybe", ContentType: merge, Body: []byte(`{}`), WantCode: 422, Field: "dryRun"},
		{Name: "patch: no such object", Method: http.MethodPatch, Path: k.item("nobody"), ContentType: merge, Body: []byte(`{"metadata":{"labels":{"a":"b"}}}`), WantCode: 404},

		// Status subresource.
		{Name: "status: wrong type at " + k.statusField, Method: http.MethodPatch, Path: item + "/status", ContentType: merge,
			Body: mustJSON(with(t, map[string]any{}, k.statusField, []any{"x"})), Field: k.statusField},
		{Name: "status: not JSON", Method: http.MethodPatch, Path: item + "/status", ContentType: merge, Body: []byte(`{"status":`), WantCode: 400},
		{Name: "status: POST", Method: http.MethodPost, Path: item + "/status", ContentType: jsonType, Body: validRaw, WantCode: 405},
		{Name: "status: DELETE", Method: http.MethodDelete, Path: item + "/status", WantCode: 405},
		{Name: "status: PUT another name", Method: http.MethodPut, Path: item + "/status", ContentType: jsonType, Body: victimWith("metadata.name", "someone-else"), WantCode: 400, Field: "name"},
		{Name: "status: stale resourceVersion", Method: http.MethodPut, Path: item + "/status", ContentType: jsonType, Body: victimWith("metadata.resourceVersion", "1"), WantCode: 409},

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
		{Name: "delete: body not JSON", Method: http.MethodDelete, Path: item, ContentType: jsonType, Body: []byte("{"), WantCode: 400},
		{Name: "delete: propagationPolicy=Bogus", Method: http.MethodDelete, Path: item, Query: "propagationPolicy=Bogus", WantCode: 0, Field: "propagationPolicy"},
		{Name: "delete: uid precondition of another object", Method: http.MethodDelete, Path: item, ContentType: jsonType,
			Body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`), WantCode: 409},
		{Name: "delete: stale resourceVersion precondition", Method: http.MethodDelete, Path: item, ContentType: jsonType,
			Body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"1"}}`), WantCode: 409},
		{Name: "delete: resourceVersion precondition not a number", Method: http.MethodDelete, Path: item, ContentType: jsonType,
			Body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"resourceVersion":"abc"}}`), WantCode: 409, Field: "precondition"},
		{Name: "delete: gracePeriodSeconds not a number", Method: http.MethodDelete, Path: item, Query: "gracePeriodSeconds=later", WantCode: 400},
		{Name: "delete: dryRun=Maybe", Method: http.MethodDelete, Path: item, Query: "dryRun=Maybe", WantCode: 422, Field: "dryRun"},
		{Name: "deletecollection: labelSelector does not parse", Method: http.MethodDelete, Path: coll, Query: "labelSelector=" + url.QueryEscape("a in ("), WantCode: 400},
		{Name: "delete: no such object", Method: http.MethodDelete, Path: k.item("nobody"), WantCode: 404},
	}
	if k.namespaced {
		reqs = append(reqs,
			post("namespace differs from the URL", mustJSON(with(t, valid, "metadata.namespace", "other")), 400, "namespace"),
			post("bad namespace in the URL", validRaw, 0, ""),
			put("namespace changed", victimWith("metadata.namespace", "other"), 400, "namespace"),
		)
		reqs[len(reqs)-2].Path = strings.Replace(coll, "/namespaces/default/", "/namespaces/Not_A_Namespace/", 1)
	}
	if k.scale {
		scale := item + "/scale"
		scaleBody := func(replicas any) []byte {
			return mustJSON(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
				"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"replicas": replicas}})
		}
		reqs = append(reqs,
			badinput.Request{Name: "scale: replicas a string", Method: http.MethodPut, Path: scale, ContentType: jsonType, Body: scaleBody("three"), WantCode: 400, Field: "replicas"},
			badinput.Request{Name: "scale: replicas negative", Method: http.MethodPut, Path: scale, ContentType: jsonType, Body: scaleBody(-1), WantCode: 422, Field: "spec.replicas"},
			badinput.Request{Name: "scale: merge patch replicas negative", Method: http.MethodPatch, Path: scale, ContentType: merge, Body: []byte(`{"spec":{"replicas":-5}}`), WantCode: 422, Field: "spec.replicas"},
			badinput.Request{Name: "scale: json patch replicas a string", Method: http.MethodPatch, Path: scale, ContentType: jsonPatch, Body: []byte(`[{"op":"replace","path":"/spec/replicas","value":"x"}]`), Field: "replicas"},
			badinput.Request{Name: "scale: another kind", Method: http.MethodPut, Path: scale, ContentType: jsonType, Body: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"}}`), WantCode: 400},
			badinput.Request{Name: "scale: not JSON", Method: http.MethodPut, Path: scale, ContentType: jsonType, Body: []byte("{"), WantCode: 400},
			badinput.Request{Name: "scale: stale resourceVersion", Method: http.MethodPut, Path: scale, ContentType: jsonType,
				Body: mustJSON(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
					"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": "1"}, "spec": map[string]any{"replicas": 3}}), WantCode: 409},
			badinput.Request{Name: "scale: of another object", Method: http.MethodPut, Path: k.item("nobody") + "/scale", ContentType: jsonType,
				Body: []byte(strings.Replace(string(scaleBody(3)), `"name":"`+name+`"`, `"name":"nobody"`, 1)), WantCode: 404},
			badinput.Request{Name: "scale: POST", Method: http.MethodPost, Path: scale, ContentType: jsonType, Body: scaleBody(3), WantCode: 405},
		)
	}
	return reqs
}

// TestBadInput sends every malformed request of badRequestsFor to every stored kind: each is
// answered with a 4xx Status with a readable message (naming the field where the case says),
// nothing is stored or changed, no answer is a 5xx, none hangs.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := framework.StartServer(t)
	transport, err := rest.TransportFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 20 * time.Second}

	total := 0
	for _, k := range badInputKinds(t) {
		// The victim every update, patch and delete case aims at.
		code, body := badinput.Send(t, testContext(t), client, s.Config.Host, badinput.Request{Method: http.MethodPost, Path: k.collection(), ContentType: "application/json", Body: mustJSON(k.valid("victim"))})
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
			t.Run(k.resource+"/"+r.Name, func(t *testing.T) {
				code, body := badinput.Send(t, testContext(t), client, s.Config.Host, r)
				badinput.Check(t, r, code, body)
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
}
