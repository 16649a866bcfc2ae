"""Downloads a package's source release (sdist) from PyPI, as pip finds it, its sha256 checked.

    python3 pypi_sdist.py NAME VERSION OUT.tar.gz

The file is found on the project's simple index page (PEP 503, what pip reads) and fetched from
PyPI's file host; the sha256 the index gives is checked. (`pip download --no-binary` would build the
package's metadata, which vllm's setup cannot do without its GPU toolchain.)
"""

import hashlib
import re
import sys
import urllib.request


def main() -> None:
    name, version, out = sys.argv[1:4]
    page = urllib.request.urlopen(f"https://pypi.org/simple/{name}/").read().decode()
    want = f"{name}-{version}.tar.gz"
    for href in re.findall(r'href="([^"]+)"', page):
        url, _, frag = href.partition("#")
        if url.rsplit("/", 1)[-1] != want:
            continue
        data = urllib.request.urlopen(url).read()
        algo, _, digest = frag.partition("=")
        if algo != "sha256" or hashlib.sha256(data).hexdigest() != digest:
            sys.exit(f"{want}: sha256 does not match the index")
        with open(out, "wb") as f:
            f.write(data)
        return
    sys.exit(f"{want}: not on PyPI's index")


if __name__ == "__main__":
    main()
