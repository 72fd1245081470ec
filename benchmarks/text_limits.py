"""Worst-case time and memory of each text extractor on generated hostile pages.

    python benchmarks/text_limits.py [--mb 2] [--extractors auto,trafilatura,justext,article,fulltext]
        [--time-limit 30]

Pages of ``--mb`` MB (the size cap, FOCUSCRAWL_TEXT_MAX_BYTES): 20k+ linked images, long
paragraphs, tiny ``<div>`` blocks (the slowest for trafilatura and jusText), a table of
links, and a 100,000-deep ``<div>`` nest. Each extractor runs through
``page_text_from_bytes`` with the per-page time limit, in a fresh process per page so
that the peak RSS printed is that page's. A line per (page, extractor): seconds, result
(characters, or the skip reason), peak RSS.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

PAGES = ("img_links", "paragraphs", "tiny_divs", "table", "deep_nest")

_CHILD = r"""
import json, resource, sys, time, logging
from focuscrawl.text.extractors import ExtractionError, page_text_from_bytes
for n in ("trafilatura", "justext", "boilerpy3"):
    logging.getLogger(n).setLevel(logging.CRITICAL)
kind, size, name, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
if kind == "img_links":
    html = "".join(f'<a href="/p{i}"><img src="/i{i}.jpg" alt="cat {i}"></a>\n' for i in range(size // 50))
elif kind == "paragraphs":
    para = "<p>" + "The cat sat on the mat and looked at the dog. " * 20 + "</p>\n"
    html = para * (size // len(para))
elif kind == "tiny_divs":
    html = "<div>a</div>" * (size // 12)
elif kind == "table":
    html = "<table>" + "<tr><td>x</td><td><a href=/>y</a></td></tr>" * (size // 42) + "</table>"
else:
    html = "<div>" * 100_000 + "deep text" + "</div>" * 100_000
body = ("<html><body>" + html + "</body></html>").encode()
start = time.perf_counter()
try:
    result = f"{len(page_text_from_bytes(body, name, max_bytes=size, seconds=limit).text)} chars"
except ExtractionError as exc:
    result = f"skipped: {exc}"
print(json.dumps([len(body), time.perf_counter() - start, result,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=2.0, help="page size in MB (default: the 2 MiB cap)")
    ap.add_argument("--extractors", default="auto,trafilatura,justext,article,fulltext")
    ap.add_argument("--time-limit", type=float, default=30.0, help="per-page limit in seconds")
    args = ap.parse_args(argv)
    size = int(args.mb * 1024 * 1024)
    print(f"{'page':10s} {'MB':>5s} {'extractor':12s} {'seconds':>8s} {'RSS MB':>7s}  result")
    for kind in PAGES:
        for name in args.extractors.split(","):
            out = subprocess.run([sys.executable, "-c", _CHILD, kind, str(size), name, str(args.time_limit)],
                                 capture_output=True, text=True, check=True)
            n, seconds, result, rss = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{kind:10s} {n / 1e6:5.1f} {name:12s} {seconds:8.1f} {rss:7.0f}  {result[:90]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
