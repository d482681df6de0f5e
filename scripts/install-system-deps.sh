#!/usr/bin/env bash
# Installs the Debian packages tpc-bench needs, skipping what is already there.
# Usage: scripts/install-system-deps.sh [GROUP ...]
#   groups: base lab postgres browser cluster images kubenode kubenode-build monitoring
set -euo pipefail

declare -A GROUP_PACKAGES=(
  [base]="python3 python3-venv openssl curl ca-certificates procps psmisc"
  [lab]="xrootd-server xrootd-server-plugins xrootd-client globus-gridftp-server-progs globus-gass-copy-progs globus-proxy-utils iproute2 iptables iputils-ping iperf3 xrootd-scitokens-plugins gfal2-util-scripts python3-gfal2-util gfal2-plugin-http gfal2-plugin-xrootd gfal2-plugin-gridftp"
  [postgres]="postgresql"
  [browser]="chromium"
  [cluster]="etcd-server"
  [images]="podman buildah debootstrap runc uidmap fuse-overlayfs slirp4netns"
  # What a real Kubernetes node of the lab runs beside kubelet (tpcbench lab up --kubernetes).
  [kubenode]="containerd iptables containernetworking-plugins conntrack"
  # What scripts/kubenode/build.sh needs besides Go: a static C pause program, file capabilities.
  [kubenode-build]="gcc libc6-dev libcap2-bin"
  # promtool, which checks the chart's PrometheusRule (tests/chart/test_chart_monitoring.py);
  # the package's Prometheus server is not wanted: see below.
  [monitoring]="prometheus"
)

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(base lab postgres browser cluster images kubenode kubenode-build monitoring)

wanted=()
for g in "${groups[@]}"; do
  [ -n "${GROUP_PACKAGES[$g]+x}" ] || { echo "install-system-deps: unknown group '$g'" >&2; exit 2; }
  for p in ${GROUP_PACKAGES[$g]}; do wanted+=("$p"); done
done

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-system-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

# Debian's prometheus package starts its server (port 9090, enabled at boot) wherever services
# may start; tpc-bench only wants its promtool. A server this install started is stopped and
# kept from starting at boot. (In a container whose policy-rc.d denies starts, nothing ran.)
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  if [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus.service
  else
    /etc/init.d/prometheus stop >/dev/null
    update-rc.d prometheus disable >/dev/null 2>&1 || true
  fi
  echo "install-system-deps: the prometheus package's server is stopped and off at boot (tpc-bench uses only promtool)"
fi
