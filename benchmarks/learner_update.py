"""The link learner's model update with scikit-learn's public ``partial_fit``, and what blocking
pandas while scikit-learn is imported saves in the crawl process.

    python benchmarks/learner_update.py

Prints the median CPU time of one update (20 links, as ``FOCUSCRAWL_LEARNING_RETRAIN_EVERY``),
and the CPU and peak RSS of importing the learner's scikit-learn classes with pandas importable
and with it blocked (``focuscrawl.focus.link_learner._pandas_unimportable``), each in a fresh process.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

IMPORT = ("import resource, sys, time\n"
          "{block}t = time.process_time()\n"
          "from sklearn.linear_model import SGDClassifier\n"
          "from sklearn.feature_extraction.text import HashingVectorizer\n"
          "print(time.process_time() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "
          "sys.modules.get('pandas') is not None)\n")


def update_ms(pages: int = 2000) -> float:
    from focuscrawl.focus.link_learner import LinkLearner, link_features

    learner = LinkLearner(retrain_every=20)
    times = []
    for i in range(pages):
        features = link_features(f"read w{i % 7} x{i % 3}", f"http://h{i % 4}.test/p/{i}", "http://p.test/", 0.5,
                                 0.3, 40.0 + i)
        started = time.process_time()
        learner.observe(features, f"h{i % 4}.test", i % 3 == 0 or i % 7 == 1, thesis_score=40.0 + i)
        if not learner.batch and i > 40:  # this observation updated the model
            times.append(time.process_time() - started)
    return 1000 * statistics.median(times)


def main() -> int:
    print(f"one model update (20 links, partial_fit): {update_ms():.2f} ms CPU (median)")
    for name, block in (("pandas importable", ""), ("pandas blocked", "sys.modules['pandas'] = None\n")):
        out = subprocess.run([sys.executable, "-c", IMPORT.format(block=block)], capture_output=True, text=True,
                             check=True).stdout.split()
        print(f"import scikit-learn, {name}: {float(out[0]):.2f} s CPU, peak RSS {float(out[1]):.0f} MB, "
              f"pandas imported: {out[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
