package strategy

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// resourceVersionChecked answers an update whose metadata.resourceVersion is not a number with
// 400, naming the field. The generic store parses it with strconv inside GuaranteedUpdate and
// passes the parse error on unchanged, which the handlers answer with 500: the client's mistake
// reported as the server's. (A delete's preconditions.resourceVersion is compared as a string:
// a malformed one is a 409 Conflict there already.)
type resourceVersionChecked struct {
	storage.Interface
}

func (s resourceVersionChecked) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	err := s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	return malformedResourceVersion(err, "metadata.resourceVersion")
}

// malformedResourceVersion turns the strconv error of parsing field into a 400 that says what
// the field takes; any other error passes unchanged.
func malformedResourceVersion(err error, field string) error {
	var parse *strconv.NumError
	if err == nil || !errors.As(err, &parse) {
		return err
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s: Invalid value: %q: must be empty or a resourceVersion the server returned (an unsigned integer)", field, parse.Num))
}
