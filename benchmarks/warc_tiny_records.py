"""Many tiny WARC records: what the reader and the replay cost per record, and their memory.

    python benchmarks/warc_tiny_records.py [--records 100000] [--replay 5000] [--out DIR]

Writes ``--records`` tiny response records (a ~150-byte HTML page each, one gzip member
per record) with warcio, then measures, each in a process of its own, with its peak RSS:
``index`` (``ArchiveIndex``, what ``focuscrawl warc`` builds before it replays),
``read`` (``iter_responses``, every record parsed into a Scrapy response) and ``replay``
(``focuscrawl warc`` over a file of the first ``--replay`` records: the whole pipeline).
Prints one JSON line per measure (records/s, peak RSS MB).
"""
from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MEASURE = """
import json, resource, sys, time
from focuscrawl.archive.reader import ArchiveIndex, iter_responses
what, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if what == "index":
    n = len(ArchiveIndex([path]).order)
else:
    n = sum(1 for _ in iter_responses(path))
secs = time.perf_counter() - t
print(json.dumps({"measure": what, "records": n, "seconds": round(secs, 2),
                  "records_per_s": round(n / secs), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))
"""


def write_archive(path: Path, records: int) -> Path:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for i in range(records):
            body = (f"<html><body><p>The cat {i} sleeps on the sofa while the kitten plays.</p>"
                    f'<a href="/p{i + 1}">next</a></body></html>').encode()
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"http://tiny.test/p{i}", "response",
                                                          payload=io.BytesIO(body), http_headers=headers))
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--replay", type=int, default=5000, help="records of the replay measure (0: none)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        big = write_archive(out / "tiny.warc.gz", args.records)
        for what in ("index", "read"):
            done = subprocess.run([sys.executable, "-c", MEASURE, what, str(big)], cwd=ROOT, capture_output=True,
                                  text=True, check=True)
            print(done.stdout.strip().splitlines()[-1], flush=True)
        if args.replay:
            small = write_archive(out / "replay.warc.gz", args.replay)
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "focuscrawl.cli", "warc", str(small), "-o", str(out / "run"),
                            "-s", "FOCUSCRAWL_PROGRESS_INTERVAL=0", "-s", "LOG_LEVEL=WARNING"], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            secs = time.perf_counter() - t
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(json.dumps({"measure": "replay", "records": args.replay, "seconds": round(secs, 1),
                              "records_per_s": round(args.replay / secs, 1), "peak_rss_mb": round(rss)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
