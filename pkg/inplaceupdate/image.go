package inplaceupdate

import "strings"

// normalizeImage expands an image reference the way container runtimes do: a name without a
// registry is on docker.io, a single-component name on docker.io is under library/, and a name
// with neither tag nor digest has the tag latest. "nginx", "nginx:latest" and
// "docker.io/library/nginx:latest" all normalize to the last.
func normalizeImage(ref string) string {
	name, digest, hasDigest := strings.Cut(ref, "@")
	tagged := false
	if slash := strings.LastIndex(name, "/"); strings.Contains(name[slash+1:], ":") {
		tagged = true
	}
	domain, rest, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	out := domain + "/" + rest
	if !tagged && !hasDigest {
		out += ":latest"
	}
	if hasDigest {
		out += "@" + digest
	}
	return out
}

// SameImage is true when two image references name the same image: "nginx" and "nginx:latest"
// (and "docker.io/library/nginx:latest") do.
func SameImage(a, b string) bool {
	return a == b || normalizeImage(a) == normalizeImage(b)
}
