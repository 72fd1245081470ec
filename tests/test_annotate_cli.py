"""``focuscrawl annotate`` commands: accounts, serve (as a real process), stats tables and TSV."""
from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from focuscrawl.annotate.db import AnnotationDB
from focuscrawl.cli import main
from focuscrawl.corpus import CorpusEntry
from tests.support.net import free_port
from tests.support.runfixture import make_run_dir
from tests.support import warmfork


def test_add_user_and_users(tmp_path, monkeypatch, capsys):
    db = str(tmp_path / "a.sqlite3")
    monkeypatch.setattr(sys, "stdin", io.StringIO("a-long-password\n"))
    assert main(["annotate", "add-user", "anna", "--admin", "--password-stdin", "--db", db]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("short\n"))
    assert main(["annotate", "add-user", "bert", "--password-stdin", "--db", db]) == 2
    assert "at least 8" in capsys.readouterr().err
    assert main(["annotate", "users", "--db", db]) == 0
    assert capsys.readouterr().out == "anna\tadmin\t0\n"
    assert AnnotationDB(db).authenticate("anna", "a-long-password") is not None


def test_clear_errors_for_bad_database_and_busy_port(tmp_path, capsys):
    assert main(["annotate", "users", "--db", str(tmp_path / "no" / "such" / "dir.sqlite3")]) == 2
    assert "cannot open the annotation database" in capsys.readouterr().err
    run_dir = make_run_dir(tmp_path / "run", [{"url": "http://a.org/1.jpg", "score": 5}])
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["annotate", "serve", str(run_dir), "--db", str(tmp_path / "d.sqlite3"),
                     "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_serve_command_runs_and_stops(tmp_path):
    run_dir = make_run_dir(tmp_path / "run", [{"url": f"http://a.org/{i}.jpg", "score": 5 + i} for i in range(3)]
                           + [{"url": "http://a.org/x.jpg", "score": 9, "image": False}])
    db, port = tmp_path / "s.sqlite3", free_port()
    proc = warmfork.popen([sys.executable, "-m", "focuscrawl.cli", "annotate", "serve", str(run_dir),
                           "--db", str(db), "--port", str(port), "--per-image", "2", "--top", "2",
                           "--labels", "Dog,Pet,Animal,Living being,Other"],
                          stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("server did not start")
        assert "Log in" in page
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "2 new images loaded" in err and "no accounts yet" in err
    store = AnnotationDB(db)
    assert store.count_items() == 2 and store.per_image == 2 and store.image_labels[0] == "Dog"


def test_stats_tables_and_tsv(tmp_path, capsys):
    db = AnnotationDB(tmp_path / "st.sqlite3", per_image=3)
    db.add_items([CorpusEntry(f"http://a.org/{i}.jpg", "http://a.org/", f"alt\t{i}", "", 3.0, "", "",
                              f"images/{i}.png", i) for i in range(3)])
    users = [db.add_user(n, "password1") for n in ("x", "y", "z")]
    labels = {  # item -> [(image, text) for x, y, z]
        1: [(0, 0), (0, 0), (0, 0)],
        2: [(0, 1), (0, 1), (1, 0)],
        3: [(4, 2), (2, 2), (3, 3)],
    }
    for item, answers in labels.items():
        for user, (image, text) in zip(users, answers):
            assert db.next_item(user).id == item
            db.answer(user, item, image, text)
    out = tmp_path / "items.tsv"
    assert main(["annotate", "stats", "--db", db.path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["complete_images"] == 3 and report["answers"] == 9
    assert report["image_table"]["unanimous"] == [1, 0, 0, 0, 0]
    assert report["image_table"]["majority"] == [2, 0, 0, 0, 0] and report["image_table"]["no_majority"] == 1
    assert report["topic_share"] == {"unanimous": pytest.approx(1 / 3), "majority": pytest.approx(2 / 3)}
    assert report["corpus_candidates"] == {"describes": {"unanimous": 1, "majority": 1},
                                           "fits": {"unanimous": 0, "majority": 1}}
    assert report["kappa"]["image"]["pairs"] == 3 and report["kappa"]["image"]["annotators"] == 3
    # x [0,0,4], y [0,0,2], z [0,1,3]: kappa xy = (2/3-4/9)/(5/9) = 0.4, xz = yz = (1/3-2/9)/(7/9) = 1/7
    assert report["kappa"]["image"]["mean"] == pytest.approx((0.4 + 2 / 7) / 3)
    assert main(["annotate", "stats", "--db", db.path, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Cohen's kappa (Table 5.4)" in text and "share of Cat images (Table 5.3)\tunanimous\tmajority" in text
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0][:4] == ["rank", "image_url", "page_url", "alt"]
    assert rows[1][3] == "alt 0" and rows[1][6:8] == ["Cat", "1"]
    assert rows[3][6] == "" and rows[3][5] == "Other,Animal,Living being"
    assert main(["annotate", "stats", "--db", str(tmp_path / "none.sqlite3")]) == 2


def test_serve_loads_the_ranking_without_near_duplicates_as_rank(tmp_path):
    """Annotators saw the same caption twice: the app loads what `rank` exports, duplicates collapsed."""
    from focuscrawl.annotate.cli import load_ranked_images
    from focuscrawl.cli import build_parser

    caption = "A cat eating a bird it has caught."
    run_dir = make_run_dir(tmp_path / "run", [{"url": "http://a.org/1.jpg", "score": 5, "alt": caption},
                                              {"url": "http://b.org/2.jpg", "score": 6, "alt": caption},
                                              {"url": "http://c.org/3.jpg", "score": 7, "alt": "two dogs on a beach"}])

    def load(name: str, *options: str) -> set[str]:
        db = AnnotationDB(tmp_path / name)
        args = build_parser().parse_args(["annotate", "serve", str(run_dir), "--db", str(db.path), "--scoring",
                                          "thesis", *options])
        load_ranked_images(db, args)
        return {i.image_url for i in db.items_by_id().values()}

    assert load("a.sqlite3") == {"http://a.org/1.jpg", "http://c.org/3.jpg"}
    assert load("b.sqlite3", "--keep-duplicates") == {"http://a.org/1.jpg", "http://b.org/2.jpg", "http://c.org/3.jpg"}


def test_the_image_categories_follow_the_runs_topic_bundle(tmp_path):
    """A dogs crawl asked annotators Cat/Pet/Animal/...: the first category is now the ranking
    bundle's topic; the cats bundle keeps the thesis's categories, and --labels wins."""
    from focuscrawl.annotate.cli import load_ranked_images
    from focuscrawl.cli import build_parser
    from focuscrawl.resources import default_topic_path
    from tests.support.toymodel import build_topic_bundle, write_topic_corpora

    dogs = build_topic_bundle(write_topic_corpora(tmp_path / "corpora"), tmp_path / "dogs")
    run_dir = make_run_dir(tmp_path / "run", [{"url": "http://a.org/1.jpg", "score": 5, "alt": "a dog on a beach"}])

    def labels(name: str, *options: str) -> list[str]:
        db = AnnotationDB(tmp_path / name)
        args = build_parser().parse_args(["annotate", "serve", str(run_dir), "--db", str(db.path), "--min", "0",
                                          *options])
        if args.labels:
            db.set_image_labels(args.labels.split(","))
        load_ranked_images(db, args)
        return db.image_labels

    assert labels("dogs.sqlite3", "--topic", str(dogs)) == ["Dogs", "Pet", "Animal", "Living being", "Other"]
    assert labels("cats.sqlite3", "--topic", str(default_topic_path()))[0] == "Cat"
    assert labels("mine.sqlite3", "--topic", str(dogs), "--labels", "Hound,Pet,Animal,Living being,Other")[0] == "Hound"
