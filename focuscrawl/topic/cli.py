"""``focuscrawl topic build|show``: make and inspect topic bundles."""
from __future__ import annotations

import argparse
import json

from focuscrawl.topic.build import BACKGROUND_ORDER, neutral_advice
from focuscrawl.topic.model import DEFAULT_SCORER, SCORERS, TopicModel, logit, sigmoid

SCORER_WORDS = {
    "wpp": "SPEC's weighted perplexity PP*(1-3kw), calibrated",
    "perplexity": "topic LM perplexity alone",
    "keywords": "perplexity with keywords in log space (no floor)",
    "xent": "cross-entropy difference topic vs background LM (Moore-Lewis)",
    "classifier": "hashed word n-gram logistic regression",
    "combined": "mean log-odds of xent and classifier",
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("topic", help="topic bundles: build one from corpora, show what is inside")
    tsub = parser.add_subparsers(dest="topic_command", metavar="TOPIC_COMMAND", required=True)
    p = tsub.add_parser("build", help="topic LM, background LM, keywords, classifier and calibration in one folder")
    p.add_argument("--positive", nargs="+", required=True, metavar="SRC",
                   help="text/HTML files or URLs about the topic")
    p.add_argument("--neutral", nargs="+", metavar="SRC",
                   help="general text not about the topic (default: the bundled general-English background, which "
                        "is also kept beside English neutral text unless --no-background)")
    p.add_argument("--no-background", action="store_true",
                   help="the neutral side is the --neutral text alone, without the bundled general-English background")
    p.add_argument("--order", type=int, default=5, help="n-gram order of the topic LM (default %(default)s)")
    p.add_argument("--background-order", type=int, default=BACKGROUND_ORDER,
                   help="n-gram order of the background LM (default %(default)s)")
    p.add_argument("--name", help="the bundle's name (default: the folder's name)")
    p.add_argument("--arpa", action="store_true",
                   help="LMs as gzipped ARPA even where KenLM's build_binary is installed (portable text)")
    p.add_argument("-o", "--output", required=True, metavar="DIR")
    p.set_defaults(func=cmd_build)
    p = tsub.add_parser("show", help="what a bundle holds and what its calibration says, in plain words")
    p.add_argument("folder", metavar="DIR")
    p.add_argument("--json", action="store_true", help="the manifest and calibration as JSON")
    p.set_defaults(func=cmd_show)


def cmd_build(args: argparse.Namespace) -> int:
    from focuscrawl.topic.build import build_bundle

    if args.order < 2 or args.background_order < 2:
        raise ValueError("--order and --background-order must be at least 2 (KenLM loads no unigram-only model)")
    build_bundle(args.positive, args.neutral, args.output, order=args.order,
                 background_order=args.background_order, name=args.name, binary=not args.arpa,
                 background=not args.no_background)
    return 0


def describe(model: TopicModel) -> str:
    """Plain-words description of a bundle (``topic show``)."""
    m, cal = model.manifest, model.calibration
    s = m.get("sentences", {})
    lines = [f"topic bundle {m.get('name')!r} in {model.folder}",
             f"  trained on {s.get('positive_train')} positive and {s.get('neutral_train')} neutral sentences; "
             f"calibrated on {s.get('positive_heldout')} + {s.get('neutral_heldout')} held-out ones",
             f"  positive: {', '.join(map(str, m.get('sources', {}).get('positive', []))) or '?'}",
             f"  neutral:  {m.get('sources', {}).get('neutral')}",
             f"  topic LM {m['topic_lm']} (order {m.get('order')}), background LM {m['background_lm']} "
             f"(order {m.get('background_order', m.get('order'))}), "
             f"{len(model.keywords.weights)} keywords: "
             + ", ".join(list(model.keywords.weights)[:10]),
             ""]
    if not cal:
        return "\n".join(lines + ["  no calibration.json: scores are raw, thresholds are defaults"])
    levels = cal.get("quantile_levels", [])
    mid = levels.index(0.5) if 0.5 in levels else len(levels) // 2
    lines.append("  how well each scorer tells held-out topic text from neutral text "
                 "(average precision; median P(on topic) of topic vs neutral ALT-like texts):")
    for name in SCORERS:
        entry = cal["scorers"].get(name)
        if not entry:
            continue
        ap = entry["average_precision"]
        q = entry["quantiles"]
        mark = "  <- default" if name == DEFAULT_SCORER else ""
        lines.append(f"    {name:<10} AP sentence {ap['sentence']:.3f}, ALT {ap['alt']:.3f}, anchor {ap['anchor']:.3f}; "
                     f"median P {sigmoid(q['positive']['alt'][mid]):.2f} vs {sigmoid(q['neutral']['alt'][mid]):.2f}"
                     f"  ({SCORER_WORDS[name]}){mark}")
    th = cal.get("thresholds", {}).get(DEFAULT_SCORER, {})
    if "cut" in th:
        lines += ["", f"  ranking cut ({DEFAULT_SCORER}): an image is kept when P(on topic) >= {th['cut']:.3f} "
                      f"(5% of held-out topic ALT texts score lower; never above 0.5)",
                  f"  crawl razor ({DEFAULT_SCORER}): links of a page with P(on topic) < {th['razor']:.2e} are dropped "
                  f"(99% of held-out neutral sentences score higher)"]
    lines += page_lines(model)
    advice = neutral_advice(m, cal)
    if advice:
        lines += [""] + [f"  note: {line}" for line in advice]
    return "\n".join(lines)


def page_lines(model: TopicModel) -> list[str]:
    """What the page calibration says: where the crawl's page judge cuts, and how pages of
    held-out topic, neutral and general-English text score against it (``topic show``)."""
    from focuscrawl import settings as defaults

    level = defaults.FOCUSCRAWL_LEARNING_PAGE_QUANTILE
    cut = model.page_quantile("positive", level, DEFAULT_SCORER)
    if cut is None:
        return ["", "  no page calibration (a bundle of an older focuscrawl): mode learning judges pages by the "
                    "sentence calibration alone; rebuild it with `focuscrawl topic build`"]
    cut = max(cut, logit(defaults.FOCUSCRAWL_LEARNING_ON_TOPIC_P))
    pages = model.calibration["pages"]
    lines = ["", f"  page judge ({DEFAULT_SCORER}, mode learning): a page is on topic from log-odds {cut:.2f} "
                 f"({1 - level:.0%} of held-out topic pages of {pages['sentences_per_page'][0]}-"
                 f"{pages['sentences_per_page'][1]} sentences, {pages['dilution']:.0%} of them general text, score higher)"]
    for side, words in (("neutral", "neutral pages"), ("general", "general-English pages")):
        share = model.page_share_above(side, cut, DEFAULT_SCORER)
        if share is not None:
            lines.append(f"    held-out {words} it calls on topic: {share:.0%}")
    return lines


def cmd_show(args: argparse.Namespace) -> int:
    model = TopicModel(args.folder)
    if args.json:
        print(json.dumps({"manifest": model.manifest, "calibration": model.calibration}, indent=1))
    else:
        print(describe(model))
    return 0
