#!/usr/bin/env bash
# make demo: a lab of real XRootD-HTTPS and GridFTP servers, the webapp, one campaign, the dashboard.
#   scripts/demo.sh         start (or reuse) everything and run a campaign
#   scripts/demo.sh figures print the shape of the paper's Figures 7 and 8 from the API
#   scripts/demo.sh down    stop the dashboard and the lab
# Knobs (environment): DEMO_NODES (4), DEMO_FILE_SIZE (32MiB), DEMO_TRANSFERS (11),
#   DEMO_STREAMS (8,1), DEMO_PROTOCOLS (https,gridftp), DEMO_PORT (8000), TPCBENCH_HOME,
#   DEMO_WAN (prp: RTTs between real research sites; uniform:30ms; a matrix file; off),
#   DEMO_LINK (2gbit: each node's link capacity, also without a WAN; off for none; the grid's
#   thresholds follow it), DEMO_TCP_BUFFER (512KiB: the nodes' TCP buffer maximum with a WAN,
#   small enough that one stream is window-limited at WAN RTTs), DEMO_RUNTIME (process; podman:
#   the nodes' servers run from our container images, built first if need be), DEMO_BASELINE
#   (3: seconds of iperf3 per ordered pair before its transfers, the pair pages' link line;
#   off for none), DEMO_AUTH (x509,token: how transfers are authorized; token is https's),
#   DEMO_CLIENT (native; native,gfal2 adds gfal-copy as a second client).
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
TCP_BUFFER=${DEMO_TCP_BUFFER:-512KiB}
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
mkdir -p "$DEMO_DIR"
[ -s "$DEMO_DIR/secret-key" ] || (umask 077; $PY -c 'import secrets; print(secrets.token_urlsafe(50))' > "$DEMO_DIR/secret-key")
export DATABASE_URL=${DATABASE_URL:-sqlite:///$DEMO_DIR/db.sqlite3}
export DJANGO_SECRET_KEY=$(cat "$DEMO_DIR/secret-key")
export DJANGO_STATIC_ROOT=$DEMO_DIR/static

stop_dashboard() {
  if [ -s "$DEMO_DIR/webapp.pid" ] && kill -0 "$(cat "$DEMO_DIR/webapp.pid")" 2>/dev/null; then
    kill "$(cat "$DEMO_DIR/webapp.pid")" && echo "demo: dashboard stopped"
  fi
  rm -f "$DEMO_DIR/webapp.pid"
}

if [ "${1:-}" = "down" ]; then
  stop_dashboard
  $TPCBENCH lab down
  exit 0
fi
if [ "${1:-}" = "figures" ]; then
  exec $PY scripts/wan_figures.py "$URL"
fi

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
  *) echo "demo: DEMO_RUNTIME must be process or podman, not '$RUNTIME'" >&2; exit 2 ;;
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
$PY webapp/manage.py migrate --noinput -v 0
$PY webapp/manage.py collectstatic --noinput -v 0
if [ ! -s "$DEMO_DIR/api-token" ]; then
  (umask 077; $PY webapp/manage.py create_api_token demo-orchestrator | tail -n 1 | awk '{print $NF}' > "$DEMO_DIR/api-token")
fi
if ! curl -fsS -o /dev/null "$URL/api/v1/nodes/" 2>/dev/null; then
  stop_dashboard
  setsid .venv/bin/gunicorn --chdir webapp --bind "127.0.0.1:$PORT" --workers 2 \
    --access-logfile "$DEMO_DIR/access.log" --error-logfile "$DEMO_DIR/webapp.log" \
    --pid "$DEMO_DIR/webapp.pid" --daemon webapp.tpcbench_web.wsgi:application
  for _ in $(seq 1 60); do curl -fsS -o /dev/null "$URL/api/v1/nodes/" 2>/dev/null && break; sleep 0.5; done
  curl -fsS -o /dev/null "$URL/api/v1/nodes/" || { echo "demo: the webapp did not start; see $DEMO_DIR/webapp.log" >&2; exit 1; }
fi

# No --file-size: the campaign uses the lab's own source file, also when a lab is reused.
CAMPAIGN_ARGS=()
if [ "$BASELINE" != "off" ] && [ "$(id -u)" -eq 0 ]; then
  CAMPAIGN_ARGS+=(--baseline --baseline-seconds "$BASELINE")
fi
echo "demo: [4/5] campaign: every ordered pair x ($PROTOCOLS) x streams ($STREAMS) x auth ($AUTH) x client ($CLIENT), $TRANSFERS transfers each"
[ ${#CAMPAIGN_ARGS[@]} -eq 0 ] || echo "demo:       and each pair's link first (iperf3, ${BASELINE} s; DEMO_BASELINE=off: none)"
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
