// Command pause is the pod sandbox ("infra") process of the local cluster's
// containerd (its sandbox_image). It sleeps until SIGTERM or SIGINT and then
// exits 0. As PID 1 of a pod with a shared PID namespace it also reaps
// orphaned children, like the upstream pause container.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
