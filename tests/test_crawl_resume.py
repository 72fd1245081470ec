"""A crawl stopped by its page budget and resumed with the same JOBDIR fetches every
page exactly once and neither loses nor repeats rows of links.tsv."""
from __future__ import annotations

from tests.support.crawl import crawl, items, links_log
from tests.support.localweb import LocalWeb, Page, html
from tests.support.toymodel import NORMAL, ON_TOPIC


def test_resume_with_jobdir(tmp_path):
    leaves = [f"/{i}" for i in range(6)]
    site = {("seed.test", "/"): Page(html("seed", NORMAL, [(p, "kitten") for p in leaves]))}
    site.update({("seed.test", p): Page(html(p, ON_TOPIC, [("/", "cat")])) for p in leaves})
    jobdir = str(tmp_path / "job")
    with LocalWeb(site) as web:
        stats1, proc = crawl(web, tmp_path, "http://seed.test/", settings={"JOBDIR": jobdir}, budget="3")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats1["finish_reason"] == "page_budget"
        first = web.pages_requested()
        assert first == ["seed.test/", "seed.test/0", "seed.test/1"]
        stats2, proc = crawl(web, tmp_path, "http://seed.test/", settings={"JOBDIR": jobdir})
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats2["finish_reason"] == "finished"
    requested = web.pages_requested()
    assert sorted(requested) == sorted(["seed.test/"] + [f"seed.test{p}" for p in leaves])
    assert len(requested) == len(set(requested)) == 7
    rows = links_log(tmp_path)
    pairs = [(r["from"], r["to"]) for r in rows]
    assert len(pairs) == len(set(pairs))
    assert {to for frm, to in pairs if frm == "http://seed.test/"} == {f"http://seed.test{p}" for p in leaves}
    assert sorted(i["url"] for i in items(tmp_path)) == sorted(f"http://{r}" for r in requested)


def leaf_site(n: int = 6) -> dict:
    leaves = [f"/{i}" for i in range(n)]
    site = {("seed.test", "/"): Page(html("seed", NORMAL, [(p, "kitten") for p in leaves]))}
    site.update({("seed.test", p): Page(html(p, ON_TOPIC, [("/", "cat")])) for p in leaves})
    return site


def test_the_page_budget_is_the_runs_across_resumes(tmp_path):
    jobdir = {"JOBDIR": str(tmp_path / "job")}
    with LocalWeb(leaf_site()) as web:
        stats1, proc = crawl(web, tmp_path, "http://seed.test/", settings=jobdir, budget="3")
        assert proc.returncode == 0 and stats1["finish_reason"] == "page_budget"
        stats2, proc = crawl(web, tmp_path, "http://seed.test/", settings=jobdir, budget="5")
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert stats2["finish_reason"] == "page_budget"
        assert stats2["focuscrawl/budget/pages_before_resume"] == 3
        assert len(web.pages_requested()) == 5  # two more, not five more
        stats3, proc = crawl(web, tmp_path, "http://seed.test/", settings=jobdir, budget="5")
        assert proc.returncode == 0 and stats3["finish_reason"] == "page_budget"
        assert len(web.pages_requested()) == 5  # spent: stops before fetching anything
    pages = [i["url"] for i in items(tmp_path) if "sentences" in i]
    assert len(pages) == len(set(pages)) == 5


def test_the_per_host_page_limit_counts_the_pages_before_a_resume(tmp_path):
    settings = {"JOBDIR": str(tmp_path / "job"), "FOCUSCRAWL_MAX_PAGES_PER_HOST": 5}
    with LocalWeb(leaf_site()) as web:
        _, proc = crawl(web, tmp_path, "http://seed.test/", settings=settings, budget="3")
        assert proc.returncode == 0
        stats, proc = crawl(web, tmp_path, "http://seed.test/", settings=settings)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(web.pages_requested()) == 5  # 3 + 2, not 3 + 4
    assert stats["focuscrawl/scope/host_limit"] == 2


def test_each_sessions_stats_are_kept(tmp_path):
    import json

    jobdir = {"JOBDIR": str(tmp_path / "job")}
    with LocalWeb(leaf_site()) as web:
        for budget in ("2", "4"):
            _, proc = crawl(web, tmp_path, "http://seed.test/", settings=jobdir, budget=budget)
            assert proc.returncode == 0, proc.stderr[-3000:]
        _, proc = crawl(web, tmp_path, "http://seed.test/", settings=jobdir)
        assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    sessions = [json.loads(line) for line in (out / "stats.sessions.jsonl").read_text().splitlines()]
    last = json.loads((out / "stats.json").read_text())
    assert [s["finish_reason"] for s in sessions] + [last["finish_reason"]] == ["page_budget", "page_budget", "finished"]
    assert [s["focuscrawl/pages/crawled"] for s in sessions] + [last["focuscrawl/pages/crawled"]] == [2, 2, 3]
    assert len({s["start_time"] for s in sessions} | {last["start_time"]}) == 3
