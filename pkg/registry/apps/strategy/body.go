package strategy

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// Body is a subresource request's body as the T its REST's New returns; anything else is the
// client's mistake (400), described as expected ("a Scale", "an InPlaceUpdate body").
func Body[T runtime.Object](obj runtime.Object, expected string) (T, error) {
	t, ok := obj.(T)
	if !ok {
		return t, apierrors.NewBadRequest(fmt.Sprintf("expected %s, got %T", expected, obj))
	}
	return t, nil
}
