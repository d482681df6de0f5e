#!/usr/bin/env bash
# make demo: a lab of real XRootD-HTTPS and GridFTP servers, the webapp, one campaign, the dashboard.
#   scripts/demo.sh         start (or reuse) everything and run a campaign
#   scripts/demo.sh figures print the shape of the paper's Figures 7 and 8 from the API
#   scripts/demo.sh down    stop the dashboard and the lab
# Knobs (environment): DEMO_NODES (4), DEMO_FILE_SIZE (32MiB), DEMO_TRANSFERS (11),
#   DEMO_STREAMS (8,1), DEMO_PROTOCOLS (https,gridftp), DEMO_PORT (8000), TPCBENCH_HOME,
#   DEMO_WAN (prp: RTTs between real research sites; uniform:30ms; a matrix file; off),
#   DEMO_LINK (2gbit: each node's link capacity, also without a WAN; off for none; the grid's
#   thresholds follow it), DEMO_TCP_BUFFER (auto: the nodes' TCP buffer maximum with a WAN,
#   2 x the bandwidth-delay product of the link and the largest RTT, as research networks tune
#   their data-transfer nodes; a size such as 512KiB makes one stream window-limited at WAN
#   RTTs, and the streams page then says so), DEMO_RUNTIME (process; podman:
#   the nodes' servers run from our container images, built first if need be), DEMO_BASELINE
#   (3: seconds of iperf3 per ordered pair before its transfers, after 2 s of slow start, the pair pages' link line;
#   off for none), DEMO_AUTH (x509,token: how transfers are authorized; token is https's),
#   DEMO_CLIENT (native; native,gfal2 adds gfal-copy as a second client).
# DEMO_RUNTIME=kubernetes (make demo-cluster): a cluster lab (tpcbench lab up --kubernetes) on
#   the same WAN, helm install of charts/tpc-bench with ci/lab-values.yaml (whose campaign
#   settings apply: DEMO_FILE_SIZE, DEMO_TRANSFERS, DEMO_STREAMS, DEMO_PROTOCOLS, DEMO_PORT,
#   DEMO_BASELINE, DEMO_AUTH and DEMO_CLIENT do not), a run-now campaign through the webapp
#   pod, the dashboard on the webapp's NodePort.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${DEMO_NODES:-4}
FILE_SIZE=${DEMO_FILE_SIZE:-32MiB}
TRANSFERS=${DEMO_TRANSFERS:-11}
STREAMS=${DEMO_STREAMS:-8,1}
PROTOCOLS=${DEMO_PROTOCOLS:-https,gridftp}
PORT=${DEMO_PORT:-8000}
WAN=${DEMO_WAN:-prp}
LINK=${DEMO_LINK:-2gbit}
TCP_BUFFER=${DEMO_TCP_BUFFER:-auto}
RUNTIME=${DEMO_RUNTIME:-process}
BASELINE=${DEMO_BASELINE:-3}
AUTH=${DEMO_AUTH:-x509,token}
CLIENT=${DEMO_CLIENT:-native}
export TPCBENCH_HOME=${TPCBENCH_HOME:-$([ "$(id -u)" -eq 0 ] && echo /var/lib/tpc-bench || echo "$HOME/.local/state/tpc-bench")}
DEMO_DIR=$TPCBENCH_HOME/demo
URL=http://127.0.0.1:$PORT
TPCBENCH=.venv/bin/tpcbench
PY=.venv/bin/python

# The webapp's environment: SQLite, the demo's zero-setup database, unless DATABASE_URL is set.
# shellcheck source=scripts/lib/webapp.sh
. scripts/lib/webapp.sh
webapp_env "$DEMO_DIR" "${DATABASE_URL:-}"

fail() { echo "demo: $*" >&2; exit 1; }

stop_dashboard() {
  if webapp_stop "$DEMO_DIR"; then echo "demo: dashboard stopped"; fi
}

if [ "${1:-}" = "down" ]; then
  stop_dashboard
  $TPCBENCH lab down  # a cluster lab too: the release goes with its cluster
  rm -f "$DEMO_DIR/dashboard-url" "$DEMO_DIR/release-args"
  exit 0
fi
if [ "${1:-}" = "figures" ]; then
  exec $PY scripts/wan_figures.py "$(cat "$DEMO_DIR/dashboard-url" 2>/dev/null || echo "$URL")"
fi

# DEMO_RUNTIME=kubernetes: the chart's pods on real kubelets in the lab's namespaces.
NAMESPACE=tpc-bench
RELEASE=tpc-bench
HELM=${TPCBENCH_HELM_CACHE:-/var/cache/tpc-bench/helm/bin}/helm
KUBECTL=${TPCBENCH_KUBENODE_CACHE:-/var/cache/tpc-bench/kubenode}/bin/kubectl
LAB_VALUES=charts/tpc-bench/ci/lab-values.yaml
INSTALL_TIMEOUT=${DEMO_INSTALL_TIMEOUT:-20m}
if [ "$RUNTIME" = kubernetes ] && [ "$(id -u)" -ne 0 ]; then
  fail "DEMO_RUNTIME=kubernetes needs root (kubelets run in the lab's network namespaces); run: sudo make demo-cluster"
fi

elapsed() { printf '%dm%02ds' $((($SECONDS - $1) / 60)) $((($SECONDS - $1) % 60)); }

# The release's pods as "total ready": ready when Running with every container ready.
pods_ready() {
  "$KUBECTL" -n "$NAMESPACE" get pods -l "app.kubernetes.io/instance=$RELEASE" --no-headers 2>/dev/null \
    | awk '{split($2, r, "/"); total++; if ($3 == "Running" && r[1] == r[2]) ready++} END {print total + 0, ready + 0}'
}

# The webapp's API through its NodePort, with the release's API token.
api() {  # METHOD PATH [BODY]
  curl -fsS --max-time 30 -X "$1" -H "Authorization: Token $TOKEN" -H 'Content-Type: application/json' \
    ${3:+-d "$3"} "$DASHBOARD$2"
}

json() {  # EXPRESSION...: evaluated on the JSON document on stdin (as `d`), space-separated
  $PY -c "import json, sys; d = json.load(sys.stdin); print(*[$1])"
}

cluster_demo() {
  local lab_args="--kubernetes --nodes $NODES ${WAN_ARGS[*]}" start=$SECONDS step
  [ -x "$HELM" ] || fail "helm is not built; run: make helm"
  [ -x "$KUBECTL" ] || fail "kubectl is not built; run: make kubenode"
  stop_dashboard  # a process demo's dashboard would show another lab's results

  echo "demo: [1/5] cluster lab of $NODES nodes: a control plane here, containerd + kubelet + kube-proxy in each node"
  [ "$WAN" = "off" ] || echo "demo:       emulated WAN: RTTs $WAN, links $LINK, TCP buffers $TCP_BUFFER (DEMO_WAN=off: none)"
  if $TPCBENCH lab status >/dev/null 2>&1 && [ "$(cat "$DEMO_DIR/lab-args" 2>/dev/null)" = "$lab_args" ]; then
    echo "demo: a cluster lab is already running; reusing it (make demo-down stops it)"
  else
    if [ -e "$TPCBENCH_HOME/lab/run.json" ]; then
      echo "demo: the running lab has other settings than these; restarting it"
      $TPCBENCH lab down >/dev/null || fail "the running lab did not stop; run: make demo-down"
    fi
    rm -f "$DEMO_DIR/lab-args"
    step=$SECONDS
    # shellcheck disable=SC2086  # lab_args is word lists on purpose
    $TPCBENCH lab up $lab_args \
      || fail "the cluster lab did not come up (the error is above); run: make demo-down, then make demo-cluster"
    echo "$lab_args" > "$DEMO_DIR/lab-args"
    echo "demo:       cluster lab up in $(elapsed "$step")"
  fi
  KUBECONFIG=$($TPCBENCH lab kubeconfig) || fail "no cluster lab is running; run: make demo-cluster"
  export KUBECONFIG
  # Serving the dashboard to this machine is all the demo adds to the lab values: a NodePort,
  # answered on every node's lab address.
  local addresses
  addresses=$($TPCBENCH lab status --json | json '",".join(n["address"] for n in d["nodes"])') \
    || fail "lab status failed; run: make demo-down, then make demo-cluster"
  echo "demo: [2/5] helm install $RELEASE charts/tpc-bench --values $LAB_VALUES (namespace $NAMESPACE; the webapp on a NodePort)"
  local helm_args=(upgrade --install "$RELEASE" charts/tpc-bench --namespace "$NAMESPACE" --create-namespace
    --values "$LAB_VALUES" --set webapp.service.type=NodePort --set "webapp.allowedHosts={$addresses}")
  local chart_hash release_args
  chart_hash=$(find charts/tpc-bench -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
  release_args="${helm_args[*]} chart=$chart_hash"
  step=$SECONDS
  # A release is reused only when the demo installed it with these values and this chart.
  if [ "$("$HELM" -n "$NAMESPACE" status "$RELEASE" -o json 2>/dev/null | json 'd["info"]["status"]' 2>/dev/null)" = deployed ] \
      && [ "$(cat "$DEMO_DIR/release-args" 2>/dev/null)" = "$release_args" ]; then
    echo "demo: the release is installed with these values; reusing it"
  else
    rm -f "$DEMO_DIR/release-args"
    "$HELM" "${helm_args[@]}" --wait --timeout "$INSTALL_TIMEOUT" >"$DEMO_DIR/helm.log" 2>&1 &
    local helm_pid=$! shown="" now
    while kill -0 "$helm_pid" 2>/dev/null; do
      read -r total ready < <(pods_ready)
      now="$ready/$total"
      if [ "$now" != "$shown" ]; then
        echo "demo:       pods Ready: $now ($(elapsed "$step"))"
        shown=$now
      fi
      sleep 5
    done
    wait "$helm_pid" || fail "helm install failed or timed out ($(tail -n 1 "$DEMO_DIR/helm.log")); look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE get pods"
    echo "$release_args" > "$DEMO_DIR/release-args"
  fi
  "$KUBECTL" -n "$NAMESPACE" wait --for=condition=Ready pod -l "app.kubernetes.io/instance=$RELEASE" --timeout=120s >/dev/null \
    || fail "not every pod is Ready; look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE get pods"
  read -r total ready < <(pods_ready)
  echo "demo:       every pod Ready: $ready/$total ($(elapsed "$step"))"

  local host port
  host=$("$KUBECTL" -n "$NAMESPACE" get pod -l app.kubernetes.io/component=webapp,app.kubernetes.io/instance=$RELEASE \
    -o jsonpath='{.items[0].status.hostIP}')
  port=$("$KUBECTL" -n "$NAMESPACE" get service "$RELEASE-webapp" -o jsonpath='{.spec.ports[0].nodePort}')
  [ -n "$host" ] && [ -n "$port" ] || fail "the webapp's node or NodePort is unknown; look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE get pods,services"
  DASHBOARD=http://$host:$port
  TOKEN=$("$KUBECTL" -n "$NAMESPACE" get secret "$RELEASE-webapp" -o jsonpath='{.data.api-token}' | base64 -d)
  [ -n "$TOKEN" ] || fail "no API token in the Secret $RELEASE-webapp; look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE get secrets"
  echo "demo: [3/5] the dashboard, served by the webapp pod on ${host}'s NodePort: $DASHBOARD/"
  api GET /api/v1/nodes/ >/dev/null || fail "the webapp does not answer at $DASHBOARD; look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE logs deploy/$RELEASE-webapp"
  echo "$DASHBOARD" > "$DEMO_DIR/dashboard-url"

  # What the orchestrator pod would measure, in its own words (its discovery, its settings).
  local planned uuid campaign state done_ shown=""
  planned=$("$KUBECTL" -n "$NAMESPACE" exec "deploy/$RELEASE-orchestrator" -c orchestrator -- tpcbench campaign plan --json 2>/dev/null \
    | json 'len(d["measurements"])') \
    || fail "the orchestrator pod cannot plan a campaign; run: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE exec deploy/$RELEASE-orchestrator -c orchestrator -- tpcbench campaign plan"
  echo "demo: [4/5] campaign (run now, through the webapp): $planned measurements, run by the orchestrator pod"
  step=$SECONDS
  uuid=$(api POST /api/v1/campaigns/ '{}' | json 'd["uuid"]') \
    || fail "the webapp refused the campaign; look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE logs deploy/$RELEASE-webapp"
  while :; do
    campaign=$(api GET "/api/v1/campaigns/$uuid/") \
      || fail "the webapp stopped answering at $DASHBOARD; look: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE get pods"
    read -r state done_ < <(json 'd["state"], d["measurements"]' <<<"$campaign") \
      || fail "the webapp's answer about campaign $uuid is not what the API says; look: $DASHBOARD/api/v1/campaigns/$uuid/"
    if [ "$state $done_" != "$shown" ]; then
      echo "demo:       $state: $done_/$planned measurements ($(elapsed "$step"))"
      shown="$state $done_"
    fi
    case "$state" in finished | failed | interrupted) break ;; esac
    [ $((SECONDS - step)) -lt 3600 ] \
      || fail "campaign $uuid still $state after an hour; follow it at $DASHBOARD/ or: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE logs deploy/$RELEASE-orchestrator -c orchestrator"
    sleep 5
  done
  local failed
  failed=$(api GET "/api/v1/measurements/?campaign=$uuid&limit=1000" | json 'sum(1 for r in d["results"] if r["failed"])') \
    || failed="?"
  [ "$state" = finished ] || echo "demo: the campaign ended $state; the orchestrator's log says why: KUBECONFIG=$KUBECONFIG $KUBECTL -n $NAMESPACE logs deploy/$RELEASE-orchestrator -c orchestrator"
  [ "$failed" = 0 ] || echo "demo: $failed measurements failed; the grid shows them with their reasons"

  echo "demo: [5/5] done in $(elapsed "$start")"
  echo
  echo "  Dashboard:  $DASHBOARD/   (the webapp pod, through its NodePort on every node)"
  echo "  REST API:   $DASHBOARD/api/docs/"
  echo "  Figure 7:   $DASHBOARD/plots/latency/   (throughput versus RTT)"
  echo "  Figure 8:   $DASHBOARD/plots/streams/   (single versus multi stream)"
  echo
  echo "  kubectl:    export KUBECONFIG=\$(TPCBENCH_HOME=$TPCBENCH_HOME $PWD/$TPCBENCH lab kubeconfig)"
  echo "              $KUBECTL -n $NAMESPACE get pods -o wide"
  echo "  helm:       $HELM -n $NAMESPACE test $RELEASE"
  echo "  Another campaign: the grid's button, or"
  echo "              TOKEN=\$($KUBECTL -n $NAMESPACE get secret $RELEASE-webapp -o jsonpath='{.data.api-token}' | base64 -d)"
  echo "              curl -X POST -H \"Authorization: Token \$TOKEN\" -H 'Content-Type: application/json' -d '{}' $DASHBOARD/api/v1/campaigns/"
  echo "  Stop it all:      make demo-down"
}

# The WAN and the link caps need network namespaces (root); the nodes share loopback otherwise.
WAN_ARGS=()
if [ "$(id -u)" -ne 0 ]; then
  [ "$WAN" = "off" ] || echo "demo: not root, so no emulated WAN (the nodes share loopback); DEMO_WAN=off to silence"
  WAN=off
  LINK=off
fi
if [ "$WAN" != "off" ]; then
  WAN_ARGS+=(--rtt "$WAN" --tcp-buffer "$TCP_BUFFER")
fi
if [ "$LINK" != "off" ]; then
  WAN_ARGS+=(--link-capacity "$LINK")
fi
case "$RUNTIME" in
  process) ;;
  podman) WAN_ARGS+=(--runtime podman) ;;
  kubernetes) cluster_demo; exit 0 ;;
  *) echo "demo: DEMO_RUNTIME must be process, podman or kubernetes, not '$RUNTIME'" >&2; exit 2 ;;
esac
LAB_ARGS="--nodes $NODES --file-size $FILE_SIZE ${WAN_ARGS[*]}"

echo "demo: [1/5] certificate authority"
$TPCBENCH ca init

echo "demo: [2/5] lab of $NODES nodes (real xrootd + globus-gridftp-server, ${FILE_SIZE} source files)"
if [ "$WAN" != "off" ]; then
  echo "demo:       emulated WAN: RTTs $WAN, links $LINK, TCP buffers $TCP_BUFFER (DEMO_WAN=off: none)"
elif [ "$LINK" != "off" ]; then
  echo "demo:       no emulated WAN (DEMO_WAN=off); links capped at $LINK"
fi
if [ "$RUNTIME" = podman ]; then
  echo "demo:       servers from our container images (images/build.sh; cached after the first build)"
  images/build.sh xrootd gridftp >/dev/null
fi
# A running lab is reused only when the demo started it with these very settings.
if $TPCBENCH lab status >/dev/null 2>&1 && [ "$(cat "$DEMO_DIR/lab-args" 2>/dev/null)" = "$LAB_ARGS" ]; then
  echo "demo: a lab is already running; reusing it (scripts/demo.sh down stops it)"
else
  if [ -e "$TPCBENCH_HOME/lab/run.json" ]; then
    echo "demo: the running lab has other settings than these; restarting it"
    $TPCBENCH lab down >/dev/null
  fi
  rm -f "$DEMO_DIR/lab-args"
  $TPCBENCH lab up --nodes "$NODES" --file-size "$FILE_SIZE" "${WAN_ARGS[@]}"
  echo "$LAB_ARGS" > "$DEMO_DIR/lab-args"
fi

echo "demo: [3/5] webapp at $URL (database: $DATABASE_URL)"
echo "$URL" > "$DEMO_DIR/dashboard-url"
webapp_prepare "$DEMO_DIR" demo-orchestrator
if ! curl -fsS -o /dev/null "$URL/api/v1/nodes/" 2>/dev/null; then
  stop_dashboard
  webapp_serve "$DEMO_DIR" "$PORT" || { echo "demo: the webapp did not start; see $DEMO_DIR/webapp.log" >&2; exit 1; }
fi

# No --file-size: the campaign uses the lab's own source file, also when a lab is reused.
CAMPAIGN_ARGS=()
if [ "$BASELINE" != "off" ] && [ "$(id -u)" -eq 0 ]; then
  CAMPAIGN_ARGS+=(--baseline --baseline-seconds "$BASELINE")
fi
echo "demo: [4/5] campaign: every ordered pair x ($PROTOCOLS) x streams ($STREAMS) x auth ($AUTH) x client ($CLIENT), $TRANSFERS transfers each"
[ ${#CAMPAIGN_ARGS[@]} -eq 0 ] || echo "demo:       and each pair's link first (iperf3, as many streams as the transfers, ${BASELINE} s after 2 s of slow start; DEMO_BASELINE=off: none)"
$TPCBENCH campaign run --protocols "$PROTOCOLS" --streams "$STREAMS" --transfers "$TRANSFERS" \
  --auth "$AUTH" --client "$CLIENT" --report-to "$URL" --token-file "$DEMO_DIR/api-token" "${CAMPAIGN_ARGS[@]}" \
  || echo "demo: some measurements failed; the grid shows them with their reasons"

echo "demo: [5/5] done"
echo
echo "  Dashboard:  $URL/"
echo "  REST API:   $URL/api/docs/"
echo "  MaDDash:    $URL/maddash/grids/"
echo "  Figure 7:   $URL/plots/latency/   (throughput versus RTT)"
echo "  Figure 8:   $URL/plots/streams/   (single versus multi stream)"
echo "  Figure 5:   $URL/pairs/lab-1/lab-2/   (a pair over time, its link baseline, where the time goes)"
echo "  Tokens:     $URL/?auth=token   (the grid of token-authorized transfers)"
echo
echo "  Another campaign: TPCBENCH_HOME=$TPCBENCH_HOME $TPCBENCH campaign run --report-to $URL --token-file $DEMO_DIR/api-token"
echo "  Stop it all:      make demo-down"
