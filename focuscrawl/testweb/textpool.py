"""The real text a test web is built from: image captions, Wikipedia leads, CLEANEVAL texts.

A ``TextPool`` is read either from the project's shared data folder (paths are
arguments) or from the compact bundle shipped in the package for ``focuscrawl demo``.
Captions stay grouped by the photo they describe, so a generated image keeps the
human captions of one real photo: whether it *shows the topic* is whether one of
its captions mentions the topic (COCO/Flickr annotators, not us, decided that).
"""
from __future__ import annotations

import gzip
import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from focuscrawl.lm.demo_corpus import topic_pattern

BUNDLE_NAME = "demo_textpool.json.gz"
_MARKUP = re.compile(r"^\s*<(?:p|h|l)>\s*", re.M)


@dataclass(frozen=True)
class Photo:
    """One real photo's captions (key = ``coco:<id>`` / ``flickr:<file>``)."""

    key: str
    captions: tuple[str, ...]


@dataclass
class TextPool:
    photos: list[Photo]
    leads: dict[str, str]  # Wikipedia title -> lead text
    documents: list[list[str]]  # CLEANEVAL gold texts as paragraph lists
    _by_topic: dict = field(default_factory=dict, repr=False)

    # -- loading -------------------------------------------------------------------
    @classmethod
    def from_data(cls, data: str | Path, max_documents: int | None = None) -> "TextPool":
        """Read ``captions/``, ``wiki/animal_leads.json`` and ``cleaneval/*/gold`` under ``data``."""
        data = Path(data)
        if not (data / "captions").is_dir():
            raise FileNotFoundError(f"{data}: no captions/ folder (expected the shared data folder)")
        groups: "OrderedDict[str, list[str]]" = OrderedDict()
        coco = json.loads((data / "captions" / "coco_captions_val2017.json").read_text())
        for ann in coco["annotations"]:
            groups.setdefault(f"coco:{ann['image_id']}", []).append(ann["caption"].strip())
        flickr = data / "captions" / "flickr8k.token.txt"
        if flickr.exists():
            with open(flickr, encoding="utf-8") as fh:
                for line in fh:
                    key, _, cap = line.rstrip("\n").partition("\t")
                    if cap:
                        groups.setdefault("flickr:" + key.split("#")[0], []).append(cap.strip(" ."))
        photos = [Photo(k, tuple(v)) for k, v in sorted(groups.items())]
        leads: dict[str, str] = {}
        for a in json.loads((data / "wiki" / "animal_leads.json").read_text())["animals"]:
            leads.setdefault(a["title"], a["content"])
        documents = []
        for gold_dir in sorted((data / "cleaneval").glob("*/gold")):
            for path in sorted(gold_dir.glob("*.txt")):
                paras = read_cleaneval_gold(path.read_text(encoding="utf-8", errors="replace"))
                if len(paras) >= 3:
                    documents.append(paras)
                if max_documents and len(documents) >= max_documents:
                    break
        return cls(photos, leads, documents)

    @classmethod
    def from_bundle(cls) -> "TextPool":
        """The small pool shipped in the package (``focuscrawl demo``)."""
        ref = resources.files("focuscrawl.testweb").joinpath(BUNDLE_NAME)
        return cls.from_json(json.loads(gzip.decompress(ref.read_bytes())))

    @classmethod
    def from_json(cls, obj: dict) -> "TextPool":
        return cls([Photo(p[0], tuple(p[1])) for p in obj["photos"]], obj["leads"], obj["documents"])

    def to_json(self) -> dict:
        return {"photos": [[p.key, list(p.captions)] for p in self.photos],
                "leads": self.leads, "documents": self.documents}

    # -- topic views -----------------------------------------------------------------
    def topic_photos(self, topic: str) -> list[Photo]:
        """Photos with at least one caption mentioning ``topic``."""
        if topic not in self._by_topic:
            pattern = topic_pattern(topic)
            self._by_topic[topic] = [p for p in self.photos if any(pattern.search(c) for c in p.captions)]
        return self._by_topic[topic]

    def other_photos(self, *topics: str) -> list[Photo]:
        excluded = {p.key for t in topics for p in self.topic_photos(t)}
        return [p for p in self.photos if p.key not in excluded]

    def lead(self, topic: str) -> str | None:
        return self.leads.get(topic.capitalize())

    def topic_documents(self, topic: str) -> list[list[str]]:
        pattern = topic_pattern(topic)
        return [d for d in self.documents if sum(bool(pattern.search(p)) for p in d) >= 2]

    def other_documents(self, *topics: str) -> list[list[str]]:
        patterns = [topic_pattern(t) for t in topics]
        return [d for d in self.documents if not any(pt.search(p) for pt in patterns for p in d)]

    def other_leads(self, *topics: str) -> list[str]:
        titles = {t.capitalize() for t in topics}
        return [text for title, text in sorted(self.leads.items()) if title not in titles]

    def subset(self, topics: tuple[str, ...], photos_per_topic: int, other_photos: int,
               documents: int, leads: int) -> "TextPool":
        """A small pool for the bundle: the first N of each kind (deterministic)."""
        chosen: dict[str, Photo] = {}
        for t in topics:
            for p in self.topic_photos(t)[:photos_per_topic]:
                chosen[p.key] = p
        for p in self.other_photos(*topics)[:other_photos]:
            chosen[p.key] = p
        keep_leads = {t.capitalize(): self.leads[t.capitalize()] for t in topics if t.capitalize() in self.leads}
        for title, text in sorted(self.leads.items())[:leads]:
            keep_leads.setdefault(title, text)
        docs = [d[:12] for d in (self.topic_documents(topics[0])[:documents // 4]
                                 + self.other_documents(*topics)[:documents])]
        return TextPool(sorted(chosen.values(), key=lambda p: p.key), keep_leads, docs)


def read_cleaneval_gold(text: str) -> list[str]:
    """Paragraphs of a CLEANEVAL gold text (``URL:`` line and ``<p>/<h>/<l>`` marks dropped)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("URL:"):
        lines = lines[1:]
    body = "\n".join(lines)
    paras = []
    for block in re.split(r"\n\s*(?=<(?:p|h|l)>)|\n\s*\n", body):
        block = " ".join(_MARKUP.sub("", block).split())
        if len(block.split()) >= 4:
            paras.append(block)
    return paras


def build_bundle(data: str | Path, out: str | Path, topic: str = "cat", neighbour: str = "dog") -> int:
    """Write the compact demo pool (gzip JSON); returns its size in bytes."""
    pool = TextPool.from_data(data).subset((topic, neighbour), photos_per_topic=180, other_photos=500,
                                           documents=40, leads=40)
    raw = gzip.compress(json.dumps(pool.to_json(), ensure_ascii=False, separators=(",", ":")).encode(), 9, mtime=0)
    Path(out).write_bytes(raw)
    return len(raw)
