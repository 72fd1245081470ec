"""``focuscrawl merge`` of parts that hold one page twice: the kept fetch's rows, links and sightings once."""
from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

from focuscrawl.middlewares.priority import LINKS_LOG_COLUMNS
from focuscrawl.output.files import iter_tsv
from focuscrawl.output.images import image_columns
from focuscrawl.output.records import record_path
from focuscrawl.output.tsv import row
from focuscrawl.pipelines.writers import PAGE_COLUMNS
from tests.support.crawl import ROOT
from tests.support import warmfork

W = "http://w.test"


def write_part(run: Path, pages: list[tuple[str, float, list[str]]], images: list[tuple[str, str, str]],
               links: list[tuple[str, str]]) -> None:
    """A run directory as a crawl writes it: ``pages`` (url, fetched_at, sentences), ``images``
    (image URL, page URL, alt: one sighting each; a second sighting of an image URL joins its
    record), ``links`` (from, to)."""
    run.mkdir(parents=True)
    page_rows = [row([{"url": u, "fetched_at": t, "sentences": len(ss)}.get(c, "") for c in PAGE_COLUMNS])
                 for u, t, ss in pages]
    (run / "pages.tsv").write_text("\n".join(["\t".join(PAGE_COLUMNS)] + page_rows) + "\n")
    (run / "sentences.txt.gz").write_bytes(gzip.compress("".join(s + "\n" for _, _, ss in pages for s in ss).encode()))
    columns = image_columns(1, 1)
    image_rows, records = [], {}
    for image_url, page_url, alt in images:
        sighting = {"page_url": page_url, "alt": alt, "title": None,
                    "contexts": [{"kind": "parent", "level": 0, "text": f"{alt} text"}]}
        if image_url in records:
            records[image_url]["sightings"].append(sighting)
            continue
        records[image_url] = {"image_url": image_url, "first_seen": len(records), "image_path": "",
                              "sightings": [sighting]}  # numbered from 0, as a crawl numbers them
        values = {"first_seen": len(records) - 1, "image_url": image_url, "page_url": page_url, "alt": alt,
                  "record_path": record_path(image_url)}
        image_rows.append(row([values.get(c, "") for c in columns]))
    (run / "images.tsv").write_text("\n".join(["\t".join(columns)] + image_rows) + "\n")
    for image_url, record in records.items():
        (run / record_path(image_url)).parent.mkdir(parents=True, exist_ok=True)
        (run / record_path(image_url)).write_text(json.dumps(record))
    link_rows = [row([{"from": f, "to": t}.get(c, "") for c in LINKS_LOG_COLUMNS]) for f, t in links]
    (run / "links.tsv").write_text("\n".join(["\t".join(LINKS_LOG_COLUMNS)] + link_rows) + "\n")


def test_a_page_in_two_parts_keeps_its_first_fetch_with_its_links_and_sightings(tmp_path):
    """Worker ``part-1`` fetched /p2 first (and parsed /p3, whose row it never committed); after
    it died, ``part-0`` fetched both again, /p2 changed meanwhile (another ALT for /i1, a new
    image /i4). The merge keeps part-1's /p2 with its links and its sighting of /i1 (its row too,
    though part-0 sorts first), part-0's /p3 with its links, drops the other fetches' 3 links and
    1 sighting, and keeps what only the later fetch saw (/i4 on /p2, /i1 on /p4)."""
    first, again = tmp_path / "part-1", tmp_path / "part-0"
    write_part(first, pages=[(f"{W}/p1", 1.0, ["one"]), (f"{W}/p2", 2.0, ["two"])],
               images=[(f"{W}/i1", f"{W}/p2", "cat"), (f"{W}/i2", f"{W}/p2", "kitten")],
               links=[(f"{W}/p1", f"{W}/x"), (f"{W}/p2", f"{W}/y"), (f"{W}/p2", f"{W}/z"), (f"{W}/p3", f"{W}/w")])
    write_part(again, pages=[(f"{W}/p2", 5.0, ["two again", "more"]), (f"{W}/p3", 6.0, ["three"]),
                             (f"{W}/p4", 7.0, ["four"])],
               images=[(f"{W}/i1", f"{W}/p2", "cat now"), (f"{W}/i4", f"{W}/p2", "new"),
                       (f"{W}/i3", f"{W}/p3", "dog"), (f"{W}/i1", f"{W}/p4", "cat again")],
               links=[(f"{W}/p2", f"{W}/y"), (f"{W}/p2", f"{W}/z"), (f"{W}/p3", f"{W}/w"), (f"{W}/p4", f"{W}/v")])
    out = tmp_path / "merged"
    done = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "merge", str(again), str(first), "-o", str(out),
                         "--json"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary == {"parts": 2, "pages": 4, "duplicate_pages": 1, "images": 4, "duplicate_sightings": 1,
                       "links": 5, "duplicate_links": 3, "orphan_sentences": 0,
                       "duplicate_pages_between": [{"parts": [str(first), str(again)], "pages": 1,
                                                    "example": f"{W}/p2"}]}
    # what it found, not a guessed cause (it said "crawled again after a worker died between a
    # checkpoint and its lease release" of any two runs, independent crawls too)
    assert done.stderr.splitlines() == [
        f"merge: 1 page URLs of {again} are in {first} too (e.g. {W}/p2): each keeps its earlier fetch (fetched_at)",
        "merge: left out the later fetches of 1 pages with their 3 links and 1 image sightings"]
    assert "worker" not in done.stderr
    human = warmfork.run([sys.executable, "-m", "focuscrawl.cli", "merge", str(again), str(first), "-o",
                          str(tmp_path / "again")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert human.stdout == (f"merge: 2 run directories -> {tmp_path / 'again'}: 4 pages, 4 images, 5 links "
                            f"(--json for the counts as JSON)\n")
    assert [r["url"] for r in iter_tsv(out / "pages.tsv")] == [f"{W}/p{i}" for i in range(1, 5)]
    assert gzip.decompress((out / "sentences.txt.gz").read_bytes()).decode().split("\n")[:3] == \
        ["one", "two", "three"]
    links = Counter((r["from"], r["to"]) for r in iter_tsv(out / "links.tsv"))
    assert links == Counter({(f"{W}/p1", f"{W}/x"): 1, (f"{W}/p2", f"{W}/y"): 1, (f"{W}/p2", f"{W}/z"): 1,
                             (f"{W}/p3", f"{W}/w"): 1, (f"{W}/p4", f"{W}/v"): 1})
    images = {r["image_url"]: r for r in iter_tsv(out / "images.tsv")}
    assert {u: (r["page_url"], r["alt"]) for u, r in images.items()} == {
        f"{W}/i1": (f"{W}/p2", "cat"), f"{W}/i2": (f"{W}/p2", "kitten"), f"{W}/i4": (f"{W}/p2", "new"),
        f"{W}/i3": (f"{W}/p3", "dog")}
    i1 = json.loads((out / record_path(f"{W}/i1")).read_text())
    assert [(s["page_url"], s["alt"]) for s in i1["sightings"]] == [(f"{W}/p2", "cat"), (f"{W}/p4", "cat again")]
    assert [s["alt"] for s in json.loads((out / record_path(f"{W}/i4")).read_text())["sightings"]] == ["new"]


def test_parts_without_a_page_in_common_are_concatenated(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_part(a, [(f"{W}/a", 1.0, ["a"])], [(f"{W}/i", f"{W}/a", "cat")], [(f"{W}/a", f"{W}/b")])
    write_part(b, [(f"{W}/b", 2.0, ["b"])], [(f"{W}/i", f"{W}/b", "cat 2")], [(f"{W}/b", f"{W}/a")])
    from focuscrawl.output.merge import merge_runs

    summary = merge_runs([a, b], tmp_path / "merged")
    assert (summary["duplicate_pages"], summary["duplicate_links"], summary["duplicate_sightings"]) == (0, 0, 0)
    assert summary["links"] == 2
    record = json.loads((tmp_path / "merged" / record_path(f"{W}/i")).read_text())
    assert [s["alt"] for s in record["sightings"]] == ["cat", "cat 2"]


def test_a_part_killed_before_folding_its_sightings_log_merges_with_them(tmp_path):
    """A crawl appends later sightings to ``sightings.log`` and folds them into the records
    at close: a part killed before that holds them in the log only; the merge takes them."""
    a = tmp_path / "a"
    write_part(a, [(f"{W}/a", 1.0, ["a"]), (f"{W}/b", 2.0, ["b"])], [(f"{W}/i", f"{W}/a", "cat")], [])
    later = {"page_url": f"{W}/b", "alt": "cat 2", "title": None,
             "contexts": [{"kind": "parent", "level": 0, "text": "cat 2 text"}]}
    lines = [{"sighting": later}, {"over_limit": 2}]
    (a / "sightings.log").write_text("".join(f"{record_path(W + '/i')}\t{json.dumps(line)}\n" for line in lines)
                                     + "records/ab/torn")
    from focuscrawl.output.merge import merge_runs

    merge_runs([a], tmp_path / "merged")
    record = json.loads((tmp_path / "merged" / record_path(f"{W}/i")).read_text())
    assert [s["alt"] for s in record["sightings"]] == ["cat", "cat 2"] and record["sightings_over_limit"] == 2
    assert not (tmp_path / "merged" / "sightings.log").exists()


def test_a_merge_numbers_images_as_a_crawl_does(tmp_path):
    """first_seen counts from 0 in a crawl (OUTPUT.md) and so in a merge: one part merged
    alone keeps its numbers; two parts are numbered on in order of first sighting."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_part(a, [(f"{W}/a", 1.0, ["a"])], [(f"{W}/i{k}", f"{W}/a", "cat") for k in range(3)], [])
    write_part(b, [(f"{W}/b", 2.0, ["b"])], [(f"{W}/j{k}", f"{W}/b", "cat") for k in range(2)], [])
    from focuscrawl.output.merge import merge_runs

    merge_runs([a], tmp_path / "alone")
    numbers = {r["image_url"]: r["first_seen"] for r in iter_tsv(a / "images.tsv")}
    assert {r["image_url"]: r["first_seen"] for r in iter_tsv(tmp_path / "alone" / "images.tsv")} == numbers
    merge_runs([b, a], tmp_path / "both")
    merged = [(r["image_url"], r["first_seen"]) for r in iter_tsv(tmp_path / "both" / "images.tsv")]
    assert merged == [(f"{W}/i{k}", str(k)) for k in range(3)] + [(f"{W}/j{k}", str(3 + k)) for k in range(2)]
    for url, n in merged:
        assert json.loads((tmp_path / "both" / record_path(url)).read_text())["first_seen"] == int(n)


def test_a_part_killed_inside_a_page_batch_merges_without_its_orphan_sentences(tmp_path):
    """A worker killed between a batch's sentences member and its pages.tsv rows (and another
    killed inside the next member's write) is merged as it is: the sentences no row counts and
    the torn member are left out and counted, every page keeps its own sentences."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_part(a, [(f"{W}/a", 1.0, ["a one", "a two"])], [], [])
    write_part(b, [(f"{W}/b", 2.0, ["b one"])], [], [])
    with open(a / "sentences.txt.gz", "ab") as f:
        f.write(gzip.compress(b"orphan one\norphan two\n"))  # the rows of this batch never came
        f.write(gzip.compress(b"torn member\n")[:-5])
    from focuscrawl.output.merge import merge_runs

    summary = merge_runs([a, b], tmp_path / "merged")
    assert (summary["pages"], summary["orphan_sentences"]) == (2, 2)
    assert gzip.decompress((tmp_path / "merged" / "sentences.txt.gz").read_bytes()).decode().splitlines() == [
        "a one", "a two", "b one"]


def test_merged_images_are_linked_and_records_written_as_the_crawl_writes_them(tmp_path):
    """An image file of a part is hard-linked into the merged run (same file, no copy), and
    a merged record has the bytes ``ImageStore`` gives a record (compact JSON)."""
    from focuscrawl.output.records import record_json
    from focuscrawl.output.merge import merge_runs

    part = tmp_path / "part-0"
    write_part(part, pages=[(f"{W}/p1", 1.0, ["one"])], images=[(f"{W}/i1", f"{W}/p1", "cat")], links=[])
    header, line = (part / "images.tsv").read_text().splitlines()
    cells = line.split("\t")
    cells[header.split("\t").index("image_path")] = "images/full/i1.jpg"
    (part / "images.tsv").write_text(header + "\n" + "\t".join(cells) + "\n")
    (part / "images" / "full").mkdir(parents=True)
    (part / "images" / "full" / "i1.jpg").write_bytes(b"\xff\xd8 jpeg bytes")
    out = tmp_path / "merged"
    merge_runs([part], out)
    merged_image = out / "images" / "full" / "i1.jpg"
    assert merged_image.read_bytes() == b"\xff\xd8 jpeg bytes"
    assert merged_image.stat().st_ino == (part / "images" / "full" / "i1.jpg").stat().st_ino
    merged_record = (out / record_path(f"{W}/i1")).read_bytes()
    assert merged_record == record_json(json.loads(merged_record))
    assert json.loads(merged_record)["sightings"][0]["alt"] == "cat"


KILL_AT = """
import os, signal, sys
from pathlib import Path
import focuscrawl.output.merge as merge
point, count = sys.argv[1], int(sys.argv[2])
calls = [0]
def killing(fn):
    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] > count:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return wrapper
if point == "write":  # SIGKILL before the record file number count + 1 is written
    merge._NewFolder.write = killing(merge._NewFolder.write)
else:  # SIGKILL in the swap, between the old folder's rename and the new one's
    merge.os.rename = killing(os.rename)
merge.merge_runs([Path(p) for p in sys.argv[4:]], Path(sys.argv[3]))
"""


def _records(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.glob("records/*/*.json"))}


def test_a_merge_killed_while_writing_records_leaves_none_half_written_and_a_rerun_completes(tmp_path):
    """SIGKILL inside the records (a merge into a new run directory, then one over a merged
    run directory, killed while writing and between the two renames of the swap): every record
    file in ``records/`` is a whole one of one merge, and the next merge gives the same run
    directory as an undisturbed merge."""
    from focuscrawl.output.merge import merge_runs

    parts = [tmp_path / "part-0", tmp_path / "part-1"]
    for n, part in enumerate(parts):
        write_part(part, pages=[(f"{W}/p{n}-{i}", n + i / 100, [f"text {n} {i}"]) for i in range(40)],
                   images=[(f"{W}/i{n}-{i}", f"{W}/p{n}-{i}", f"cat {i}") for i in range(40)]
                   + [(f"{W}/shared", f"{W}/p{n}-{i}", "logo") for i in range(3)], links=[])
    clean = tmp_path / "clean"
    merge_runs(parts, clean)
    assert len(_records(clean)) == 81

    def killed(out: Path, point: str, count: int) -> None:
        proc = warmfork.run([sys.executable, "-c", KILL_AT, point, str(count), str(out), *map(str, parts)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == -9, proc.stderr[-2000:]

    fresh = tmp_path / "fresh"
    killed(fresh, "write", 30)  # killed after about 30 of 81 records (written on threads)
    assert not (fresh / "records").exists()  # nothing half done where a reader looks
    assert 0 < len(list((fresh / ".records.new").rglob("*.json"))) <= 30
    merge_runs(parts, fresh)
    assert _records(fresh) == _records(clean) and not (fresh / ".records.new").exists()

    # over a merged run directory: its records stay whole (the old set) until the new set replaces them
    again = tmp_path / "again"
    merge_runs(parts[:1], again)
    old = _records(again)
    killed(again, "write", 30)
    assert _records(again) == old
    killed(again, "rename", 1)  # the old records moved aside, the new ones not yet in place
    assert not (again / "records").exists()
    merge_runs(parts, again)
    assert _records(again) == _records(clean)
    assert not (again / ".records.new").exists() and not (again / ".records.old").exists()
