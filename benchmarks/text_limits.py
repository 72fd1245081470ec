"""Worst-case time and memory of each text extractor on generated hostile pages.

    python benchmarks/text_limits.py [--mb 2] [--extractors trafilatura,trafilatura-recall,auto,justext,article,fulltext]
        [--time-limit 30] [--pages img_links,paragraphs,tiny_divs,table,deep_nest] [--analysis]

Pages of ``--mb`` MB (the size cap, FOCUSCRAWL_TEXT_MAX_BYTES): 20k+ linked images, long
paragraphs, tiny ``<div>`` blocks (the slowest for trafilatura and jusText), a table of
links, and a 100,000-deep ``<div>`` nest. Each page is written to a file here; each
extractor reads it as ``focuscrawl extract`` does (``page_text_from_file``: up to the cap,
with the per-page time limit) in a fresh process, so the peak RSS
is that page's. The same run on a one-paragraph page gives each extractor's baseline (the
interpreter and its libraries); the page's cost is the peak above it, printed in MB and as
a multiple of the cap. One-time caches are loaded before both runs (trafilatura's jusText
stoplist of all languages and jusText's lower-cased set of it, ~30 MB, loaded at its first
fallback to jusText, which the small page does not reach). A line per (page, extractor): seconds, result (characters, or the
skip reason), peak RSS, peak above the baseline and that over the cap. ``--analysis`` runs
the crawl's whole page analysis instead (``analyse_page`` with that extractor and the
bundled demo model: text, sentences, links, images with their contexts and scores), on
the page as the spider hands it over (its first ``--mb`` decoded).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

PAGES = ("img_links", "paragraphs", "tiny_divs", "table", "deep_nest")

_CHILD = r"""
import json, resource, sys, time, logging
from focuscrawl.text.cli import page_text_from_file, read_html_bytes
from focuscrawl.text.extractors import ExtractionError, decode_head, get_extractor
from focuscrawl.text.html import markup_budget
for n in ("trafilatura", "justext", "boilerpy3"):
    logging.getLogger(n).setLevel(logging.CRITICAL)
path, cap, name, limit, analysis = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5] == "1"
if analysis:  # the crawl's page analysis: the demo model's scorer, loaded before the clock
    from focuscrawl.analysis import AnalysisConfig, analyse_page
    config = AnalysisConfig(extractor=name, text_time_limit=limit, text_max_tags=markup_budget(cap))
    scorer = config.scorer.load()
if name.startswith("trafilatura"):  # one-time caches, loaded at trafilatura's first jusText fallback
    from justext.core import define_stoplist
    from trafilatura.external import jt_stoplist_init
    define_stoplist(jt_stoplist_init())
start = time.perf_counter()
if analysis:  # as the spider hands it over: the first cap bytes, decoded
    html, _ = decode_head(read_html_bytes(path, cap), None, cap)
    page = analyse_page(html, "http://page.test/", "http://page.test/", 0, config, scorer)
    del html
    result = (f"skipped: {page.error_detail}" if page.error else
              f"{len(page.sentences)} sentences, {len(page.links)} links, {len(page.images)} images"
              + "".join(f", {n}" for n in page.notes))
else:
    try:
        result = f"{len(page_text_from_file(path, get_extractor(name), cap, limit).text)} chars"
    except ExtractionError as exc:
        result = f"skipped: {exc}"
print(json.dumps([time.perf_counter() - start, result, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""


def page(kind: str, size: int) -> bytes:
    """A generated worst page of about ``size`` bytes (``small``: one paragraph)."""
    if kind == "small":
        html = "<p>" + "The cat sat on the mat and looked at the dog. " * 20 + "</p>\n"
    elif kind == "img_links":
        html = "".join(f'<a href="/p{i}"><img src="/i{i}.jpg" alt="cat {i}"></a>\n' for i in range(size // 50))
    elif kind == "paragraphs":
        para = "<p>" + "The cat sat on the mat and looked at the dog. " * 20 + "</p>\n"
        html = para * (size // len(para))
    elif kind == "tiny_divs":
        html = "<div>a</div>" * (size // 12)
    elif kind == "table":
        html = "<table>" + "<tr><td>x</td><td><a href=/>y</a></td></tr>" * (size // 42) + "</table>"
    elif kind == "deep_nest":
        html = "<div>" * 100_000 + "deep text" + "</div>" * 100_000
    else:
        raise ValueError(f"unknown page {kind!r}; choose from {PAGES}")
    return ("<html><body>" + html + "</body></html>").encode()


def run(path: str, cap: int, name: str, limit: float, analysis: bool = False) -> tuple[float, str, float]:
    """(seconds, result, peak RSS MB) of extracting ``path`` (``analysis``: of the crawl's
    ``analyse_page`` with that extractor) in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _CHILD, path, str(cap), name, str(limit), str(int(analysis))],
                         capture_output=True, text=True, check=True)
    seconds, result, rss = json.loads(out.stdout.strip().splitlines()[-1])
    return seconds, result, rss


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=2.0, help="page size and cap in MB (default: the 2 MiB cap)")
    ap.add_argument("--extractors", default="trafilatura,trafilatura-recall,auto,justext,article,fulltext")
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--time-limit", type=float, default=30.0, help="per-page limit in seconds")
    ap.add_argument("--analysis", action="store_true",
                    help="run the crawl's whole page analysis (analyse_page: text, links, images with "
                         "contexts and scores) instead of the extractor alone")
    args = ap.parse_args(argv)
    cap = int(args.mb * 1024 * 1024)
    names = args.extractors.split(",")
    print(f"{'page':10s} {'MB':>5s} {'extractor':12s} {'seconds':>8s} {'RSS MB':>7s} {'above':>6s} "
          f"{'x cap':>6s}  result")
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small.html")
        with open(small, "wb") as fh:
            fh.write(page("small", 0))
        base = {name: run(small, cap, name, args.time_limit, args.analysis)[2] for name in names}
        worst: dict[str, float] = {}
        for kind in args.pages.split(","):
            path = os.path.join(tmp, f"{kind}.html")
            with open(path, "wb") as fh:
                fh.write(page(kind, cap))
            size = os.path.getsize(path)
            for name in names:
                seconds, result, rss = run(path, cap, name, args.time_limit, args.analysis)
                above = rss - base[name]
                worst[name] = max(worst.get(name, 0.0), above)
                print(f"{kind:10s} {size / 1e6:5.1f} {name:12s} {seconds:8.1f} {rss:7.0f} {above:6.1f} "
                      f"{above * 2 ** 20 / cap:6.1f}  {result[:90]}", flush=True)
    print("baseline RSS MB (small page): " + ", ".join(f"{n} {base[n]:.0f}" for n in names))
    print("worst peak above baseline, x cap: " + ", ".join(f"{n} {worst[n] * 2 ** 20 / cap:.1f}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
