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
    """A caption mentions the topic: one of its words, not the brand "Hello Kitty" (a phone case)."""
    words = TOPIC_WORDS.get(topic, (topic, topic + "s"))
    return re.compile(r"\b(?<!hello )(" + "|".join(map(re.escape, words)) + r")\b", re.I)


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


def write_corpus(out: Path, lead: str, captions: list[str], neutral_texts: list[str]) -> dict[str, int]:
    """The corpus layout of a topic model: ``positive/lead.txt``, ``positive/captions.txt``,
    ``neutral/<k>.txt`` (keywords) and ``lm_sentences.txt`` (the lead's sentences with the
    5-token rule and every caption whole, normalised: ``train-lm --normalized``)."""
    (out / "positive").mkdir(parents=True, exist_ok=True)
    (out / "neutral").mkdir(parents=True, exist_ok=True)
    (out / "positive" / "lead.txt").write_text(lead + "\n")
    (out / "positive" / "captions.txt").write_text("\n".join(captions) + "\n")
    for k, text in enumerate(neutral_texts):
        (out / "neutral" / f"lead_{k:03d}.txt").write_text(text + "\n")
    sentences = document_sentences(lead) + [s for cap in captions for s in text_sentences(cap)]
    (out / "lm_sentences.txt").write_text("\n".join(sentences) + "\n")
    return {"captions": len(captions), "neutral_docs": len(neutral_texts), "lm_sentences": len(sentences)}


def build(data: Path, topic: str, out: Path) -> dict[str, int]:
    """Positive = the topic's Wikipedia lead + every caption mentioning it; neutral = the other leads."""
    leads = json.loads((data / "wiki" / "animal_leads.json").read_text())["animals"]
    title = topic.capitalize()
    positive_leads = [a for a in leads if a["title"] == title]
    if not positive_leads:
        raise ValueError(f"no Wikipedia lead titled {title!r} in the data")
    neutral: dict[str, str] = {}
    for a in leads:
        if a["title"] != title:
            neutral.setdefault(a["title"], a["content"])
    return write_corpus(out, positive_leads[0]["content"], topic_captions(data, topic), list(neutral.values()))


def train_topic_model(corpus: Path, out: Path, name: str) -> tuple[Path, Path]:
    """``train-lm --normalized`` and ``keywords`` on a ``write_corpus`` folder: ``out/<name>.arpa``
    and ``out/<name>.keywords.txt``."""
    from focuscrawl.lm.keywords import learn_keywords, write_keywords
    from focuscrawl.lm.external import train_lm
    from focuscrawl.text.sources import corpus_tokens

    out.mkdir(parents=True, exist_ok=True)
    model, keywords = out / f"{name}.arpa", out / f"{name}.keywords.txt"
    train_lm([corpus / "lm_sentences.txt"], model, normalized=True)
    positive = corpus_tokens(sorted((corpus / "positive").iterdir()))
    neutral = corpus_tokens(sorted((corpus / "neutral").iterdir()))
    write_keywords(keywords, learn_keywords(positive, neutral))
    return model, keywords


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, required=True, help="folder with wiki/ and captions/")
    p.add_argument("--topic", default="cat")
    p.add_argument("-o", "--output", type=Path, required=True)
    args = p.parse_args(argv)
    print(json.dumps(build(args.data, args.topic, args.output)))


if __name__ == "__main__":
    main()
