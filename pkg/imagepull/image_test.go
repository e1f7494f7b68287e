package imagepull

import "testing"

func TestSplitImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		image, name, tag string
		wantErr          bool
	}{
		{image: "nginx", name: "nginx", tag: "latest"},
		{image: "nginx:1.25", name: "nginx", tag: "1.25"},
		{image: "docker.io/library/nginx:1.25", name: "nginx", tag: "1.25"},
		{image: "example.com:5000/team/app:v2", name: "example.com:5000/team/app", tag: "v2"},
		{image: "nginx@" + digest, name: "nginx", tag: digest},
		{image: "nginx:1.25@" + digest, name: "nginx", tag: digest},
		{image: "Not:A:Ref", wantErr: true},
		{image: "", wantErr: true},
	} {
		name, tag, err := SplitImage(tc.image)
		if (err != nil) != tc.wantErr {
			t.Errorf("SplitImage(%q) error %v, want error %v", tc.image, err, tc.wantErr)
			continue
		}
		if name != tc.name || tag != tc.tag {
			t.Errorf("SplitImage(%q) = %q, %q; want %q, %q", tc.image, name, tag, tc.name, tc.tag)
		}
	}
}
