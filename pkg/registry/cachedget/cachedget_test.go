package cachedget

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// below stands in the cache delegator: it records the resourceVersions asked of it and answers
// with a Pod it holds (its labels map shared, as the cache shares its objects).
type below struct {
	storage.Interface
	held     *corev1.Pod
	asked    []string
	failWith func(rv string) error
}

func (b *below) Get(_ context.Context, _ string, opts storage.GetOptions, out runtime.Object) error {
	b.asked = append(b.asked, opts.ResourceVersion)
	if b.failWith != nil {
		if err := b.failWith(opts.ResourceVersion); err != nil {
			return err
		}
	}
	*out.(*corev1.Pod) = *b.held
	return nil
}

type revisions struct {
	rev   int64
	found bool
	err   error
	keys  []string
}

func (r *revisions) ModRevision(_ context.Context, key string) (int64, bool, error) {
	r.keys = append(r.keys, key)
	return r.rev, r.found, r.err
}

func TestGet(t *testing.T) {
	tooLarge := storage.NewTooLargeResourceVersionError(7, 5, 0)
	notFound := storage.NewKeyNotFoundError("/pods/ns/p", 7)
	for _, tc := range []struct {
		name      string
		rv        string
		revs      revisions
		failWith  func(string) error
		wantAsked []string
		wantErr   error
	}{
		{name: "the cache, once it holds the key's revision", revs: revisions{rev: 7, found: true}, wantAsked: []string{"7"}},
		{name: "a resourceVersion given: as asked", rv: "3", revs: revisions{rev: 7, found: true}, wantAsked: []string{"3"}},
		{name: "a key etcd does not hold: etcd answers", revs: revisions{}, wantAsked: []string{""}},
		{name: "the index unreadable: etcd answers", revs: revisions{err: errors.New("closed")}, wantAsked: []string{""}},
		{name: "the cache behind after its wait: etcd answers", revs: revisions{rev: 7, found: true},
			failWith: func(rv string) error {
				if rv == "7" {
					return tooLarge
				}
				return nil
			}, wantAsked: []string{"7", ""}},
		{name: "deleted after the revision: not found, as etcd would say", revs: revisions{rev: 7, found: true},
			failWith: func(string) error { return notFound }, wantAsked: []string{"7"}, wantErr: notFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}}}
			b := &below{held: held, failWith: tc.failWith}
			s := &Store{Interface: b, revisions: &tc.revs, pathPrefix: etcdPathPrefix("/registry"), resourcePrefix: "/pods"}
			var got corev1.Pod
			err := s.Get(context.Background(), "/pods/ns/p", storage.GetOptions{ResourceVersion: tc.rv}, &got)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(b.asked, tc.wantAsked) {
				t.Fatalf("asked the storage below for resourceVersions %q, want %q", b.asked, tc.wantAsked)
			}
			if tc.rv == "" && (len(tc.revs.keys) != 1 || tc.revs.keys[0] != "/registry/pods/ns/p") {
				t.Errorf("looked up etcd keys %q, want [/registry/pods/ns/p]", tc.revs.keys)
			}
			if err == nil && len(tc.wantAsked) == 1 && tc.wantAsked[0] == "7" {
				got.Labels["a"] = "changed"
				if held.Labels["a"] != "b" {
					t.Errorf("changing the object a GET returned changed the cache's")
				}
			}
		})
	}
}

func TestEtcdKey(t *testing.T) {
	for _, tc := range []struct{ prefix, key, want string }{
		{"/registry", "/apps.kruise.io/clonesets/ns/a", "/registry/apps.kruise.io/clonesets/ns/a"},
		{"registry", "/apps.kruise.io/clonesets/ns/a", "/registry/apps.kruise.io/clonesets/ns/a"},
		{"/registry/", "apps.kruise.io/clonesets/ns/a", "/registry/apps.kruise.io/clonesets/ns/a"},
		{"", "/apps.kruise.io/clonesets/ns/a", "/apps.kruise.io/clonesets/ns/a"},
	} {
		s := &Store{pathPrefix: etcdPathPrefix(tc.prefix), resourcePrefix: "/apps.kruise.io/clonesets"}
		if tc.key[0] != '/' {
			s.resourcePrefix = "apps.kruise.io/clonesets"
		}
		got, ok := s.etcdKey(tc.key)
		if !ok || got != tc.want {
			t.Errorf("prefix %q, key %q: %q %v, want %q", tc.prefix, tc.key, got, ok, tc.want)
		}
	}
	s := &Store{pathPrefix: "/registry/", resourcePrefix: "/apps.kruise.io/clonesets"}
	if _, ok := s.etcdKey("/apps.kruise.io/clonesets/../secrets/x"); ok {
		t.Errorf("a key with .. is one the etcd3 store refuses: it must go to that store for its error")
	}
}
