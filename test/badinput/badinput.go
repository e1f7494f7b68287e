// Package badinput sends malformed requests and holds their answers to what a user is owed: a
// 4xx Status with a readable message that names the field where one applies, never a 5xx, never a
// hang. test/integration (the stored kinds) and test/e2e (the subresources, through
// kube-apiserver) share it.
package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Request is one malformed or forbidden request. WantCode 0: any 4xx.
type Request struct {
	Name, Method, Path, Query, ContentType string
	Body                                   []byte
	WantCode                               int
	// Field must appear in the message or in a cause of the answer.
	Field string
}

// Send does r against host and returns the status code and body; a transport error (a hang past
// the client's timeout included) fails the test.
func Send(t testing.TB, ctx context.Context, client *http.Client, host string, r Request) (int, []byte) {
	t.Helper()
	target := host + r.Path
	if r.Query != "" {
		target += "?" + r.Query
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer after %v: %v", r.Method, r.Path, time.Since(start), err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", r.Method, r.Path, err)
	}
	return resp.StatusCode, out
}

// Check holds one answer to the promise of Request.
func Check(t testing.TB, r Request, code int, body []byte) {
	t.Helper()
	if code < 400 || code >= 500 || (r.WantCode != 0 && code != r.WantCode) {
		want := "a 4xx"
		if r.WantCode != 0 {
			want = fmt.Sprint(r.WantCode)
		}
		t.Fatalf("%s %s?%s: %d, want %s: %.600s", r.Method, r.Path, r.Query, code, want, body)
	}
	var status metav1.Status
	if err := json.Unmarshal(body, &status); err != nil || status.Kind != "Status" {
		t.Fatalf("%s %s: %d with a body that is not a Status (%v): %.300s", r.Method, r.Path, code, err, body)
	}
	if strings.TrimSpace(status.Message) == "" {
		t.Errorf("%d with no message: %s", code, body)
	}
	for _, bad := range []string{"panic", "goroutine", "runtime error", "%!", "strconv."} {
		if strings.Contains(status.Message, bad) {
			t.Errorf("the message shows an internal failure (%q): %s", bad, status.Message)
		}
	}
	if r.Field == "" {
		return
	}
	named := strings.Contains(status.Message, r.Field)
	if status.Details != nil {
		for _, c := range status.Details.Causes {
			named = named || strings.Contains(c.Field, r.Field) || strings.Contains(c.Message, r.Field)
		}
	}
	if !named {
		t.Errorf("the answer does not name %s: %s", r.Field, body)
	}
}
