"""Run a ``focused`` crawl against a LocalWeb in a subprocess; small hand-made model.

The toy model is a unigram-like ARPA whose perplexities are easy to compute by
hand (PP = 10^(-(Σ log10 p)/(tokens+1)), ``</s>`` = -0.5):

* ``cat`` -0.5, ``kitten`` -1.0, ``tabby`` -1.0, any unknown word (``<unk>``) -5.0,
  ``spam`` -7.0.
* ``cat cat cat cat cat`` -> 1.71 (bucket high; the bigram ``cat cat`` is -0.1)
* ``cat qqq qqq qqq qqq`` -> 10^((0.5+20+0.5)/6) = 10^3.5 = 3162 (normal)
* ``qqq qqq qqq qqq qqq`` -> 10^(25.5/6) = 17783 (low)
* ``spam spam spam spam spam`` -> 10^(35.5/6) = 8.25e5 (razored)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TOY_ARPA = """\\data\\
ngram 1=7
ngram 2=1

\\1-grams:
-5.0\t<unk>\t0
-99\t<s>\t0
-0.5\t</s>\t0
-0.5\tcat\t0
-1.0\tkitten\t0
-1.0\ttabby\t0
-7.0\tspam\t0

\\2-grams:
-0.1\tcat cat

\\end\\
"""
# total weight 1000: "tabby" alone scores 0.85 (link score 1), "kitten" 0.1
TOY_KEYWORDS = "tabby;850\nkitten;100\ncat;50\n"

ON_TOPIC = "cat cat cat cat cat."  # PP 1.71 (high)
NORMAL = "cat qqq qqq qqq qqq."  # PP 3162 (normal)
LOW = "qqq qqq qqq qqq qqq."  # PP 17783 (low)
OFF_TOPIC = "spam spam spam spam spam."  # PP 8.25e5 (razored)


def write_model(tmp: Path) -> tuple[Path, Path]:
    model, keywords = tmp / "toy.arpa", tmp / "toy.keywords.txt"
    model.write_text(TOY_ARPA)
    keywords.write_text(TOY_KEYWORDS)
    return model, keywords


def crawl(web, tmp: Path, seeds: str, mode: str = "keywords", settings: dict | None = None,
          timeout: float = 60, **args) -> tuple[dict, subprocess.CompletedProcess]:
    """Crawl in a subprocess through ``web`` as proxy; returns (stats, process)."""
    model, keywords = write_model(tmp)
    out = tmp / "out"
    base = {
        # one request at a time, and none started while a response is parsed: the
        # server then sees exactly the scheduler's best-first order
        "CONCURRENT_REQUESTS": 1, "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 1, "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False,
        "FOCUSCRAWL_PROGRESS_INTERVAL": 0, "LOG_LEVEL": "INFO", "RETRY_ENABLED": False,
        "FOCUSCRAWL_LINKS_LOG": True, "FEEDS": {str(out / "items.jsonl"): {"format": "jsonlines"}},
    }
    base.update(settings or {})
    spider_args = {"seeds": seeds, "mode": mode, "model": str(model), "keywords": str(keywords),
                   "output": str(out)}
    spider_args.update(args)
    stats_path = tmp / "stats.json"
    env = dict(os.environ, http_proxy=web.proxy, HTTP_PROXY=web.proxy, no_proxy="", NO_PROXY="")
    proc = subprocess.run(
        [sys.executable, str(REPO / "tests" / "run_crawl.py"), str(stats_path), json.dumps(base),
         json.dumps(spider_args)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    return stats, proc


def links_log(tmp: Path) -> list[dict]:
    lines = (tmp / "out" / "links.tsv").read_text().splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


def items(tmp: Path) -> list[dict]:
    path = tmp / "out" / "items.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
