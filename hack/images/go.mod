// Tiny standard-library-only module for the local test images
// (hack/build-images.sh): the pause program and the OCI layout writer.
module github.com/inplace-dev/inplace/hack/images

go 1.25.0
