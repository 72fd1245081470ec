"""Cost of the image-context extractors per crawled page, against the thesis's context.

In a crawl every kept ``<img>`` of a page gets its contexts, so this measures what an
extra extractor (``FOCUSCRAWL_IMAGE_EXTRA_CONTEXTS``) adds per page: bind the extractor
to the parsed page and extract the context of *every* ``<img>`` (not only captioned
ones), on real pages. The baseline, measured in the same run with pages as the outer
loop, is the thesis's parent/sibling context (``focuscrawl.context.thesis``) that the
crawl computes anyway. Also prints the text extractors' cost per page against the
lxml parse the spider does anyway.

    python benchmarks/context_extractors.py [../shared/data/article-extraction-benchmark] [--pages 60]
"""
from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

from focuscrawl.context.extractors import CONTEXT_EXTRACTORS
from focuscrawl.context.thesis import thesis_context
from focuscrawl.text.extractors import get_extractor
from focuscrawl.text.html import decode_html, parse_html


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default="../shared/data/article-extraction-benchmark")
    ap.add_argument("--pages", type=int, default=60)
    args = ap.parse_args()
    files = sorted((Path(args.path) / "html").glob("*.html.gz"))[: args.pages]
    if not files:
        raise SystemExit(f"no html/*.html.gz under {args.path}")
    htmls = [decode_html(gzip.decompress(f.read_bytes())) for f in files]
    roots = [parse_html(h) for h in htmls]
    n_imgs = sum(len(r.findall(".//img")) for r in roots)

    ctx_time = {name: 0.0 for name in ["thesis (baseline)", *CONTEXT_EXTRACTORS]}
    text_time = {name: 0.0 for name in ["lxml parse (baseline)", "fulltext", "trafilatura", "justext", "article"]}
    for html, root in zip(htmls, roots):
        imgs = root.findall(".//img")
        t = time.perf_counter()
        for img in imgs:
            thesis_context(img)
        ctx_time["thesis (baseline)"] += time.perf_counter() - t
        for name, bind in CONTEXT_EXTRACTORS.items():
            t = time.perf_counter()
            bound = bind(root)
            for img in imgs:
                bound(img)
            ctx_time[name] += time.perf_counter() - t
        t = time.perf_counter()
        parse_html(html)
        text_time["lxml parse (baseline)"] += time.perf_counter() - t
        for name in list(text_time)[1:]:
            extract = get_extractor(name)
            t = time.perf_counter()
            try:
                extract(html)
            except ValueError:
                pass
            text_time[name] += time.perf_counter() - t

    n = len(files)
    print(f"{n} pages, {n_imgs} <img> ({n_imgs / n:.1f} per page)\n")
    print(f"{'context extractor':<20} {'ms/page':>9} {'× thesis':>9}")
    base = ctx_time["thesis (baseline)"]
    for name, s in sorted(ctx_time.items(), key=lambda kv: kv[1]):
        print(f"{name:<20} {1000 * s / n:>9.2f} {s / base:>9.2f}")
    print(f"\n{'text extractor':<22} {'ms/page':>9} {'× parse':>9}")
    base = text_time["lxml parse (baseline)"]
    for name, s in sorted(text_time.items(), key=lambda kv: kv[1]):
        print(f"{name:<22} {1000 * s / n:>9.2f} {s / base:>9.2f}")


if __name__ == "__main__":
    main()
