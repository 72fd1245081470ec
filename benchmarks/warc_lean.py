"""The lean archive path against a plain single-process pass, on a CommonCrawl-style WARC.

    python benchmarks/warc_lean.py [--data ../shared/data] [--repeat 3] [--copies 2] [--out results.json]

Writes one WARC of the shared data's real pages (CLEANEVAL final, the article-extraction
benchmark, Readability's test pages: ~1,050 pages, each written ``--copies`` times under
different URLs, no images: a page-only archive as CommonCrawl's; ``--copies 40`` is ~42,000
pages, a CommonCrawl file's count, for a long run), then runs in interleaved rounds (the order
rotated each round):

- ``plain``: one process doing warcio + ``trafilatura.extract`` with its defaults + an lxml
  list of the ``<img>`` src/alt, written as JSON lines (the baseline, cc2dataset's shape);
- ``engine``: ``focuscrawl warc`` with every page through Scrapy's engine and one analysis
  worker (``-s FOCUSCRAWL_ARCHIVE_LEAN=False -s FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=1``:
  the replay before the lean path);
- ``lean``: ``focuscrawl warc`` with its defaults (the lean path, two analysis workers).

Each replay runs with the project's defaults (an unsized image the archive does not hold is a
candidate pair; ``focuscrawl fetch`` measures it).
Prints, per run, wall seconds, pages/s, CPU ms a page (the command and its child processes,
user + system), the cores used (CPU / wall) and the peak memory (the largest resident size
of the command or any of its processes); then the medians of the ratios to the plain
pass of the same round (targets: pages/s >= 1.0x, CPU a page <= 1.25x, the lean path on
both cores), the load averages, whether the engine and lean outputs are the same (pages,
images, records, sentences; order-dependent columns aside), and the pairs: ``focuscrawl
rank --format parquet`` of the lean run, read back with pyarrow (``url`` and ``caption``
columns of type string, as ``img2dataset --input_format parquet --url_col url --caption_col
caption`` reads them; target > 1,000 rows).
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warc_parity import records, table  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: settings of every replay: quiet
REPLAY = ["LOG_LEVEL=WARNING", "FOCUSCRAWL_PROGRESS_INTERVAL=0"]
VARIANTS = {"plain": None, "engine": ["FOCUSCRAWL_ARCHIVE_LEAN=False", "FOCUSCRAWL_ARCHIVE_ANALYSIS_WORKERS=1"],
            "lean": []}


def real_pages(data: Path) -> list[tuple[str, bytes]]:
    """``(name, HTML bytes)`` of the shared data's real pages."""
    pages = [(f"cleaneval/{p.stem}", p.read_bytes()) for p in sorted((data / "cleaneval/final/input").glob("*.html"))]
    pages += [(f"article/{p.name[:-len('.html.gz')]}", gzip.decompress(p.read_bytes()))
              for p in sorted((data / "article-extraction-benchmark/html").glob("*.html.gz"))]
    pages += [(f"readability/{p.parent.name}", p.read_bytes())
              for p in sorted((data / "readability-pages").glob("*/source.html"))]
    return pages


def copy_hosts(n: int) -> tuple[str, ...]:
    """The host labels of ``n`` copies: ``a``, ``b``, ... ``z``, ``c26``, ``c27``, ..."""
    return tuple(chr(ord("a") + i) if i < 26 else f"c{i}" for i in range(n))


def write_warc(path: Path, pages: list[tuple[str, bytes]], copies: tuple[str, ...] = ("a", "b")) -> int:
    """A gzipped WARC of response records: every page once per copy, under ``http://COPY.cc.test/``."""
    from warcio.warcwriter import WARCWriter

    n = 0
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for copy in copies:
            for name, body in pages:
                payload = (f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n"
                           .encode() + body)
                writer.write_record(writer.create_warc_record(
                    f"http://{copy}.cc.test/{name}.html", "response", payload=io.BytesIO(payload),
                    length=len(payload), warc_content_type="application/http; msgtype=response"))
                n += 1
    return n


def plain_pass(warc: str, out: str) -> int:
    """The baseline: warcio + trafilatura (defaults) + lxml ``<img>`` src/alt, JSON lines."""
    import trafilatura
    from lxml import etree, html as lxml_html
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(warc, "rb") as fh, open(out, "w", encoding="utf-8") as sink:
        for record in ArchiveIterator(fh):
            if record.rec_type != "response":
                continue
            body = record.content_stream().read()
            url = record.rec_headers.get_header("WARC-Target-URI")
            text = trafilatura.extract(body.decode("utf-8", "replace"), url=url)
            try:
                tree = lxml_html.fromstring(body)
            except (etree.ParserError, ValueError):
                tree = None
            images = [{"src": img.get("src"), "alt": img.get("alt")} for img in tree.iter("img")] \
                if tree is not None else []
            sink.write(json.dumps({"url": url, "text": text, "images": images}) + "\n")
            n += 1
    return n


def run(cmd: list[str]) -> tuple[float, float, float, str]:
    """Wall and CPU seconds (the command and its reaped children, user + system), the peak
    resident MB of the command or any of its reaped children, its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{err.read()[-3000:]}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read()


def measure(variant: str, warc: Path, out: Path) -> dict:
    if VARIANTS[variant] is None:
        wall, cpu, rss, stdout = run([sys.executable, __file__, "--plain-pass", str(warc), str(out)])
        pages = int(stdout.strip())
    else:
        cmd = [sys.executable, "-m", "focuscrawl.cli", "warc", str(warc), "-o", str(out), "--json"]
        for setting in REPLAY + VARIANTS[variant]:
            cmd += ["-s", setting]
        wall, cpu, rss, stdout = run(cmd)
        pages = json.loads(stdout.strip().splitlines()[-1])["focuscrawl/pages/written"]
    return {"variant": variant, "wall": wall, "cpu": cpu, "pages": pages, "pages_per_s": pages / wall,
            "cpu_ms_per_page": 1000 * cpu / pages, "cores": cpu / wall, "peak_mb": rss, "load": os.getloadavg()[0]}


def same_outputs(a: Path, b: Path) -> dict[str, bool]:
    """Two replays' outputs compared without the columns that follow the processing order."""
    def sentences(run: Path) -> Counter:
        with gzip.open(run / "sentences.txt.gz", "rt", encoding="utf-8") as fh:
            return Counter(fh)

    return {"pages": table(a / "pages.tsv", "url") == table(b / "pages.tsv", "url"),
            "images": table(a / "images.tsv", "image_url") == table(b / "images.tsv", "image_url"),
            "records": records(a) == records(b), "sentences": sentences(a) == sentences(b)}


def pairs(run_dir: Path, parquet: Path) -> dict:
    """``focuscrawl rank --format parquet`` of the run, read back as img2dataset reads it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run([sys.executable, "-m", "focuscrawl.cli", "rank", str(run_dir), "--format", "parquet", "-o", str(parquet)])
    table_ = pq.read_table(parquet)
    schema = table_.schema
    types = {name: str(schema.field(name).type) for name in ("url", "caption") if name in schema.names}
    ok = all(name in schema.names and pa.types.is_string(schema.field(name).type) for name in ("url", "caption"))
    captions = table_.column("caption").to_pylist() if "caption" in schema.names else []
    return {"rows": table_.num_rows, "columns": schema.names, "types": types, "img2dataset_columns_ok": ok,
            "empty_captions": sum(1 for c in captions if not c), "distinct_urls": len(set(table_.column("url").to_pylist()))}


def ratios(rounds: list[list[dict]], variant: str) -> dict:
    """Median (and range) over rounds of ``variant`` / plain of the same round."""
    out = {}
    for key in ("pages_per_s", "cpu_ms_per_page"):
        values = [next(r[key] for r in rnd if r["variant"] == variant) / next(r[key] for r in rnd if r["variant"] == "plain")
                  for rnd in rounds]
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    out["cores"] = statistics.median(next(r["cores"] for r in rnd if r["variant"] == variant) for rnd in rounds)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--variants", default="plain,engine,lean")
    parser.add_argument("--copies", type=int, default=2, help="URLs each page is written under")
    parser.add_argument("--out", help="write the runs and the summary as JSON here")
    parser.add_argument("--plain-pass", nargs=2, metavar=("WARC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_pass:
        print(plain_pass(*args.plain_pass))
        return 0
    variants = args.variants.split(",")
    with tempfile.TemporaryDirectory(prefix="focuscrawl-warc-lean-") as tmp:
        tmp = Path(tmp)
        warc = tmp / "cc-style.warc.gz"
        pages = real_pages(Path(args.data))
        records_written = write_warc(warc, pages, copy_hosts(args.copies))
        print(f"{warc.name}: {len(pages)} real pages x {args.copies} URLs = {records_written} response records, "
              f"{warc.stat().st_size / 1e6:.1f} MB; {args.repeat} interleaved rounds of {', '.join(variants)}; "
              f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
        rounds: list[list[dict]] = []
        for n in range(args.repeat):
            order = variants[n % len(variants):] + variants[:n % len(variants)]
            rnd = []
            for variant in order:
                out = tmp / f"{variant}-{n}"
                result = measure(variant, warc, out)
                rnd.append(result)
                print(f"  round {n + 1} {variant:>6}: {result['wall']:6.1f} s, {result['pages_per_s']:5.1f} pages/s, "
                      f"CPU {result['cpu_ms_per_page']:5.1f} ms a page, {result['cores']:.2f} cores, "
                      f"peak {result['peak_mb']:.0f} MB, "
                      f"load {result['load']:.2f}", flush=True)
            rounds.append(rnd)
        summary: dict = {"pages": records_written, "rounds": rounds}
        for variant in variants:
            if variant != "plain" and "plain" in variants:
                r = summary[variant] = ratios(rounds, variant)
                print(f"{variant} / plain: pages/s {r['pages_per_s']['median']:.2f}x "
                      f"({r['pages_per_s']['min']:.2f}-{r['pages_per_s']['max']:.2f}; target >= 1.0), "
                      f"CPU a page {r['cpu_ms_per_page']['median']:.2f}x ({r['cpu_ms_per_page']['min']:.2f}-"
                      f"{r['cpu_ms_per_page']['max']:.2f}; target <= 1.25), cores {r['cores']:.2f}")
        last = args.repeat - 1
        if "engine" in variants and "lean" in variants:
            summary["same_outputs"] = same_outputs(tmp / f"engine-{last}", tmp / f"lean-{last}")
            print(f"engine and lean outputs the same (order-dependent columns aside): {summary['same_outputs']}")
        if "lean" in variants:
            summary["pairs"] = pairs(tmp / f"lean-{last}", tmp / "pairs.parquet")
            p = summary["pairs"]
            print(f"pairs: {p['rows']:,} rows ({p['distinct_urls']:,} distinct URLs, {p['empty_captions']} empty "
                  f"captions), url/caption {p['types']}: img2dataset's columns {'OK' if p['img2dataset_columns_ok'] else 'WRONG'}; "
                  f"target > 1,000: {'OK' if p['rows'] > 1000 else 'BELOW'}")
        summary["load_range"] = [min(r["load"] for rnd in rounds for r in rnd), max(r["load"] for rnd in rounds for r in rnd)]
        if args.out:
            Path(args.out).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
