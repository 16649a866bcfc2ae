#!/usr/bin/env python3
"""Checks rigaudit's HTML reports in a real browser: runs axe-core (WCAG 2.x A and AA rules and
axe's best practices) in headless Chromium on each page, and measures the page's width at a
1280 px wide viewport.

    a11y.py --axe AXE.MIN.JS [--width 1280] [--json] PAGE.html...

Each page is checked as a copy beside it (PAGE.a11y.html and axe beside it, removed after) with axe and a runner
added: the report's own Content-Security-Policy runs no script, so the copy drops it (it changes
nothing else of how the page draws). The runner writes its result into the DOM, which Chromium
prints with --dump-dom once the page's scripts are done (--virtual-time-budget).

Prints a line per page (violations by impact, each violation's rule and first places; the page's
scrollWidth) or, with --json, one JSON object of every page's results. Exits 1 when a page has a
serious or critical violation or is wider than the viewport, 2 when a page could not be checked.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

RUNNER = """<script>
(function () {
  const el = document.documentElement;
  // What sticks out past the viewport's right edge (none when the page fits).
  const wide = [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > innerWidth + 0.5)
    .filter(e => !e.closest('svg') || e.tagName.toLowerCase() === 'svg')
    .slice(0, 10)
    .map(e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className : '')
      + ' right=' + Math.round(e.getBoundingClientRect().right));
  const size = { scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, innerWidth: innerWidth, wide: wide };
  const done = (result) => {
    const out = document.createElement('script');
    out.type = 'application/json';
    out.id = 'rigaudit-a11y';
    out.textContent = JSON.stringify(result).replace(/</g, '\\\\u003c');
    document.body.appendChild(out);
  };
  axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
    resultTypes: ['violations', 'incomplete'],
  }).then(r => done(Object.assign(size, {
    axe: r.testEngine.version,
    violations: r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map(n => ({ target: n.target.join(' '), summary: n.failureSummary })) })),
    incomplete: r.incomplete.map(v => ({ id: v.id, nodes: v.nodes.length })),
  })), e => done(Object.assign(size, { error: String(e) })));
})();
</script>"""

CSP = re.compile(r'<meta http-equiv="Content-Security-Policy"[^>]*/?>')


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("a11y.py: no Chromium (apt-get install chromium)")


def check(page, axe, width):
    """The runner's result on `page` (a dict), or raises RuntimeError with what went wrong."""
    text = open(page, encoding="utf-8").read()
    text, n = CSP.subn("", text, count=1)
    folder = os.path.dirname(os.path.abspath(page))
    copy = os.path.join(folder, os.path.basename(page) + ".a11y.html")
    script = copy + ".axe.js"
    shutil.copyfile(axe, script)
    addition = f'<script src="{os.path.basename(script)}"></script>' + RUNNER
    with open(copy, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", addition + "</body>", 1))
    try:
        with tempfile.TemporaryDirectory() as profile:
            out = subprocess.run(
                [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--hide-scrollbars", "--force-device-scale-factor=1",
                 f"--window-size={width},900", f"--user-data-dir={profile}",
                 "--virtual-time-budget=60000", "--dump-dom", "file://" + copy],
                capture_output=True, text=True, timeout=300)
    finally:
        os.remove(copy)
        os.remove(script)
    m = re.search(r'<script type="application/json" id="rigaudit-a11y">(.*?)</script>', out.stdout, re.S)
    if not m:
        raise RuntimeError(f"no result from the page (Chromium exit {out.returncode}): {out.stderr[-2000:]}")
    result = json.loads(m.group(1))
    if "error" in result:
        raise RuntimeError("axe: " + result["error"])
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--axe", required=True, help="axe.min.js (scripts/fetch-axe.sh prints it)")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("pages", nargs="+")
    a = ap.parse_args()
    results, worst = {}, 0
    for page in a.pages:
        try:
            r = check(page, a.axe, a.width)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            print(f"{page}: could not be checked: {e}", file=sys.stderr)
            worst = 2
            continue
        results[page] = r
        impacts = [v["impact"] for v in r["violations"]]
        count = {i: impacts.count(i) for i in ("critical", "serious", "moderate", "minor")}
        bad = count["critical"] + count["serious"] > 0 or r["scrollWidth"] > a.width
        if bad and worst == 0:
            worst = 1
        if not a.json:
            print(f"{page}: axe {r['axe']}: {len(impacts)} violations "
                  f"({', '.join(f'{n} {i}' for i, n in count.items())}); "
                  f"scrollWidth {r['scrollWidth']} at a {a.width} px viewport"
                  + ("" if r["scrollWidth"] <= a.width else ": wider than the viewport"))
            for v in r["violations"]:
                places = "; ".join(n["target"] for n in v["nodes"][:3])
                print(f"  {v['impact']}: {v['id']} ({v['help']}) x{len(v['nodes'])}: {places}")
            for w in r["wide"]:
                print(f"  past the right edge: {w}")
    if a.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    sys.exit(worst)


if __name__ == "__main__":
    main()
