// Command etcd is etcd's own server entry point (etcd's server/main.go), built from the Go module proxy so
// that the real-API-server tests need no binary from outside the registries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
