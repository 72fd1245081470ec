"""A crawl stopped by its page budget and resumed with the same JOBDIR fetches every
page exactly once and neither loses nor repeats rows of links.tsv."""
from __future__ import annotations

from tests.crawlhelp import NORMAL, ON_TOPIC, crawl, items, links_log
from tests.localweb import LocalWeb, Page, html


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
