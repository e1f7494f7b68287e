// Package cachedget answers the GET of one object from the watch cache instead of etcd, as fresh
// as a read from etcd, when etcd is inplace-apiserver's embedded member.
//
// k8s.io/apiserver reads a GET without resourceVersion from etcd, because its watch cache may not
// have seen a write etcd has just acknowledged: a gRPC request to etcd, a raft read index and the
// decoding of the stored bytes, ~80% of what inplace-apiserver spends on a GET (a CPU profile
// during hack/bench-api.sh). The embedded member can say in process, from its in-memory index, at
// which revision the key was last written (etcd.Server.ModRevision); waiting until the watch cache
// holds that revision of the key, and answering from the cache, gives what etcd would have given:
// the last acknowledged write of the object, or a later one. The watch cache receives that
// revision as an event of its own resource, so the wait is the cache's lag behind etcd, a few
// milliseconds at most, and no progress notification is needed.
//
// Anything else goes to etcd as before: a key etcd does not hold (the not-found answer is etcd's),
// an error reading the index, a cache that did not catch up within k8s.io/apiserver's 3 s, a GET
// with a resourceVersion (the cache answers those already) and resources without a watch cache.
package cachedget

import (
	"context"
	"path"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// Revisions tells at which revision an etcd key was last written, and whether it exists; at least
// the revision of every write acknowledged before the call (etcd.Server.ModRevision).
type Revisions interface {
	ModRevision(ctx context.Context, key string) (rev int64, found bool, err error)
}

// RESTOptionsGetter returns getter's options with a storage decorator that answers GETs of the
// resources it puts behind a watch cache from that cache (see the package comment).
func RESTOptionsGetter(getter generic.RESTOptionsGetter, revisions Revisions) generic.RESTOptionsGetter {
	return optionsGetter{getter: getter, revisions: revisions}
}

type optionsGetter struct {
	getter    generic.RESTOptionsGetter
	revisions Revisions
}

func (g optionsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.getter.GetRESTOptions(resource, example)
	if err != nil || opts.Decorator == nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil {
			return s, destroy, err
		}
		if _, cached := s.(*cacher.CacheDelegator); !cached {
			return s, destroy, nil
		}
		return &Store{Interface: s, revisions: g.revisions, pathPrefix: etcdPathPrefix(config.Prefix), resourcePrefix: resourcePrefix}, destroy, nil
	}
	return opts, nil
}

// etcdPathPrefix is what k8s.io/apiserver's etcd3 store puts before every key: the storage prefix
// (--etcd-prefix, /registry by default) as an absolute path ending in "/".
func etcdPathPrefix(prefix string) string {
	p := path.Join("/", prefix)
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// Store is a watch-cached storage whose GETs without resourceVersion the cache answers once it
// holds the key's last revision.
type Store struct {
	storage.Interface
	revisions                  Revisions
	pathPrefix, resourcePrefix string
}

// Get answers from the watch cache once it has the key's last write, else as the storage below.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if opts.ResourceVersion != "" {
		return s.Interface.Get(ctx, key, opts, out)
	}
	etcdKey, ok := s.etcdKey(key)
	if !ok {
		return s.Interface.Get(ctx, key, opts, out)
	}
	rev, found, err := s.revisions.ModRevision(ctx, etcdKey)
	if err != nil || !found {
		return s.Interface.Get(ctx, key, opts, out)
	}
	fresh := opts
	fresh.ResourceVersion = strconv.FormatInt(rev, 10)
	// The cache answers "not older than" the revision: the write at rev, or a later one.
	if err := s.Interface.Get(ctx, key, fresh, out); err != nil {
		if storage.IsNotFound(err) {
			// Deleted after rev: the cache has seen the deletion, as etcd would have.
			return err
		}
		return s.Interface.Get(ctx, key, opts, out)
	}
	// The cache hands out a shallow copy of the object it holds; callers may change what they
	// get (a deletion sets fields of the object it read), so they get their own.
	own := out.DeepCopyObject()
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(own).Elem())
	return nil
}

// etcdKey is key as the etcd3 store writes it to etcd (its prepareKey), and false for a key that
// store would refuse: the storage below answers those with its own error.
func (s *Store) etcdKey(key string) (string, bool) {
	key, err := storage.PrepareKey(s.resourcePrefix, key, false)
	if err != nil {
		return "", false
	}
	return s.pathPrefix + strings.TrimPrefix(key, "/"), true
}
