#!/usr/bin/env bash
# make bench: every benchmark, each printing its ratios against its target.
# BENCH_ONLY=planner|fidelity|webapp|wan|clients|authentication|cluster|sites|site_scaling|
# duplex_lab runs one. A benchmark that misses its target (clients, authentication, duplex_lab:
# have none; a failed copy)
# exits 1; the others still run, and the script's exit status says whether all met their
# targets. cluster also needs what a cluster lab needs (make simcluster images kubenode helm).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
status=0
for name in planner fidelity webapp wan clients authentication cluster sites site_scaling duplex_lab; do
  [ -n "${BENCH_ONLY:-}" ] && [ "$BENCH_ONLY" != "$name" ] && continue
  echo "=== bench/$name.py"
  $PY "bench/$name.py" || { echo "bench/$name.py: target missed or failed (exit $?)"; status=1; }
  echo
done
exit $status
