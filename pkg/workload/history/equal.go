package history

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// EqualData tells whether two revisions' data are the same revision: the same bytes, or the same
// JSON once null members are dropped. A revision OpenKruise (built on an older k8s.io/apimachinery)
// wrote has "creationTimestamp":null in its template's metadata, which newer encoders leave out:
// the same template, which must stay the same revision when inplace takes over (or every Pod
// would be rolled to a "new" one).
func EqualData(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(dropNulls(va), dropNulls(vb))
}

// dropNulls removes the null members of JSON objects, recursively.
func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(x)
		}
	case []any:
		for i := range t {
			t[i] = dropNulls(t[i])
		}
	}
	return v
}
