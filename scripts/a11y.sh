#!/usr/bin/env bash
# The HTML reports' accessibility check by hand (tests/it/reports.rs runs the same): writes the HTML
# report of `verify` on each seed page and on the recorded run, and of `diff` on the two seed
# pages and on two vLLM runs (fixtures/imports/vllm/clean vs failures), then runs axe-core in
# headless Chromium on each and measures its width at a 1280 px viewport (scripts/a11y.py).
# Exits 1 when a page has a serious or critical violation or is wider than 1280 px.
#
#   bash scripts/a11y.sh [PAGE.html...]    # the given pages instead of the fixtures' reports
#
# RIGAUDIT names the binary (default: the debug build, built when missing). Needs Chromium
# (apt-get install chromium) and axe-core (scripts/fetch-axe.sh, with npm or from the registry).
set -euo pipefail
cd "$(dirname "$0")/.."
axe="$(bash scripts/fetch-axe.sh)"
if (($# > 0)); then
    exec python3 scripts/a11y.py --axe "$axe" "$@"
fi
rigaudit="${RIGAUDIT:-${CARGO_TARGET_DIR:-target}/debug/rigaudit}"
[[ -x "$rigaudit" && -n "${RIGAUDIT:-}" ]] || cargo build --quiet --bin rigaudit
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
report() {
    local name="$1"
    shift
    # verify and diff exit 1 on these fixtures (they fail); the page is written all the same.
    "$rigaudit" "$@" --output "$out/$name.html" >/dev/null 2>&1 || true
    [[ -f "$out/$name.html" ]] || { echo "a11y.sh: rigaudit $* wrote no report" >&2; exit 2; }
}
for page in fixtures/pages/*/; do
    report "verify-$(basename "$page")" verify "$page"
done
report verify-smollm2-cpu verify fixtures/runs/smollm2-cpu
report diff-pages diff fixtures/pages/tensorfold-127-stock-2x fixtures/pages/mia-recipe-1104-2x
report diff-vllm diff fixtures/imports/vllm/clean fixtures/imports/vllm/failures
python3 scripts/a11y.py --axe "$axe" "$out"/*.html
