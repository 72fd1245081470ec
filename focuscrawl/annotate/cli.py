"""``focuscrawl annotate serve|add-user|passwd|users|stats``."""
from __future__ import annotations

import argparse
import getpass
import json
import logging
import math
import os
import sys
from pathlib import Path

from focuscrawl import settings as defaults
from focuscrawl.annotate.db import DEFAULT_IMAGE_LABELS, TEXT_LABELS, AnnotationDB, AnnotationError
from focuscrawl.annotate import stats as st
from focuscrawl.ranking import add_ranking_arguments

logger = logging.getLogger(__name__)

DEFAULT_DB = os.environ.get("FOCUSCRAWL_ANNOTATION_DB") or defaults.FOCUSCRAWL_ANNOTATION_DB


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("annotate", help="annotation web app and its statistics")
    asub = p.add_subparsers(dest="annotate_command", metavar="SUBCOMMAND", required=True)

    def add(name: str, help_text: str, func) -> argparse.ArgumentParser:
        q = asub.add_parser(name, help=help_text)
        q.add_argument("--db", default=DEFAULT_DB,
                       help="SQLite database (default: $FOCUSCRAWL_ANNOTATION_DB or %(default)s)")
        q.set_defaults(func=func)
        return q

    q = add("serve", "rank RUN_DIR, load the top images and serve the annotation app", cmd_serve)
    q.add_argument("run_dir", metavar="RUN_DIR")
    q.add_argument("--per-image", type=int, default=defaults.FOCUSCRAWL_ANNOTATION_PER_IMAGE,
                   help="distinct annotators per image (default %(default)s)")
    q.add_argument("--top", type=int, default=defaults.FOCUSCRAWL_ANNOTATION_TOP,
                   help="images loaded from the top of the ranking (default %(default)s)")
    add_ranking_arguments(q)
    q.add_argument("--drop-generated-alt", action="store_true", help="leave out auto-generated ALT texts")
    q.add_argument("--labels", help="the 5 image categories, comma-separated (default: the run's topic bundle's "
                   "name, then " + ", ".join(DEFAULT_IMAGE_LABELS[1:]) + "; " + ", ".join(DEFAULT_IMAGE_LABELS)
                   + " for the cats bundle or without one)")
    q.add_argument("--host", default="127.0.0.1", help="bind address (default %(default)s)")
    q.add_argument("--port", type=int, default=8000, help="port (default %(default)s)")
    q.add_argument("--secure-cookies", action="store_true", help="mark cookies Secure (behind an HTTPS proxy)")

    q = add("add-user", "create an annotator (or admin) account", cmd_add_user)
    q.add_argument("name")
    q.add_argument("--admin", action="store_true", help="may use the admin page")
    q.add_argument("--password-stdin", action="store_true", help="read the password from standard input")

    q = add("passwd", "set a user's password (ends their sessions)", cmd_passwd)
    q.add_argument("name")
    q.add_argument("--password-stdin", action="store_true", help="read the password from standard input")

    add("users", "list accounts and their answer counts", cmd_users)

    q = add("stats", "category counts, majority/unanimous tables, Cohen's kappa", cmd_stats)
    q.add_argument("-o", "--output", help="write one TSV row per completely annotated image")
    q.add_argument("--json", action="store_true", help="print the tables as one JSON object")


def _password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise AnnotationError("the passwords differ")
    return first


def topic_image_labels(bundle: str | None) -> list[str]:
    """The 5 image categories for a run ranked with ``bundle``: the thesis's (the setting
    FOCUSCRAWL_ANNOTATION_IMAGE_LABELS, for cats) with the bundle's topic (its name) first."""
    from focuscrawl.resources import default_topic_path
    from focuscrawl.topic.model import read_manifest

    labels = list(DEFAULT_IMAGE_LABELS)
    if bundle is None or Path(bundle).resolve() == default_topic_path().resolve():
        return labels
    name = str(read_manifest(bundle).get("name") or Path(bundle).name).strip()
    return [name[:1].upper() + name[1:], *labels[1:]]


def load_ranked_images(db: AnnotationDB, args: argparse.Namespace) -> int:
    """Add the top of RUN_DIR's ranking (as ``focuscrawl rank`` ranks it: the crawl's topic
    bundle or ``--topic``, else SPEC's cut; near-duplicates collapsed unless ``--keep-duplicates``)
    to ``db``; returns how many images are new. A database without image categories (no
    ``--labels`` ever given) gets the ranking bundle's topic as the first (``topic_image_labels``)."""
    from focuscrawl.altfilter import is_generated_alt
    from focuscrawl.ranking import near_duplicate_collapser, rank_run, resolve_scoring

    filters = {"generated_alt": lambda e: is_generated_alt(e.alt)} if args.drop_generated_alt else None
    scoring, bundle = resolve_scoring(args.scoring, args.topic, args.run_dir)
    if db.get_meta("image_labels") is None:
        db.set_image_labels(topic_image_labels(bundle))
    collapse = None if args.keep_duplicates else near_duplicate_collapser(args.run_dir)
    ranked, _ = rank_run(args.run_dir, scoring, bundle, args.top, args.score_min, args.score_max, filters,
                         collapse=collapse)
    return db.add_items(e for e in ranked if e.image_file(args.run_dir) is not None)


def cmd_serve(args: argparse.Namespace) -> int:
    from focuscrawl.annotate.web import AnnotationServer, create_app

    db = AnnotationDB(args.db, per_image=args.per_image)
    if args.labels:
        db.set_image_labels(args.labels.split(","))
    added = load_ranked_images(db, args)
    if not db.users():
        print("annotate: no accounts yet; create one with `focuscrawl annotate add-user NAME --admin "
              f"--db {args.db}`", file=sys.stderr)
    try:
        server = AnnotationServer(create_app(db, args.run_dir, args.secure_cookies), args.host, args.port)
    except OSError as exc:
        raise AnnotationError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    print(f"annotate: {added} new images loaded ({db.count_items()} in total), {db.per_image} annotators "
          f"per image; serving http://{args.host}:{server.server_port}/ (Ctrl-C stops)", file=sys.stderr)
    server.serve_forever()
    return 0


def cmd_add_user(args: argparse.Namespace) -> int:
    db = AnnotationDB(args.db)
    user = db.add_user(args.name, _password(args), args.admin)
    print(f"added {'admin' if user.is_admin else 'annotator'} {user.name}", file=sys.stderr)
    return 0


def cmd_passwd(args: argparse.Namespace) -> int:
    AnnotationDB(args.db).set_password(args.name, _password(args))
    print(f"password of {args.name} changed", file=sys.stderr)
    return 0


def cmd_users(args: argparse.Namespace) -> int:
    for user in AnnotationDB(args.db).users():
        print(f"{user['name']}\t{'admin' if user['is_admin'] else 'annotator'}\t{user['answers']}")
    return 0


def annotation_report(db: AnnotationDB) -> dict:
    """Every table of the statistics as plain data (JSON-ready, kappa NaN as None)."""
    answers = db.all_answers()
    items = st.group_by_item(answers, db.per_image)
    image_labels = db.image_labels
    image_table = st.category_table([[r[1] for r in rows] for rows in items.values()], 5)
    text_table = st.category_table([[r[2] for r in rows] for rows in items.values()], 4)
    complete = len(items)
    share = {"unanimous": image_table["unanimous"][0] / complete if complete else None,
             "majority": image_table["majority"][0] / complete if complete else None}
    kappas = {name: {k: (None if isinstance(v, float) and math.isnan(v) else v)
                     for k, v in row.items() if k != "by_pair"}
              for name, row in st.kappa_table(answers).items()}
    return {"per_image": db.per_image, "answers": len(answers), "complete_images": complete,
            "image_labels": image_labels, "text_labels": list(TEXT_LABELS),
            "label_counts": st.label_counts(answers), "image_table": image_table, "text_table": text_table,
            "topic_share": share, "corpus_candidates": st.corpus_candidates(items), "kappa": kappas}


def format_report(report: dict) -> str:
    topic = report["image_labels"][0]
    fmt = lambda v: "n/a" if v is None else f"{v:.4f}"  # noqa: E731
    lines = [f"answers\t{report['answers']}", f"complete images ({report['per_image']} answers)\t"
             f"{report['complete_images']}", "", "category\tanswers"]
    for label, n in zip(report["image_labels"], report["label_counts"]["image"]):
        lines.append(f"image: {label}\t{n}")
    for label, n in zip(report["text_labels"], report["label_counts"]["text"]):
        lines.append(f"text: {label}\t{n}")
    for title, table, labels in (("image topic (Table A.1)", report["image_table"], report["image_labels"]),
                                 ("text (Table A.2)", report["text_table"], report["text_labels"])):
        lines += ["", f"{title}\tunanimous\tmajority only\tmajority"]
        for i, label in enumerate(labels):
            lines.append(f"{label}\t{table['unanimous'][i]}\t{table['majority_only'][i]}\t{table['majority'][i]}")
        lines += [f"no majority\t\t\t{table['no_majority']}", f"sum\t\t\t{table['total']}"]
    lines += ["", f"share of {topic} images (Table 5.3)\tunanimous\tmajority",
              f"{topic}\t{fmt(report['topic_share']['unanimous'])}\t{fmt(report['topic_share']['majority'])}"]
    cand = report["corpus_candidates"]
    lines += ["", f"corpus candidates (Table 5.5)\t{topic} & describes the image\t{topic} & fits the topic",
              f"unanimous\t{cand['describes']['unanimous']}\t{cand['fits']['unanimous']}",
              f"majority\t{cand['describes']['majority']}\t{cand['fits']['majority']}"]
    lines += ["", "Cohen's kappa (Table 5.4)\tmean\tpairs\tundefined pairs\tannotators"]
    for name, row in report["kappa"].items():
        lines.append(f"{name}\t{fmt(row['mean'])}\t{row['pairs']}\t{row['undefined_pairs']}\t{row['annotators']}")
    return "\n".join(lines)


def write_items_tsv(db: AnnotationDB, path: str) -> int:
    answers = db.all_answers()
    items = st.group_by_item(answers, db.per_image)
    by_id = db.items_by_id()
    image_labels, n = db.image_labels, 0
    columns = ["rank", "image_url", "page_url", "alt", "annotators", "image_answers", "image_majority",
               "image_unanimous", "text_answers", "text_majority", "text_unanimous"]
    clean = lambda s: " ".join(str(s).split())  # noqa: E731
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\t".join(columns) + "\n")
        for item_id in sorted(items, key=lambda i: by_id[i].rank):
            rows, item = items[item_id], by_id[item_id]
            image, text = st.agreement([r[1] for r in rows]), st.agreement([r[2] for r in rows])
            cells = [item.rank, item.image_url, item.page_url, clean(item.alt), ",".join(r[0] for r in rows),
                     ",".join(image_labels[r[1]] for r in rows),
                     image_labels[image.label] if image.majority else "", int(image.unanimous),
                     ",".join(TEXT_LABELS[r[2]] for r in rows),
                     TEXT_LABELS[text.label] if text.majority else "", int(text.unanimous)]
            fh.write("\t".join(clean(c) for c in cells) + "\n")
            n += 1
    return n


def cmd_stats(args: argparse.Namespace) -> int:
    if not os.path.isfile(args.db):
        raise FileNotFoundError(f"no annotation database {args.db}")
    db = AnnotationDB(args.db)
    report = annotation_report(db)
    print(json.dumps(report) if args.json else format_report(report))
    if args.output:
        n = write_items_tsv(db, args.output)
        print(f"wrote {n} images to {args.output}", file=sys.stderr)
    return 0
