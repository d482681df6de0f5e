# shellcheck shell=bash
# The -ldflags of our Kubernetes builds: stripped, and stamped with the release they are built
# from (what `--version` prints and what the API server reports). Sourced by
# scripts/simcluster/build.sh (the control plane) and scripts/kubenode/build.sh (kubelet,
# kube-proxy), so every binary of the cluster says the same version the same way.
#   source scripts/simcluster/ldflags.sh; go build -ldflags "$(k8s_ldflags v1.31.4)" ...
k8s_ldflags() {
  local version=$1 major minor rest p ldflags="-s -w"
  IFS=. read -r major minor rest <<<"${version#v}"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ldflags="$ldflags -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000"
    ldflags="$ldflags -X $p.buildDate=2024-12-10T00:00:00Z"
  done
  echo "$ldflags"
}
