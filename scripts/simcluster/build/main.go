// Package main only pins the control-plane commands into this module's dependency graph,
// so that `go mod tidy` records every module they need in go.sum. build.sh builds the real
// commands (k8s.io/kubernetes/cmd/...) from this module; this binary is never built.
package main

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {}
