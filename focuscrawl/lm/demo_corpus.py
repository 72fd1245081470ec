"""Builds the corpora behind the bundled cats demo model and keywords.

Sources (paths are arguments; a user of focuscrawl does not need them):
Wikipedia lead sections (``wiki/animal_leads.json``) and human image captions
(COCO 2017 val, Flickr8k). Positive = the topic's lead + captions mentioning the
topic; neutral = every other lead. Usage::

    python -m focuscrawl.lm.demo_corpus --data ../shared/data --topic cat -o corpus/
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from focuscrawl.text.normalize import document_sentences, text_sentences

TOPIC_WORDS = {"cat": ("cat", "cats", "kitten", "kittens", "kitty")}


def topic_pattern(topic: str) -> re.Pattern[str]:
    words = TOPIC_WORDS.get(topic, (topic, topic + "s"))
    return re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.I)


def topic_captions(data: Path, topic: str) -> list[str]:
    """Captions mentioning the topic, COCO then Flickr8k, in file order."""
    pattern = topic_pattern(topic)
    coco = json.loads((data / "captions" / "coco_captions_val2017.json").read_text())
    captions = [a["caption"].strip() for a in coco["annotations"] if pattern.search(a["caption"])]
    with open(data / "captions" / "flickr8k.token.txt", encoding="utf-8") as fh:
        for line in fh:
            _, _, cap = line.rstrip("\n").partition("\t")
            if pattern.search(cap):
                captions.append(cap.strip())
    return captions


def build(data: Path, topic: str, out: Path) -> dict[str, int]:
    leads = json.loads((data / "wiki" / "animal_leads.json").read_text())["animals"]
    title = topic.capitalize()
    positive_leads = [a for a in leads if a["title"] == title]
    if not positive_leads:
        raise ValueError(f"no Wikipedia lead titled {title!r} in the data")
    captions = topic_captions(data, topic)
    (out / "positive").mkdir(parents=True, exist_ok=True)
    (out / "neutral").mkdir(parents=True, exist_ok=True)
    (out / "positive" / "lead.txt").write_text(positive_leads[0]["content"] + "\n")
    (out / "positive" / "captions.txt").write_text("\n".join(captions) + "\n")
    seen = set()
    for a in leads:
        if a["title"] == title or a["title"] in seen:
            continue
        seen.add(a["title"])
        slug = re.sub(r"\W+", "_", a["title"]).strip("_")
        (out / "neutral" / f"{slug}.txt").write_text(a["content"] + "\n")
    # LM training sentences: lead sentences with the 5-token rule, captions whole.
    sentences = document_sentences(positive_leads[0]["content"])
    sentences += [s for cap in captions for s in text_sentences(cap)]
    (out / "lm_sentences.txt").write_text("\n".join(sentences) + "\n")
    return {"captions": len(captions), "neutral_docs": len(seen), "lm_sentences": len(sentences)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="folder with wiki/ and captions/")
    p.add_argument("--topic", default="cat")
    p.add_argument("-o", "--output", type=Path, required=True)
    args = p.parse_args(argv)
    print(json.dumps(build(args.data, args.topic, args.output)))


if __name__ == "__main__":
    main()
