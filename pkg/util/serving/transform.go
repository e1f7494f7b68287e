package serving

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// DropManagedFields is an informer transform (WithTransform of an informer factory) that removes
// metadata.managedFields from every cached object. No controller of inplace reads them, and they
// are often the largest part of a Pod's metadata: on a big cluster they are much of an informer's
// memory. An object written back from the cache (Update) keeps its managedFields on the server:
// an update without them leaves them as they are. Anything that is not an object (a tombstone of
// an unknown final state) passes unchanged.
func DropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
