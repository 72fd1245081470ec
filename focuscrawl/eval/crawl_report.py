"""Plots (matplotlib, Agg), an HTML page and ``summary.json`` for an ``eval run`` folder."""
from __future__ import annotations

import html
import json
from pathlib import Path

from focuscrawl.eval.ranking_ablation import ablation
from focuscrawl.topic.model import DEFAULT_SCORER
from focuscrawl.eval.crawl_metrics import (SCORE_RANGE, Run, Truth, crawl_statistics, focus_curve, harvest_curve,
                                           image_funnel, iter_sentences, ranked_images, ratio, score_cut_by_truth,
                                           top_n_shares)
from focuscrawl.eval.oracle import (ORACLE_FILE, UPPER_BOUND_METRICS, PageTruth, bound_fractions, harvest_of,
                                    upper_bound_fractions)

THESIS = {"top_n_on_topic": {"unfocused": 0.199, "document": 0.325, "keywords": 0.700},
          "ratio_keywords_unfocused": 3.5, "ratio_keywords_document": 2.1}
PRECISION_AT = (100, 250, 500, 1000, 2500, 5000)
COLOURS = {"keywords": "tab:red", "document": "tab:blue", "unfocused": "tab:gray", "learning": "tab:green"}
BOUND_STYLES = {"breadth_first": ("bound: breadth-first", ":"), "page_classifier": ("bound: perfect page classifier", "--"),
                "link_oracle": ("bound: perfect link oracle", "-.")}


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
    from focuscrawl.resources import default_model_path

    used = eval_meta.get("model")  # relative: inside the evaluation folder (a trained held-out model)
    lm = load_kenlm(model or (folder / used if used else None) or default_model_path())
    return lambda s: lm.score(s, bos=True, eos=True)


def build_report(folder: Path, top_n: int = 500, budget: int | None = None, model: str | None = None,
                 output: str | None = None, score_range: tuple[float, float] = SCORE_RANGE) -> dict:
    eval_meta = json.loads((folder / "eval.json").read_text()) if (folder / "eval.json").exists() else {}
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
                                        page_harvest=same["page_harvest"])
                if bounds:
                    entry["bounds"] = bound_fractions(same, bounds)
                if summary.get("upper_bound"):
                    entry["upper_bound"] = upper_bound_fractions(same, summary["upper_bound"])
            entry["score_cut"] = score_cut_by_truth(run, truth, score_range)
            ranked = ranked_images(run, score_range)
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


def _plots(curves: dict[str, dict], summary: dict, out: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files: dict[str, str] = {}

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        files[name.rsplit(".", 1)[0]] = name

    bound_curves = curves.pop("_bounds", {})
    for key, label in (("on_topic_pages", "on-topic pages"), ("on_topic_images", "on-topic images")):
        if not any(key in c for c in curves.values()):
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode, c in curves.items():  # images: the truth's content images of the pages (as the bounds)
            ys = c.get("truth_images" if key == "on_topic_images" and bound_curves else key, [])
            ax.plot(range(1, len(ys) + 1), ys, label=mode, color=COLOURS.get(mode))
        for policy, c in bound_curves.items():
            name, style = BOUND_STYLES[policy]
            ys = c[key]
            ax.plot(range(1, len(ys) + 1), ys, label=name, color="black", linestyle=style, linewidth=1)
        ax.set_xlabel("pages fetched")
        ax.set_ylabel(label)
        ax.set_title(f"Harvest: {label}")
        ax.legend()
        save(fig, f"harvest_{key.split('_')[-1]}.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, c in curves.items():
        if c["focus"]:
            xs, ys = zip(*c["focus"])
            ax.plot(xs, ys, marker="o", label=mode, color=COLOURS.get(mode))
    ax.set_xscale("log")
    ax.set_xlabel("sentences (prefix of the sentence log)")
    ax.set_ylabel("perplexity")
    ax.set_title("Focus (thesis Fig. 5.1)")
    ax.legend()
    save(fig, "focus.png")
    if summary["ground_truth"]:
        modes = list(summary["runs"])
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = range(len(modes))
        on = [summary["runs"][m]["top_n"]["on_topic"] or 0 for m in modes]
        alt = [summary["runs"][m]["top_n"]["on_topic_and_alt_describes"] or 0 for m in modes]
        ax.bar([x - 0.2 for x in xs], on, 0.4, label="shows the topic")
        ax.bar([x + 0.2 for x in xs], alt, 0.4, label="topic and ALT describes it")
        ax.set_xticks(list(xs), modes)
        ax.set_ylim(0, 1)
        ax.set_title(f"Top-{summary['top_n']} ranked images")
        ax.legend()
        save(fig, "top_n.png")
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode, c in curves.items():
            if c.get("precision"):
                xs, ys = zip(*c["precision"])
                ax.plot(xs, ys, label=mode, color=COLOURS.get(mode))
        ax.set_xlabel("top N ranked images")
        ax.set_ylabel("share showing the topic")
        ax.set_ylim(0, 1.02)
        ax.set_title("On-topic share of the top N")
        ax.legend()
        save(fig, "precision_at_n.png")
    return files


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else html.escape(str(v))


def _table(title: str, header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<h2>{html.escape(title)}</h2><table><tr>{head}</tr>{body}</table>"


def _html(summary: dict) -> str:
    runs = summary["runs"]
    parts = [f"<h1>focuscrawl: three-run comparison</h1><p>{html.escape(summary['folder'])}; "
             f"ground truth: {'yes' if summary['ground_truth'] else 'no (real web)'}</p>"]
    stats_cols = ["sentences", "tokens", "hosts", "uris", "volume_bytes", "uris_per_s", "kb_per_s"]
    parts.append(_table("Crawl statistics (thesis Table 5.1)", ["mode"] + stats_cols,
                        [[m] + [r["statistics"][c] for c in stats_cols] for m, r in runs.items()]))
    parts.append(_table("Image funnel (thesis Table 5.2)", ["mode", "initial", "format filter", "score cut", "unique"],
                        [[m] + [r["funnel"][c] for c in ("initial", "format", "score", "unique")]
                         for m, r in runs.items()]))
    if summary["ground_truth"]:
        parts.append(_table(f"Top-{summary['top_n']} ranked images", [
            "mode", "images", "on topic", "ALT describes", "on topic and ALT describes", "thesis on topic"],
            [[m, r["top_n"]["n"], r["top_n"]["on_topic"], r["top_n"]["alt_describes"],
              r["top_n"]["on_topic_and_alt_describes"], THESIS["top_n_on_topic"].get(m)] for m, r in runs.items()]))
        parts.append(_table("Harvest", ["mode", "pages", "on-topic pages", "page harvest rate", "on-topic images"],
                            [[m, r["harvest"]["pages"], r["harvest"]["on_topic_pages"],
                              r["harvest"]["page_harvest_rate"], r["harvest"]["on_topic_images"]]
                             for m, r in runs.items()]))
        if summary.get("oracle"):
            policies = list(summary["oracle"])
            rows = [[f"bound: {p}", b["page_harvest"], b["image_harvest"]] + [None] * len(policies)
                    for p, b in summary["oracle"].items()]
            rows += [[m, r["harvest"].get("page_harvest"), r["harvest"].get("image_harvest")]
                     + [r["bounds"][p]["image_harvest"] for p in policies] for m, r in runs.items() if "bounds" in r]
            parts.append(_table("Harvest against the oracle bounds (same graph, seeds and budget)",
                                ["crawl", "page harvest", "image harvest"]
                                + [f"image harvest / {p}" for p in policies], rows))
        lo, hi = summary["score_range"]
        parts.append(_table(f"Score cut [{lo:g}, {hi:g}] by ground truth (distinct images)", [
            "mode", "on topic", "below", "above", "kept", "off topic", "below", "above", "kept"],
            [[m] + [r["score_cut"][k][c] for k in ("on_topic", "off_topic") for c in ("images", "below", "above", "kept")]
             for m, r in runs.items()]))
        for m, r in runs.items():
            rows = r.get("ranking_ablation") or {}
            parts.append(_table(f"Ranking ablation, {m} run (default: {summary['default_scoring']})", [
                "ranking", "average precision", "on-topic kept by the cut", "kept", "top-N on topic (N = on topic found)",
                "P@100", "P@500"],
                [[name + (" (default)" if name == summary["default_scoring"] else ""), x["average_precision"],
                  x["kept_on_topic_share"], x["kept"], x["top_n_share"], x["p@100"], x["p@500"]]
                 for name, x in rows.items()]))
        ratios = summary["ratios"]
        parts.append(f"<p>keywords / unfocused = {_fmt(ratios['keywords_over_unfocused'])} (thesis 3.5); "
                     f"keywords / document = {_fmt(ratios['keywords_over_document'])} (thesis 2.1); "
                     f"ordering keywords &gt; document &gt; unfocused holds: "
                     f"{_fmt(summary['thesis_ordering_holds'])}</p>")
    for key, path in summary["files"].items():
        if path.endswith(".png"):
            parts.append(f'<h2>{html.escape(key)}</h2><img src="{html.escape(path)}" alt="{key} plot">')
    style = "body{font-family:sans-serif;max-width:60em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
    return f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>focuscrawl eval</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n"


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
    rows = [[f"bound: {p}", fmt(b["page_harvest"]), fmt(b["image_harvest"])] + [""] * len(policies)
            for p, b in agg["oracle"].items()]
    rows += [[m, fmt(e["page_harvest"]), fmt(e["image_harvest"])] + [fmt(e["bounds"][p]["image_harvest"]) for p in policies]
             for m, e in agg["modes"].items()]
    table = _table(f"Harvest over web seeds {', '.join(agg['seeds'])} (mean ± sd [min, max])",
                   ["crawl", "page harvest", "image harvest"] + [f"image harvest / {p}" for p in policies], rows)
    links = "".join(f'<li><a href="../{html.escape(k)}/report/report.html">{html.escape(k)}</a></li>'
                    for k in summary["per_seed"])
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>focuscrawl eval</title></head><body>"
            f"<h1>focuscrawl: {len(summary['per_seed'])} web seeds</h1>{table}<ul>{links}</ul></body></html>\n")
