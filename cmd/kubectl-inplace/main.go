// Command kubectl-inplace is the kubectl plugin of inplace: on the PATH, it runs as
// `kubectl inplace` (rollout, set image, scale, update pod, recreate pod). The commands live in
// pkg/kubectlplugin.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/inplace-dev/inplace/pkg/kubectlplugin"
)

func main() {
	// Ctrl-C ends a watch (rollout status, --wait) cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := kubectlplugin.NewCmdInplace(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		stop()
		os.Exit(1)
	}
}
