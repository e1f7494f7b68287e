package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
)

// clientMistakesAre4xx answers what is the client's mistake with a 4xx where the generic
// handlers of k8s.io/apiserver would answer 500 (each case found by test/integration's bad-input
// suite; kube-apiserver answers them the same way for its own kinds):
//   - a resourceVersion query parameter that is not a number (get, list, watch): the storage
//     layer's parse error is not one the handlers map to a status (and, with it, the other
//     numeric and boolean query parameters, whose errors did not name them: queryParameters);
//   - server-side apply of a body that does not fit the kind's schema (an unknown field, a wrong
//     type): apimachinery's field manager returns "failed to create typed patch object" as a plain
//     error;
//   - a strategic merge patch with an unknown $patch directive: the handler maps some of
//     mergepatch's errors to 400, not ErrBadPatchType ("unknown patch type").
//
// Only requests of inplace's groups are looked at, after authentication and authorization.
func clientMistakesAre4xx(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/apis/"+apps.GroupName+"/") && !strings.HasPrefix(r.URL.Path, "/apis/"+policy.GroupName+"/") {
			next.ServeHTTP(w, r)
			return
		}
		if err := checkQuery(r.URL.Query()); err != nil {
			writeError(w, r, err)
			return
		}
		if r.Method != http.MethodPatch {
			next.ServeHTTP(w, r)
			return
		}
		rec := &internalErrorRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.code == 0 {
			return // not a 500: already written through
		}
		if msg, ok := patchMistake(rec.body.Bytes()); ok {
			writeError(w, r, apierrors.NewBadRequest(msg))
			return
		}
		rec.flush()
	})
}

// queryParameters are the query parameters of the generic handlers that take a number or a
// boolean, with what they take. The handlers' own parsing answers a bad value with 400 but a
// message that does not name the parameter ("strconv.ParseInt: parsing \"many\": invalid
// syntax"), or ignores it (a boolean: anything but false is true).
var queryParameters = []struct {
	name, takes string
	valid       func(string) bool
}{
	{"resourceVersion", "empty or a resourceVersion the server returned (an unsigned integer)", isUint},
	{"limit", "an integer", isInt},
	{"timeoutSeconds", "an integer", isInt},
	{"gracePeriodSeconds", "an integer", isInt},
	{"watch", "true or false", isBool},
	{"allowWatchBookmarks", "true or false", isBool},
	{"sendInitialEvents", "true or false", isBool},
	{"force", "true or false", isBool},
	{"orphanDependents", "true or false", isBool},
	{"ignoreStoreReadErrorWithClusterBreakingPotential", "true or false", isBool},
}

func isUint(v string) bool { _, err := strconv.ParseUint(v, 10, 64); return err == nil }
func isInt(v string) bool  { _, err := strconv.ParseInt(v, 10, 64); return err == nil }
func isBool(v string) bool { _, err := strconv.ParseBool(v); return err == nil }

// checkQuery answers a malformed value of one of queryParameters with a 400 naming it.
func checkQuery(query url.Values) error {
	for _, p := range queryParameters {
		if v := query.Get(p.name); v != "" && !p.valid(v) {
			return apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be %s", p.name, v, p.takes))
		}
	}
	return nil
}

// patchMistake tells whether a 500 answer to a PATCH is one of the client's mistakes above, and
// returns its message.
func patchMistake(body []byte) (string, bool) {
	obj, err := runtime.Decode(Codecs.UniversalDeserializer(), body)
	if err != nil {
		return "", false
	}
	status, ok := obj.(*metav1.Status)
	if !ok {
		return "", false
	}
	msg := status.Message
	if strings.HasPrefix(msg, "failed to create typed patch object") || strings.HasPrefix(msg, "unknown patch type:") {
		return msg, true
	}
	return "", false
}

// writeError writes err as a Status in the format the request accepts.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, Codecs, v1alpha1.SchemeGroupVersion, w, r)
}

// internalErrorRecorder holds back a 500 answer (status and body) and writes every other answer
// through unchanged.
type internalErrorRecorder struct {
	http.ResponseWriter
	code   int // 500 once held back; 0 otherwise
	passed bool
	body   bytes.Buffer
}

func (rec *internalErrorRecorder) WriteHeader(code int) {
	if !rec.passed && rec.code == 0 && code == http.StatusInternalServerError {
		rec.code = code
		return
	}
	rec.passed = true
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *internalErrorRecorder) Write(p []byte) (int, error) {
	if rec.code != 0 {
		return rec.body.Write(p)
	}
	rec.passed = true
	return rec.ResponseWriter.Write(p)
}

// flush writes the held-back 500 as it was.
func (rec *internalErrorRecorder) flush() {
	rec.ResponseWriter.WriteHeader(rec.code)
	_, _ = rec.ResponseWriter.Write(rec.body.Bytes())
}
