// Package manifests reads rendered Kubernetes manifests (helm template, kubectl kustomize) for the
// tests that compare or install them: the chart's tests and the e2e deploy and Helm tests.
package manifests

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Decode returns the objects of a stream of YAML or JSON documents, empty documents skipped.
func Decode(data string) ([]*unstructured.Unstructured, error) {
	var objects []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	for i := 0; ; i++ {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objects, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding document %d: %w", i, err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

// Int reads an integer field of a decoded object (JSON numbers decode as float64, YAML's as
// int64); 0 when absent.
func Int(obj map[string]any, path ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}
