"""Load test of the annotation app on 127.0.0.1: concurrent annotators through real HTTP.

Usage: python benchmarks/annotate_load.py [--images 100] [--per-image 3] [--annotators 8]

Each simulated annotator logs in and loops GET / -> POST /answer until no image is
left (bounded: at most images*per-image answers in total). Runs once with one
annotator per slot in turn (baseline: 3 annotators, one after the other) and once
with all annotators at the same time; prints answers per second of both and their
ratio, and checks that every image ended with exactly --per-image distinct answers.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.annotate import Client, start_server  # noqa: E402
from tests.support.runfixture import make_run_dir  # noqa: E402


def annotate_until_done(port: int, name: str, counter: Counter) -> None:
    client = Client(port)
    client.login(name, f"{name}-password")
    csrf = client.csrf()
    for _ in range(100000):
        item = client.current_item()
        if item is None:
            return
        status, headers, _ = client.post("/answer", {"csrf": csrf, "item": item, "image": item % 5, "text": item % 4})
        counter[headers.get("Location", str(status))] += 1


def run(work: Path, images: int, per_image: int, annotators: int, concurrent: bool) -> tuple[float, int, bool]:
    run_dir = work / "run"
    if not run_dir.exists():
        make_run_dir(run_dir, [{"url": f"http://a.org/{i}.jpg", "score": 3 + i, "alt": f"cat {i}"}
                               for i in range(images)])
    db_path = work / f"db-{'c' if concurrent else 's'}.sqlite3"
    db, server, thread = start_server(run_dir, db_path, per_image)
    names = [f"user{i}" for i in range(annotators)]
    for n in names:
        db.add_user(n, f"{n}-password")
    counter: Counter = Counter()
    t = time.perf_counter()
    try:
        if concurrent:
            threads = [threading.Thread(target=annotate_until_done, args=(server.server_port, n, counter))
                       for n in names]
            for th in threads:
                th.start()
            for th in threads:
                th.join(600)
        else:
            for n in names[:per_image]:
                annotate_until_done(server.server_port, n, counter)
        took = time.perf_counter() - t
    finally:
        server.shutdown()
        thread.join(10)
    per_item = Counter(item for item, *_ in db.all_answers())
    distinct = {item: len({u for i, u, *_ in db.all_answers() if i == item}) for item in per_item}
    ok = (len(per_item) == images and set(per_item.values()) == {per_image}
          and set(distinct.values()) == {per_image})
    return took, sum(per_item.values()), ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=100)
    ap.add_argument("--per-image", type=int, default=3)
    ap.add_argument("--annotators", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="annotate-load-") as tmp:
        work = Path(tmp)
        base_t, base_n, base_ok = run(work, args.images, args.per_image, args.annotators, concurrent=False)
        conc_t, conc_n, conc_ok = run(work, args.images, args.per_image, args.annotators, concurrent=True)
    print(f"sequential, {args.per_image} annotators in turn: {base_n} answers in {base_t:.2f}s = "
          f"{base_n / base_t:.1f} answers/s, counts exact: {base_ok}")
    print(f"concurrent, {args.annotators} annotators: {conc_n} answers in {conc_t:.2f}s = "
          f"{conc_n / conc_t:.1f} answers/s, counts exact: {conc_ok}")
    print(f"ratio concurrent/sequential throughput: {(conc_n / conc_t) / (base_n / base_t):.2f}")
    return 0 if base_ok and conc_ok else 1


if __name__ == "__main__":
    sys.exit(main())
