package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apiserver/options"
	"github.com/inplace-dev/inplace/test/integration/framework"
)

// etcdGets reads the server's etcd_requests_total of GETs of CloneSets. The counter is the
// process's, shared by every server the tests run: the tests that read it are not parallel, so
// no other test runs meanwhile.
func etcdGets(t *testing.T, s *framework.Server) int {
	t.Helper()
	code, body := httpGet(t, s, "/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d %.300s", code, body)
	}
	m := regexp.MustCompile(`(?m)^etcd_requests_total\{group="apps.kruise.io",operation="get",resource="clonesets"\} (\d+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGetsFromWatchCache: with the embedded etcd a GET of one object is answered by the watch
// cache (no etcd request, by the server's own etcd_requests_total), and as fresh as etcd: each
// GET right after an update returns that update; a deleted object is gone at once. With
// --embedded-etcd-gets-from-cache=false, or without a watch cache (--watch-cache=false), every GET
// reads etcd, as k8s.io/apiserver does.
func TestGetsFromWatchCache(t *testing.T) {
	const gets = 30
	for _, tc := range []struct{ getsFromCache, watchCache bool }{{true, true}, {false, true}, {true, false}} {
		// Without a watch cache there is no cache to answer from: GETs read etcd whatever the flag.
		fromCache := tc.getsFromCache && tc.watchCache
		t.Run(fmt.Sprintf("gets-from-cache=%v,watch-cache=%v", tc.getsFromCache, tc.watchCache), func(t *testing.T) {
			s := framework.StartServerWith(t, t.TempDir(), func(o *options.Options) {
				o.EmbeddedEtcdGetsFromCache = tc.getsFromCache
				o.Recommended.Etcd.EnableWatchCache = tc.watchCache
			})
			ctx := testContext(t)
			clonesets := s.Client.AppsV1alpha1().CloneSets("default")
			cs, err := clonesets.Create(ctx, newCloneSet("fresh"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			before := etcdGets(t, s)
			for i := range gets {
				cs.Labels = map[string]string{"round": strconv.Itoa(i)}
				if cs, err = clonesets.Update(ctx, cs, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update %d: %v", i, err)
				}
				got, err := clonesets.Get(ctx, "fresh", metav1.GetOptions{})
				if err != nil {
					t.Fatalf("get after update %d: %v", i, err)
				}
				if got.ResourceVersion != cs.ResourceVersion || got.Labels["round"] != strconv.Itoa(i) {
					t.Fatalf("get right after update %d (resourceVersion %s) returned resourceVersion %s, labels %v: an older object",
						i, cs.ResourceVersion, got.ResourceVersion, got.Labels)
				}
			}
			read := etcdGets(t, s) - before
			if fromCache && read != 0 {
				t.Errorf("%d GETs read etcd %d times: want none, the watch cache answers them", gets, read)
			}
			if !fromCache && read < gets {
				t.Errorf("%d GETs read etcd %d times without the cache: the counter does not count what this test thinks", gets, read)
			}

			if err := clonesets.Delete(ctx, "fresh", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := clonesets.Get(ctx, "fresh", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get right after the delete: %v, want NotFound", err)
			}
		})
	}
}
