#!/usr/bin/env bash
# make reproduce: the paper's measurements on the paper-profile lab, its three findings beside
# ours with bootstrap confidence intervals, and Figures 3, 4, 5, 7 and 8 as PNG and SVG
# (docs/reproduce.md).
#   1. the CA; 2. `tpcbench lab up --profile paper` (a lab with other settings is restarted);
#   3. a webapp (gunicorn) with a fresh SQLite database in $TPCBENCH_HOME/reproduce/;
#   4. `tpcbench reproduce` (prelim concurrency and filesize, then the campaigns);
#   5. `manage.py paper_report` into $REPRODUCE_OUT; 6. the webapp and the lab stop.
# Knobs (environment): REPRODUCE_SCALE (paper; tiny: the test suite's, a 3-node lab of 1 MiB
#   files, K = 2, one campaign), REPRODUCE_OUT (build/reproduce: the figures, findings.json,
#   report.txt), REPRODUCE_PORT (8010: the webapp's), REPRODUCE_REPETITIONS (campaigns; the
#   scale's by default), REPRODUCE_KEEP (1: leave the webapp and the lab running and print the
#   dashboard's URL; scripts/reproduce.sh down stops them), TPCBENCH_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."

SCALE=${REPRODUCE_SCALE:-paper}
OUT=$(realpath -m "${REPRODUCE_OUT:-build/reproduce}")
PORT=${REPRODUCE_PORT:-8010}
REPETITIONS=${REPRODUCE_REPETITIONS:-}
KEEP=${REPRODUCE_KEEP:-0}
export TPCBENCH_HOME=${TPCBENCH_HOME:-$([ "$(id -u)" -eq 0 ] && echo /var/lib/tpc-bench || echo "$HOME/.local/state/tpc-bench")}
RUN_DIR=$TPCBENCH_HOME/reproduce
URL=http://127.0.0.1:$PORT
TPCBENCH=.venv/bin/tpcbench
PY=.venv/bin/python
export COLUMNS=${COLUMNS:-120}  # the tables' width when the output is a file, not a terminal

say() { echo "reproduce: $*"; }
fail() { echo "reproduce: $*" >&2; exit 1; }
elapsed() { printf '%dm%02ds' $(((SECONDS - $1) / 60)) $(((SECONDS - $1) % 60)); }

# shellcheck source=scripts/lib/webapp.sh
. scripts/lib/webapp.sh

stop_webapp() {
  if webapp_stop "$RUN_DIR"; then say "webapp stopped"; fi
}

stop_lab() {
  $TPCBENCH lab down >/dev/null && say "lab stopped" || say "lab down failed; run: TPCBENCH_HOME=$TPCBENCH_HOME $TPCBENCH lab down"
}

if [ "${1:-}" = "down" ]; then
  stop_webapp
  stop_lab
  exit 0
fi

case "$SCALE" in
  paper) LAB_ARGS=(--profile paper) ;;
  tiny) LAB_ARGS=(--profile paper --nodes 3 --file-size 1MiB) ;;
  *) echo "reproduce: REPRODUCE_SCALE must be paper or tiny, not '$SCALE'" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || fail "needs root: the paper profile's lab emulates a WAN in network namespaces; run: sudo make reproduce"
[ -z "$REPETITIONS" ] || [[ "$REPETITIONS" =~ ^[1-9][0-9]*$ ]] || fail "REPRODUCE_REPETITIONS must be a positive number, not '$REPETITIONS'"

START=$SECONDS
mkdir -p "$RUN_DIR" "$OUT"
# Unless kept, nothing this run started outlives it, also when a step fails.
finish() {
  local status=$?
  if [ "$KEEP" != 1 ]; then
    stop_webapp
    [ ! -e "$TPCBENCH_HOME/lab/run.json" ] || stop_lab
  fi
  if [ "$status" -ne 0 ]; then
    say "failed after $(elapsed "$START") (the error is above)"
  elif [ "$KEEP" = 1 ]; then
    say "done in $(elapsed "$START"); kept running: the dashboard at $URL/ (Figure 7: $URL/plots/latency/, Figure 8: $URL/plots/streams/)"
    say "stop it all: TPCBENCH_HOME=$TPCBENCH_HOME scripts/reproduce.sh down"
  else
    say "done in $(elapsed "$START"): $OUT holds report.txt, findings.json and the figures"
  fi
}
trap finish EXIT

step=$SECONDS
say "[1/5] certificate authority"
$TPCBENCH ca init >/dev/null
say "      took $(elapsed "$step")"

step=$SECONDS
say "[2/5] lab: tpcbench lab up ${LAB_ARGS[*]}"
if [ -e "$TPCBENCH_HOME/lab/run.json" ]; then
  say "      a lab is running from $TPCBENCH_HOME; restarting it with the paper profile"
  $TPCBENCH lab down >/dev/null || fail "the running lab did not stop; run: TPCBENCH_HOME=$TPCBENCH_HOME $TPCBENCH lab down"
fi
$TPCBENCH lab up "${LAB_ARGS[@]}" || fail "the lab did not come up healthy (see above)"
say "      took $(elapsed "$step")"

step=$SECONDS
say "[3/5] webapp at $URL, a fresh database in $RUN_DIR"
stop_webapp
if curl -fsS -o /dev/null --max-time 2 "$URL/" 2>/dev/null; then
  fail "something else answers at $URL; pick another port: REPRODUCE_PORT=8011"
fi
rm -rf "$RUN_DIR/db.sqlite3" "$RUN_DIR/spool" "$RUN_DIR/api-token"
webapp_env "$RUN_DIR"  # always this run's own SQLite database, never another one
webapp_prepare "$RUN_DIR" reproduce
webapp_serve "$RUN_DIR" "$PORT" || fail "the webapp did not start; see $RUN_DIR/webapp.log"
say "      took $(elapsed "$step")"

step=$SECONDS
say "[4/5] the measurements: tpcbench reproduce --scale $SCALE${REPETITIONS:+ --repetitions $REPETITIONS}"
status=0
$TPCBENCH reproduce --scale "$SCALE" ${REPETITIONS:+--repetitions "$REPETITIONS"} \
  --report-to "$URL" --token-file "$RUN_DIR/api-token" --spool-dir "$RUN_DIR/spool" || status=$?
case "$status" in
  0) ;;
  1) say "      some points or measurements failed (stored with their reasons) or were not sent; reporting on what there is" ;;
  *) fail "tpcbench reproduce stopped (exit $status)" ;;
esac
say "      took $(elapsed "$step")"

step=$SECONDS
say "[5/5] the paper's findings and figures: manage.py paper_report --out $OUT"
rm -f "$OUT"/fig*.png "$OUT"/fig*.svg "$OUT/findings.json"
$PY webapp/manage.py paper_report --out "$OUT" --json "$OUT/findings.json" | tee "$OUT/report.txt"
say "      took $(elapsed "$step")"
