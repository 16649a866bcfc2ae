#!/usr/bin/env python3
"""Lists #[test] functions longer than N lines (default 60) in every .rs file of the tree
(target/ and fuzz/ left out): `python3 tests/tools/long_test_fns.py . 60`."""
import re, sys, pathlib
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 60
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
count = 0
for p in sorted(q for q in root.glob("**/*.rs") if "target" not in q.parts and "fuzz" not in q.parts):
    lines = p.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("#[test]"):
            j = i + 1
            while j < len(lines) and not re.match(r"\s*(pub )?(async )?fn ", lines[j]):
                j += 1
            indent = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
            k = j
            while k < len(lines) and lines[k].rstrip() != indent + "}":
                k += 1
            n = k - j + 1
            if n > limit:
                count += 1
                name = re.search(r"fn (\w+)", lines[j]).group(1)
                print(f"{p}:{j+1} {name} {n}")
            i = k
        i += 1
print(f"{count} test functions over {limit} lines")
