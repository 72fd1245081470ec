"""Plots (matplotlib, Agg), an HTML page and ``summary.json`` for an ``eval run`` folder."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from focuscrawl.eval.ranking_ablation import ablation
from focuscrawl.topic.model import DEFAULT_SCORER
from focuscrawl.eval.crawl_metrics import (SCORE_RANGE, Run, Truth, crawl_statistics, focus_curve, harvest_curve,
                                           image_funnel, iter_sentences, judge_accuracy, ranked_images, ratio,
                                           score_cut_by_truth, top_n_shares)
from focuscrawl.eval.oracle import (ORACLE_FILE, UPPER_BOUND_METRICS, PageTruth, bound_fractions, harvest_of,
                                    upper_bound_fractions)

THESIS = {"top_n_on_topic": {"unfocused": 0.199, "document": 0.325, "keywords": 0.700},
          "ratio_keywords_unfocused": 3.5, "ratio_keywords_document": 2.1}
PRECISION_AT = (100, 250, 500, 1000, 2500, 5000)


def _run_folders(folder: Path) -> dict[str, Path]:
    runs = folder / "runs"
    base = runs if runs.is_dir() else folder
    found = {p.name: p for p in sorted(base.iterdir()) if (p / "pages.tsv").exists()}
    if not found:
        raise FileNotFoundError(f"{folder}: no run folders with pages.tsv (expected runs/<mode>/)")
    order = {"keywords": 0, "document": 1, "unfocused": 2, "learning": 3}
    return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], 9), kv[0])))


def _log10_prob(model: str | None, eval_meta: dict, folder: Path):
    from focuscrawl.lm.scorer import load_kenlm
    from focuscrawl.topic.model import default_model_path

    used = eval_meta.get("model")  # relative: inside the evaluation folder (a trained held-out model)
    lm = load_kenlm(model or (folder / used if used else None) or default_model_path())
    return lambda s: lm.score(s, bos=True, eos=True)


def build_report(folder: Path, top_n: int = 500, budget: int | None = None, model: str | None = None,
                 output: str | None = None, score_range: tuple[float, float] = SCORE_RANGE) -> dict:
    """``budget``: cut every run to its first N pages (default: the ``eval run --budget`` the runs
    were made with, recorded in summary.json)."""
    eval_meta = json.loads((folder / "eval.json").read_text()) if (folder / "eval.json").exists() else {}
    budget = budget or eval_meta.get("budget")
    out = Path(output) if output else folder / "report"
    out.mkdir(parents=True, exist_ok=True)
    truth = Truth.load(folder / "web")
    page_truth = PageTruth.load(folder / "web")
    bundle = folder / eval_meta["topic_bundle"] if eval_meta.get("topic_bundle") else None
    log10_prob = _log10_prob(model, eval_meta, folder)
    summary: dict = {"folder": str(folder), "top_n": top_n, "budget": budget, "ground_truth": truth is not None,
                     "score_range": list(score_range), "topic_bundle": str(bundle) if bundle else None,
                     "default_scoring": DEFAULT_SCORER if bundle else "thesis",
                     "web": eval_meta.get("web"), "thesis": THESIS, "runs": {}}
    curves: dict[str, dict] = {}
    bounds: dict[str, dict] = {}
    oracle_path = folder / "web" / ORACLE_FILE
    if page_truth is not None and oracle_path.exists():  # the same budget (or --budget's cut) for all
        oracle = json.loads(oracle_path.read_text())
        for policy, urls in oracle["pages"].items():
            h = harvest_of(urls[:budget] if budget else urls, page_truth)
            curves.setdefault("_bounds", {})[policy] = h.pop("curves")
            bounds[policy] = h
        summary["oracle"] = bounds
        if oracle.get("upper_bound") and budget in (None, oracle["upper_bound"]["budget"]):
            summary["upper_bound"] = oracle["upper_bound"]  # no crawl order of this budget beats it
    for name, path in _run_folders(folder).items():
        run = Run.load(path, name, budget)
        entry: dict = {"statistics": crawl_statistics(run), "funnel": image_funnel(run, score_range)}
        focus = focus_curve(iter_sentences(run.sentences_path), log10_prob)
        entry["focus_curve"] = focus
        curves[name] = {"focus": focus}
        if truth is not None:
            harvest = harvest_curve(run, truth)
            curves[name].update(harvest)
            n = len(run.pages)
            entry["harvest"] = {"pages": n, "on_topic_pages": harvest["on_topic_pages"][-1] if n else 0,
                                "on_topic_images": harvest["on_topic_images"][-1] if n else 0,
                                "page_harvest_rate": harvest["on_topic_pages"][-1] / n if n else None}
            if page_truth is not None:  # the oracle's accounting: content images of the pages fetched
                same = harvest_of([p["url"] for p in run.pages], page_truth)
                curves[name]["truth_images"] = same.pop("curves")["on_topic_images"]
                entry["harvest"].update(images=same["images"], image_harvest=same["image_harvest"],
                                        page_harvest=same["page_harvest"],
                                        on_topic_content_images=same["on_topic_images"])
                if bounds:
                    entry["bounds"] = bound_fractions(same, bounds)
                if summary.get("upper_bound"):
                    entry["upper_bound"] = upper_bound_fractions(same, summary["upper_bound"])
            judge = judge_accuracy(run, truth)
            if judge is not None:
                entry["judge"] = judge
            entry["score_cut"] = score_cut_by_truth(run, truth, score_range)
            ranked = ranked_images(run, score_range, bundle, collapse=True)  # as `focuscrawl rank` by default
            entry["top_n"] = top_n_shares(ranked, truth, top_n)
            entry["top_n_by_n"] = {n: top_n_shares(ranked, truth, n)["on_topic"]
                                   for n in PRECISION_AT if n <= len(ranked)}
            step = max(1, len(ranked) // 100)
            curves[name]["precision"] = [(n, top_n_shares(ranked, truth, n)["on_topic"])
                                         for n in range(step, len(ranked) + 1, step)]
            entry["ranking_ablation"] = ablation(path, lambda url: truth.image(url)[0], bundle,
                                                 pages={p["url"] for p in run.pages})
        summary["runs"][name] = entry
    if truth is not None:
        share = {m: r["top_n"]["on_topic"] for m, r in summary["runs"].items()}
        summary["ratios"] = {"keywords_over_unfocused": ratio(share.get("keywords"), share.get("unfocused")),
                             "keywords_over_document": ratio(share.get("keywords"), share.get("document")),
                             "document_over_unfocused": ratio(share.get("document"), share.get("unfocused"))}
        k, d, u = (share.get(m) for m in ("keywords", "document", "unfocused"))
        summary["thesis_ordering_holds"] = (None if None in (k, d, u) else bool(k > d > u))
        ih = {m: r["harvest"].get("image_harvest") for m, r in summary["runs"].items()}
        summary["ratios"]["keywords_over_unfocused_image_harvest"] = ratio(ih.get("keywords"), ih.get("unfocused"))
    summary["files"] = _plots(curves, summary, out)  # names inside the report folder: it can move
    summary["files"]["html"] = "report.html"
    summary["files"]["summary"] = "summary.json"
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.html").write_text(_html(summary))
    return summary


#: how each mode is drawn: colour, marker and line style, so that no line hides another
MODE_STYLES = {"keywords": {"color": "tab:red", "marker": "o", "linestyle": "-"},
               "document": {"color": "tab:blue", "marker": "s", "linestyle": "-"},
               "unfocused": {"color": "tab:gray", "marker": "^", "linestyle": "-"},
               "learning": {"color": "tab:green", "marker": "D", "linestyle": "--"}}
#: the oracle policies (focuscrawl/eval/oracle.py) as the report names them: simulated greedy
#: crawls that use the ground truth, reference lines and not ceilings
REFERENCES = {"breadth_first": ("reference crawl: breadth-first (simulated)", ":"),
              "page_classifier": ("reference crawl: perfect page classifier (simulated)", "--"),
              "link_oracle": ("reference crawl: perfect link oracle (simulated)", "-.")}
REFERENCE_NOTE = ("Black lines: crawls simulated on the same web, seeds and budget with the ground truth; greedy "
                  "heuristics, not upper bounds (a mode can beat them).")
#: the report's figures: file -> (title in the HTML, what it shows)
FIGURES = {
    "harvest_pages.png": ("Page harvest", "On-topic pages (ground truth) against pages fetched, per mode, with the "
                                          "simulated reference crawls."),
    "harvest_images.png": ("Image harvest", "On-topic content images on the pages fetched (ground truth: every "
                                            "content image of the page, whether the crawl's filters kept it or "
                                            "not), against pages fetched."),
    "focus.png": ("Focus (thesis Fig. 5.1)", "Perplexity of the crawl's logged sentences under the topic language "
                                             "model, over growing prefixes of the log: lower = more on topic."),
    "top_n.png": ("Top-N ranked images", "Share of each mode's top-N ranked images that show the topic, and that "
                                         "also have an ALT text describing them."),
    "precision_at_n.png": ("On-topic share of the top N", "Share of the first N ranked images that show the topic, "
                                                          "for every N."),
}


def _mode_style(mode: str, n_points: int) -> dict:
    style = dict(MODE_STYLES.get(mode, {"marker": "x", "linestyle": "-"}))
    return style | {"markevery": max(1, n_points // 8), "markersize": 5, "linewidth": 1.8, "zorder": 3}


def _legend_outside(ax) -> None:
    """The legend beside the axes (it covers no line); an empty plot says so instead."""
    if not ax.get_legend_handles_labels()[0]:
        ax.text(0.5, 0.5, "no data: no mode has anything to plot here", ha="center", va="center",
                transform=ax.transAxes)
        return
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize="small")


def _ranking_name(summary: dict) -> str:
    name = summary["default_scoring"]
    return "SPEC's thesis ranking" if name == "thesis" else f"{name} P(on topic)"


def _plots(curves: dict[str, dict], summary: dict, out: Path) -> dict[str, str]:
    """Every figure stands on its own: title, axis labels, a legend naming every line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files: dict[str, str] = {}

    def save(fig, name: str, note: str | None = None) -> None:
        if note:
            fig.text(0.01, 0.01, textwrap.fill(note, 120), fontsize="small", va="bottom")
            fig.tight_layout(rect=(0, 0.08, 1, 1))
        else:
            fig.tight_layout()
        fig.savefig(out / name, dpi=100, bbox_inches="tight")
        plt.close(fig)
        files[name.rsplit(".", 1)[0]] = name

    bound_curves = curves.pop("_bounds", {})
    harvest_plots = (
        ("on_topic_pages", "Page harvest: on-topic pages among the pages fetched", "on-topic pages (ground truth)"),
        ("on_topic_images", "Image harvest: on-topic content images on the pages fetched",
         "on-topic content images (ground truth)" if bound_curves else "on-topic images logged (images.tsv)"))
    for key, title, ylabel in harvest_plots:
        if not any(key in c for c in curves.values()):
            continue
        fig, ax = plt.subplots(figsize=(9, 4.8))
        for policy, c in bound_curves.items():  # thin broken lines on top: a mode's line shows through the gaps
            name, style = REFERENCES[policy]
            ys = c[key]
            ax.plot(range(1, len(ys) + 1), ys, label=name, color="black", linestyle=style, linewidth=1.1, zorder=4)
        for mode, c in curves.items():  # images: the truth's content images of the pages (as the references)
            ys = c.get("truth_images" if key == "on_topic_images" and bound_curves else key, [])
            ax.plot(range(1, len(ys) + 1), ys, label=f"mode: {mode}", **_mode_style(mode, len(ys)))
        ax.set_xlabel("pages fetched (crawl order)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        _legend_outside(ax)
        save(fig, f"harvest_{key.split('_')[-1]}.png", REFERENCE_NOTE if bound_curves else None)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    for mode, c in curves.items():
        if c["focus"]:
            xs, ys = zip(*c["focus"])
            ax.plot(xs, ys, label=f"mode: {mode}", **(_mode_style(mode, len(xs)) | {"markevery": 1}))
    ax.set_xscale("log")
    ax.set_xlabel("sentences logged so far, in crawl order (log scale)")
    ax.set_ylabel("perplexity under the topic LM\n(lower = more on topic)")
    ax.set_title("Focus: perplexity of the crawl's sentences (thesis Fig. 5.1)")
    ax.grid(alpha=0.3)
    _legend_outside(ax)
    save(fig, "focus.png", "Each point: the perplexity of the first N sentences of the mode's sentences.txt.gz "
                           "under the topic language model the crawl used.")
    if summary["ground_truth"]:
        modes = list(summary["runs"])
        ranking = _ranking_name(summary)
        fig, ax = plt.subplots(figsize=(9, 4.8))
        xs = range(len(modes))
        on = [summary["runs"][m]["top_n"]["on_topic"] or 0 for m in modes]
        alt = [summary["runs"][m]["top_n"]["on_topic_and_alt_describes"] or 0 for m in modes]
        bars = ax.bar([x - 0.2 for x in xs], on, 0.4, label="shows the topic", color="tab:olive")
        ax.bar_label(bars, fmt="%.2f", fontsize="small")
        bars = ax.bar([x + 0.2 for x in xs], alt, 0.4, label="shows the topic and its ALT text describes it",
                      color="tab:purple")
        ax.bar_label(bars, fmt="%.2f", fontsize="small")
        ax.set_xticks(list(xs), [f"{m}\nN = {summary['runs'][m]['top_n']['n']}" for m in modes])
        ax.set_ylim(0, 1.1)
        ax.set_xlabel("crawl mode (N = its images judged)")
        ax.set_ylabel("share of the mode's top N images")
        ax.set_title(f"Top-N ranked images per mode (ranking: {ranking})")
        _legend_outside(ax)
        save(fig, "top_n.png", f"N = the {summary['top_n']} best-ranked images of each mode, or all it kept when "
                               f"fewer (N under each mode); near-duplicates collapsed, as `focuscrawl rank` does.")
        fig, ax = plt.subplots(figsize=(9, 4.8))
        for mode, c in curves.items():
            if c.get("precision"):
                xs, ys = zip(*c["precision"])
                ax.plot(xs, ys, label=f"mode: {mode}", **_mode_style(mode, len(xs)))
        ax.set_xlabel("N (ranked images, best first)")
        ax.set_ylabel("share of the top N showing the topic")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"On-topic share of the top N ranked images (ranking: {ranking})")
        ax.grid(alpha=0.3)
        _legend_outside(ax)
        save(fig, "precision_at_n.png", "Each line ends at the number of images the mode's ranking kept.")
    return files


def _fmt(v) -> str:
    """A table cell: numbers with 3 decimals or thousands separators, None as a dash."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _table(title: str, header: list[str], rows: list[list], note: str = "") -> dict:
    return {"title": title, "header": header, "rows": [[_fmt(c) for c in r] for r in rows], "note": note}


def _render(template: str, **context) -> str:
    """The report's HTML from its Jinja2 template (``focuscrawl/eval/templates``), autoescaped."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("focuscrawl.eval", "templates"), autoescape=select_autoescape())
    return env.get_template(template).render(**context)


def _html(summary: dict) -> str:
    runs = summary["runs"]
    modes = ", ".join(runs)
    tables = []
    stats_cols = [("sentences", "sentences"), ("tokens", "tokens"), ("hosts", "hosts"), ("uris", "URIs fetched"),
                  ("volume_bytes", "volume (bytes)"), ("uris_per_s", "URIs/s"), ("kb_per_s", "KB/s")]
    tables.append(_table("Crawl statistics (thesis Table 5.1)", ["mode"] + [label for _, label in stats_cols],
                         [[m] + [r["statistics"][c] for c, _ in stats_cols] for m, r in runs.items()]))
    lo, hi = summary["score_range"]
    tables.append(_table("Image funnel, all images on or off topic (thesis Table 5.2)", [
        "mode", "sightings passing the HTML rules", "in the corpus's language (FOCUSCRAWL_LANGUAGES)",
        "with a kept format (jpg, jpeg, png, gif)",
        f"within SPEC's score cut [{lo:g}, {hi:g}]", "distinct image URLs"],
        [[m] + [r["funnel"].get(c) for c in ("initial", "language", "format", "score", "unique")]
         for m, r in runs.items()],
        "Counts every image the crawl logged, whatever its topic; the harvest table below counts on-topic images."))
    if summary["ground_truth"]:
        tables.append(_table(f"Top-N ranked images (ranking: {_ranking_name(summary)})", [
            "mode", "N (images judged)", "show the topic", "ALT describes the image", "both", "thesis: show the topic"],
            [[m, r["top_n"]["n"], r["top_n"]["on_topic"], r["top_n"]["alt_describes"],
              r["top_n"]["on_topic_and_alt_describes"], THESIS["top_n_on_topic"].get(m)] for m, r in runs.items()],
            f"N = the {summary['top_n']} best-ranked images of each mode, or all it kept when fewer; near-duplicates "
            f"collapsed, as `focuscrawl rank` does by default."))
        tables.append(_table("Harvest (ground truth)", [
            "mode", "pages", "on-topic pages", "page harvest", "on-topic content images on the pages fetched",
            "image harvest", "on-topic images logged by the crawl (images.tsv)"],
            [[m, r["harvest"]["pages"], r["harvest"]["on_topic_pages"], r["harvest"]["page_harvest_rate"],
              r["harvest"].get("on_topic_content_images"), r["harvest"].get("image_harvest"),
              r["harvest"]["on_topic_images"]] for m, r in runs.items()],
            "Content images on the pages fetched: every content image of those pages in the ground truth (as the "
            "image harvest plot and the reference crawls count them); logged: those the crawl's image rules kept "
            "and wrote to images.tsv."))
        if summary.get("oracle"):
            policies = list(summary["oracle"])
            rows = [[REFERENCES[p][0], b["page_harvest"], b["image_harvest"]] + [None] * len(policies)
                    for p, b in summary["oracle"].items()]
            rows += [[f"mode: {m}", r["harvest"].get("page_harvest"), r["harvest"].get("image_harvest")]
                     + [r["bounds"][p]["image_harvest"] for p in policies] for m, r in runs.items() if "bounds" in r]
            tables.append(_table("Harvest against the simulated reference crawls (same web, seeds and budget)",
                                 ["crawl", "page harvest", "image harvest"]
                                 + [f"image harvest / {REFERENCES[p][0].split(': ')[1]}" for p in policies], rows,
                                 REFERENCE_NOTE.replace("Black lines", "Reference crawls")))
        judged = {m: r["judge"] for m, r in runs.items() if r.get("judge")}
        if judged:
            tables.append(_table("Page judge (mode learning) against the ground truth", [
                "mode", "pages judged", "called on topic", "truly on topic", "precision", "recall"],
                [[m, j["judged"], j["judged_on_topic_share"], j["on_topic_share"], j["precision"], j["recall"]]
                 for m, j in judged.items()],
                "The labels the link learner learnt from (judged.tsv): a near-duplicate page counts as off topic."))
        tables.append(_table(f"SPEC's score cut [{lo:g}, {hi:g}] by ground truth (distinct images)", [
            "mode", "on topic", "below the cut", "above the cut", "kept", "off topic", "below the cut",
            "above the cut", "kept"],
            [[m] + [r["score_cut"][k][c] for k in ("on_topic", "off_topic") for c in ("images", "below", "above", "kept")]
             for m, r in runs.items()]))
        for m, r in runs.items():
            rows = r.get("ranking_ablation") or {}
            tables.append(_table(f"Rankings compared, {m} mode (default: {summary['default_scoring']})", [
                "ranking", "average precision", "on-topic kept by the cut", "kept", "top-N on topic (N = on topic found)",
                "P@100", "P@500"],
                [[name + (" (default)" if name == summary["default_scoring"] else ""), x["average_precision"],
                  x["kept_on_topic_share"], x["kept"], x["top_n_share"], x["p@100"], x["p@500"]]
                 for name, x in rows.items()]))
    figures = [{"file": path, "title": FIGURES.get(path, (key, ""))[0], "caption": FIGURES.get(path, ("", ""))[1]}
               for key, path in summary["files"].items() if path.endswith(".png")]
    return _render("report.html", title=f"focuscrawl evaluation: {modes}", summary=summary, tables=tables,
                   figures=figures, ratios=summary.get("ratios"), fmt=_fmt)


def judge_line(judge: dict) -> str:
    """The page judge's calls against the truth in one line (``eval run``, ``eval report``)."""
    return (f"page judge: {_fmt(judge['judged_on_topic_share'])} of {judge['judged']:,} pages called on topic, "
            f"{_fmt(judge['on_topic_share'])} truly; precision {_fmt(judge['precision'])}, "
            f"recall {_fmt(judge['recall'])}")


def report_text(summary: dict, report: Path) -> str:
    """The report in a few lines for a person (``eval report`` without ``--json``)."""
    lines = [f"report: {report / 'report.html'} (plots and summary.json beside it)"]
    if "across_seeds" in summary:
        agg = summary["across_seeds"]
        lines.append(f"web seeds: {', '.join(agg['seeds'])}; image harvest, mean ± sd:")
        for mode, e in agg["modes"].items():
            h = e["image_harvest"]
            ref = e["bounds"].get("page_classifier", {}).get("image_harvest", {})
            lines.append(f"  {mode:<10} {_fmt(h['mean'])} ± {_fmt(h['sd'])}" + (
                f"  ({_fmt(ref['mean'])} of the perfect-page-classifier reference crawl's)" if ref.get("mean") else ""))
        return "\n".join(lines)
    runs = summary["runs"]
    lines.append(f"{len(runs)} modes, {_fmt(summary['budget'])} pages each; images ranked by {_ranking_name(summary)}")
    for mode, r in runs.items():
        h = r.get("harvest")
        if h is None:
            lines.append(f"  {mode:<10} {r['statistics']['pages']:,} pages, {r['funnel']['unique']:,} images within "
                         f"SPEC's cut")
            continue
        top = r["top_n"]
        lines.append(f"  {mode:<10} on-topic pages {h['on_topic_pages']:,}/{h['pages']:,} ({_fmt(h['page_harvest_rate'])})"
                     + (f", image harvest {_fmt(h['image_harvest'])}" if h.get("image_harvest") is not None else "")
                     + f", top {top['n']:,} images {_fmt(top['on_topic'])} on topic")
        if r.get("judge"):
            lines.append(f"  {'':<10} {judge_line(r['judge'])}")
    ratios = summary.get("ratios") or {}
    if ratios.get("keywords_over_unfocused") is not None:
        lines.append(f"keywords / unfocused (top-N on topic) = {_fmt(ratios['keywords_over_unfocused'])} (thesis 3.5); "
                     f"thesis ordering keywords > document > unfocused holds: {_fmt(summary.get('thesis_ordering_holds'))}")
    return "\n".join(lines)


# -- several web seeds: mean and spread ---------------------------------------------------
SEED_PREFIX = "seed-"


def seed_folders(folder: Path) -> list[Path]:
    """``folder/seed-<n>/`` evaluation folders (``eval run --seed 1 2 3``), by seed."""
    found = [p for p in folder.glob(f"{SEED_PREFIX}*") if (p / "eval.json").exists()]
    return sorted(found, key=lambda p: int(p.name[len(SEED_PREFIX):]) if p.name[len(SEED_PREFIX):].isdigit() else 0)


def _spread(values: list[float | None]) -> dict:
    import statistics

    vals = [v for v in values if v is not None]
    if not vals:
        return {"values": values, "mean": None, "sd": None, "min": None, "max": None}
    return {"values": values, "mean": statistics.fmean(vals), "sd": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "min": min(vals), "max": max(vals)}


def aggregate_seeds(summaries: dict[str, dict]) -> dict:
    """Mean and spread over web seeds of every mode's harvests and fractions of each bound."""
    modes = [m for m in next(iter(summaries.values()))["runs"]]
    out: dict = {"seeds": list(summaries), "modes": {}, "oracle": {}}
    policies = sorted({p for s in summaries.values() for p in s.get("oracle", {})})
    for policy in policies:
        out["oracle"][policy] = {k: _spread([s["oracle"][policy][k] for s in summaries.values()])
                                 for k in ("image_harvest", "page_harvest")}
    if any(s.get("upper_bound") for s in summaries.values()):
        out["upper_bound"] = {k: _spread([s.get("upper_bound", {}).get(k) for s in summaries.values()])
                              for k in UPPER_BOUND_METRICS + ("page_harvest",)}
    for mode in modes:
        runs = [s["runs"].get(mode, {}) for s in summaries.values()]
        entry = {k: _spread([r.get("harvest", {}).get(k) for r in runs]) for k in ("image_harvest", "page_harvest")}
        entry["bounds"] = {p: {k: _spread([r.get("bounds", {}).get(p, {}).get(k) for r in runs])
                               for k in ("image_harvest", "page_harvest")} for p in policies}
        entry["top_n_on_topic"] = _spread([r.get("top_n", {}).get("on_topic") for r in runs])
        if any(r.get("judge") for r in runs):
            entry["judge"] = {k: _spread([(r.get("judge") or {}).get(k) for r in runs])
                              for k in ("judged_on_topic_share", "on_topic_share", "precision", "recall")}
        if "upper_bound" in out:
            entry["upper_bound"] = {k: _spread([r.get("upper_bound", {}).get(k) for r in runs])
                                    for k in UPPER_BOUND_METRICS}
        out["modes"][mode] = entry
    out["keywords_over_unfocused_image_harvest"] = _spread(
        [s.get("ratios", {}).get("keywords_over_unfocused_image_harvest") for s in summaries.values()])
    return out


def build_seed_report(folder: Path, **kwargs) -> dict:
    """A report per ``seed-<n>`` folder, then ``folder/report/summary.json`` with mean and spread."""
    summaries = {}
    for sub in seed_folders(folder):
        summaries[sub.name] = build_report(sub, **kwargs)
    if not summaries:
        raise FileNotFoundError(f"{folder}: no {SEED_PREFIX}<n>/ evaluation folders")
    out = folder / "report"
    out.mkdir(parents=True, exist_ok=True)
    summary = {"folder": str(folder), "per_seed": {k: f"{k}/report/summary.json" for k in summaries},
               "across_seeds": aggregate_seeds(summaries)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "report.html").write_text(_seed_html(summary))
    return summary


def _seed_html(summary: dict) -> str:
    agg = summary["across_seeds"]
    policies = list(agg["oracle"])
    fmt = lambda d: "–" if d["mean"] is None else f"{d['mean']:.3f} ± {d['sd']:.3f} [{d['min']:.3f}, {d['max']:.3f}]"
    rows = [[REFERENCES[p][0], fmt(b["page_harvest"]), fmt(b["image_harvest"])] + [""] * len(policies)
            for p, b in agg["oracle"].items()]
    rows += [[f"mode: {m}", fmt(e["page_harvest"]), fmt(e["image_harvest"])]
             + [fmt(e["bounds"][p]["image_harvest"]) for p in policies] for m, e in agg["modes"].items()]
    table = _table(f"Harvest over web seeds {', '.join(agg['seeds'])} (mean ± sd [min, max])",
                   ["crawl", "page harvest", "image harvest"]
                   + [f"image harvest / {REFERENCES[p][0].split(': ')[1]}" for p in policies], rows,
                   REFERENCE_NOTE.replace("Black lines", "Reference crawls"))
    links = [{"href": f"../{k}/report/report.html", "text": k} for k in summary["per_seed"]]
    return _render("report.html", title=f"focuscrawl evaluation over {len(summary['per_seed'])} web seeds",
                   summary=None, tables=[table], figures=[], links=links, fmt=_fmt)
