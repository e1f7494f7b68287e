package inplaceupdate

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	labelsFieldPath      = "metadata.labels"
	annotationsFieldPath = "metadata.annotations"
)

// envFromMetadataExcluded are env vars that read annotations but must not restart a container
// when they change (SidecarSet hot upgrade versions), as in OpenKruise.
var envFromMetadataExcluded = map[string]bool{
	"SIDECARSET_VERSION":     true,
	"SIDECARSET_VERSION_ALT": true,
}

// metadataEnv is an env var of a container that reads one Pod label or annotation.
type metadataEnv struct {
	name string // env var name
	path string // labelsFieldPath or annotationsFieldPath
	key  string // the label or annotation key
}

// splitSubscriptedPath splits "metadata.labels['k']" into "metadata.labels" and "k".
func splitSubscriptedPath(fieldPath string) (path, subscript string, ok bool) {
	open := strings.Index(fieldPath, "['")
	if open < 0 || !strings.HasSuffix(fieldPath, "']") || open+2 > len(fieldPath)-2 {
		return "", "", false
	}
	return fieldPath[:open], fieldPath[open+2 : len(fieldPath)-2], true
}

// metadataEnvs lists the env vars of c that read a single Pod label or annotation through a
// downward-API fieldRef (metadata.labels['k'], metadata.annotations['k']).
func metadataEnvs(c *corev1.Container) []metadataEnv {
	var envs []metadataEnv
	for i := range c.Env {
		e := &c.Env[i]
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || envFromMetadataExcluded[e.Name] {
			continue
		}
		path, key, ok := splitSubscriptedPath(e.ValueFrom.FieldRef.FieldPath)
		if !ok || (path != labelsFieldPath && path != annotationsFieldPath) {
			continue
		}
		envs = append(envs, metadataEnv{name: e.Name, path: path, key: key})
	}
	return envs
}

// readsMetadata is true when c reads the label (path labelsFieldPath) or annotation
// (annotationsFieldPath) key through env.
func readsMetadata(c *corev1.Container, path, key string) bool {
	for _, e := range metadataEnvs(c) {
		if e.path == path && e.key == key {
			return true
		}
	}
	return false
}

// EnvFromMetadataHash is the hash of the values that the env vars of c reading a Pod label or
// annotation through a fieldRef take from meta (a missing key reads as ""). The daemon reports
// RuntimeEnvFromMetadataHash of the running container as ExtractedEnvFromMetadataHash in the
// runtime-containers-meta annotation; the two are equal exactly when the container sees meta's
// current values. Never 0 (0 means "not computed" in that annotation).
func EnvFromMetadataHash(c *corev1.Container, meta metav1.Object) uint64 {
	pairs := map[string]string{}
	for _, e := range metadataEnvs(c) {
		if e.path == labelsFieldPath {
			pairs[e.name] = meta.GetLabels()[e.key]
		} else {
			pairs[e.name] = meta.GetAnnotations()[e.key]
		}
	}
	return hashEnvPairs(pairs)
}

// RuntimeEnvFromMetadataHash is EnvFromMetadataHash computed from the environment a running
// container actually has (env maps a variable name to its value, e.g. parsed from `env` run in
// the container); a variable missing from env reads as "".
func RuntimeEnvFromMetadataHash(c *corev1.Container, env map[string]string) uint64 {
	pairs := map[string]string{}
	for _, e := range metadataEnvs(c) {
		pairs[e.name] = env[e.name]
	}
	return hashEnvPairs(pairs)
}

// hashEnvPairs is a 64-bit FNV-1a over the pairs sorted by name, each string length-prefixed so
// that no two different sets of pairs encode alike.
func hashEnvPairs(pairs map[string]string) uint64 {
	names := make([]string, 0, len(pairs))
	for name := range pairs {
		names = append(names, name)
	}
	slices.Sort(names)
	h := fnv.New64a()
	var buf [binary.MaxVarintLen64]byte
	write := func(s string) {
		n := binary.PutUvarint(buf[:], uint64(len(s)))
		_, _ = h.Write(buf[:n])
		_, _ = h.Write([]byte(s))
	}
	for _, name := range names {
		write(name)
		write(pairs[name])
	}
	if sum := h.Sum64(); sum != 0 {
		return sum
	}
	return 1
}
