package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// loadManifests reads YAML (or JSON) documents, unpacking Lists.
func loadManifests(path string) ([]unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []unstructured.Unstructured
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if doc == nil {
			continue
		}
		u := unstructured.Unstructured{Object: doc}
		if u.IsList() {
			if err := u.EachListItem(func(o runtime.Object) error {
				out = append(out, *o.(*unstructured.Unstructured))
				return nil
			}); err != nil {
				return nil, fmt.Errorf("decoding the List in %s: %w", path, err)
			}
			continue
		}
		out = append(out, u)
	}
}
