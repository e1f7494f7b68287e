package imagepull

import (
	"fmt"

	"github.com/distribution/reference"
)

// SplitImage splits an image reference into the NodeImage key (the familiar name, e.g. "nginx" or
// "example.com/app") and the tag to pull ("latest" when none is given, or the digest when there is
// one), as OpenKruise's NormalizeImageRefToNameTag does, so a NodeImage written by either reads
// the same. A reference with both a tag and a digest keeps only the digest: the digest is what is
// pulled.
func SplitImage(image string) (name, tag string, err error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", "", fmt.Errorf("invalid image %q: %w", image, err)
	}
	name = reference.FamiliarName(named)
	if digested, ok := named.(reference.Digested); ok {
		return name, digested.Digest().String(), nil
	}
	if tagged, ok := reference.TagNameOnly(named).(reference.Tagged); ok {
		return name, tagged.Tag(), nil
	}
	return name, "", nil
}
