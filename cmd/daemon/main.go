// Command inplace-daemon runs on every node: it talks CRI to the node's container runtime to report
// what runs in each Pod and to restart containers for in-place updates.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"

	"github.com/inplace-dev/inplace/pkg/daemon"
)

func main() {
	o := daemon.NewOptions()
	cmd := &cobra.Command{
		Use:   "inplace-daemon",
		Short: "Per-node agent of inplace: reports runtime container meta and restarts containers through the CRI",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return daemon.Run(cmd.Context(), o, daemon.Controllers())
		},
	}
	o.AddFlags(cmd.Flags())
	// SIGTERM or SIGINT cancels the context: controllers finish their current work and the
	// process exits; a second signal kills it at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	go func() {
		<-ctx.Done()
		stop()
	}()
	cmd.SetContext(ctx)
	os.Exit(cli.Run(cmd))
}
