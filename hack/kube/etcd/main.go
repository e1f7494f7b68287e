// Command etcd is the etcd server (go.etcd.io/etcd/server/v3, the 3.6 line that
// k8s.io/kubernetes v1.35.4 pins), built by hack/build-kube.sh for the local cluster.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
