#!/usr/bin/env bash
# Writes the chart's values.schema.json from its commented values.yaml: the `# --` comments
# are the descriptions, the `# @schema` ones the rules, and every object refuses keys it
# does not name. tests/chart/test_chart_values_schema.py fails when the committed file is not
# what this writes.
# Usage: scripts/helm-values-schema/generate.sh [OUTPUT]
#        (default charts/tpc-bench/values.schema.json; builds the generator once, cached)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chart="$(cd "$here/../../charts/tpc-bench" && pwd)"
output="$(realpath -m "${1:-$chart/values.schema.json}")"
program="$("$here/build.sh")"

# Draft 7: the JSON Schema draft helm's validator reads. No `global`: this chart has no
# subcharts, so its values have none.
cd "$chart"
# It says "JSON schema successfully generated" on stderr: shown only when it fails.
if ! said="$("$program" --values values.yaml --output "$output" --draft 7 --indent 2 \
  --no-additional-properties --no-default-global --use-helm-docs \
  --schema-root.title "tpc-bench chart values" 2>&1)"; then
  echo "$said" >&2
  exit 1
fi
