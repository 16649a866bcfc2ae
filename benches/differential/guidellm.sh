#!/usr/bin/env bash
# The wider GuideLLM matrix: every case of scripts/differential/guidellm.sh at more versions than
# the pinned ones (by default one of each minor release people published: 0.3.1, 0.5.4, 0.6.1,
# 0.7.3, 0.7.4, 0.8.0), written under a scratch folder (never committed), then each file verified
# by rigaudit: every per-request figure must be recomputed as that version did, with no error.
#
#   bash benches/differential/guidellm.sh [VERSION...] [-- CASE...]
#
# Prints one line per file (errors, warnings, figures recomputed, figures that disagree) and exits
# 1 when any file raised an error.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${GUIDELLM_DIFFERENTIAL_OUT:-${TMPDIR:-/tmp}/guidellm-differential}
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(0.3.1 0.5.4 0.6.1 0.7.3 0.7.4 0.8.0)
GUIDELLM_DIFFERENTIAL_OUT=$OUT bash scripts/differential/guidellm.sh "${ARGS[@]}"
nice -n 10 cargo build --quiet --bin rigaudit
bad=0
for f in "$OUT"/*/*/benchmarks.json; do
    "$ROOT/target/debug/rigaudit" verify --from guidellm "$f" --format json >"$OUT/verdict.json" || true
    line=$(python3 - "$OUT/verdict.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = d["findings"]
errors = sum(x["severity"] == "error" for x in f)
warnings = sum(x["severity"] == "warning" for x in f)
rec = d["recomputed"]
off = sum(not r["matches"] for r in rec)
print(f"{errors} {warnings} {len(rec)} {off}")
PY
)
    read -r errors warnings recomputed off <<<"$line"
    echo "${f#"$OUT"/}: $errors errors, $warnings warnings, $recomputed figures recomputed, $off disagree"
    [ "$errors" = 0 ] || bad=1
done
exit $bad
