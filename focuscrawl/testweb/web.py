"""A deterministic synthetic web of real text: hosts, pages, links, images and their truth.

``TestWeb(pool, topic, seed, config)`` is a compact description (a few hundred
``Host`` records); every page is rendered on request from ``(seed, host, path)`` with
its own random stream, so the same seed always gives the same web and nothing is
stored per page. What makes it useful for measuring a focused crawler:

* topical locality: sites about the topic link mostly to each other; a *neighbour*
  topic (dogs for cats) shares vocabulary; big off-topic regions link among themselves;
* portals and news sites mix topics and link out with descriptive anchors (the target's
  title), the case the thesis's anchor-text link score was made for;
* real-looking HTML: navigation, sidebars, footers, ads, logos, icons, figures with
  captions, images with and without ALT/size attributes, WordPress-style ALT texts;
* robots.txt, redirects, 404/500, slow pages, wrong charsets and crawler traps
  (archive calendars, session ids in URLs).

``truth()`` lists every page and content image with its labels; it is written beside
the web by ``focuscrawl testweb generate`` and never served.
"""
from __future__ import annotations

import dataclasses
import hashlib
import html
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator

from focuscrawl.lm.demo_corpus import topic_pattern
from focuscrawl.testweb.textpool import Photo, TextPool

PER_PAGE = 10
CONTENT_SIZES = [(640, 480), (800, 600), (1024, 768), (640, 427), (500, 375), (1200, 800), (480, 640), (900, 600)]
SECTIONS = ["world", "business", "science", "sports", "culture", "pets", "travel", "health"]
NEIGHBOURS = {"cat": "dog", "dog": "cat", "train": "bus", "tennis": "baseball", "baseball": "tennis"}
SITE_WORDS = ["happy", "green", "little", "daily", "urban", "sunny", "quiet", "north", "river", "open"]
SITE_NOUNS = ["home", "notes", "corner", "journal", "place", "life", "garden", "studio", "diary", "view"]


@dataclass(frozen=True)
class WebConfig:
    """How big the web is; ``scale`` multiplies every host count (tests use ~0.05)."""

    topic_hosts: int = 40
    neighbour_hosts: int = 20
    portal_hosts: int = 12
    other_hosts: int = 200
    trap_hosts: int = 4
    articles: tuple[int, int] = (20, 140)  # per blog-like host, uniform
    portal_articles: tuple[int, int] = (150, 400)
    scale: float = 1.0
    #: Keep the topic's photos with an odd key hash out of the web, so that a model can be
    #: trained on their captions without having seen the web's ALT texts (``heldout_photos``);
    #: the background reserve (``is_background_reserve``) stays out too.
    heldout: bool = False
    #: Name of the profile these numbers come from (``PROFILES``).
    profile: str = "standard"
    #: Share of on-topic articles on portals, neighbour hosts and other hosts.
    portal_topic_share: float = 0.08
    portal_neighbour_share: float = 0.08
    other_topic_share: float = 0.01
    #: Share of in-text and teaser anchors that say nothing ("read more", "click here").
    generic_anchor_share: float = 0.0
    #: Neighbour hosts named and styled like topic blogs (only the text tells them apart).
    neighbour_like_topic: bool = False
    #: Host kinds the seeds are taken from, in order (``seeds()``).
    seed_kinds: tuple[str, ...] = ("topic", "portal")
    #: Weights of the kinds an article's external link goes to, per linking host kind.
    link_weights: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = (
        ("topic", (("topic", 75), ("neighbour", 8), ("portal", 7), ("other", 10))),
        ("neighbour", (("neighbour", 50), ("topic", 20), ("portal", 10), ("other", 20))),
        ("portal", (("topic", 15), ("neighbour", 10), ("other", 75))),
        ("other", (("other", 85), ("portal", 10), ("neighbour", 3), ("topic", 2))),
    )

    def count(self, n: int) -> int:
        return max(1, round(n * self.scale))

    def external_weights(self, kind: str) -> dict[str, float]:
        return dict(dict(self.link_weights)[kind])


#: ``standard``: the topic is common (~14% of pages) and the seeds sit in its region.
#: ``hard`` (what users meet): ≤ 3% on topic, no on-topic seed (portals and
#: generic sites), a neighbour topic with near vocabulary written and named like the
#: topic's blogs and linked from portals more than the topic, a third of the anchors
#: generic, the topic's blogs reached mainly through portals (other sites and the
#: neighbour's blogs rarely link to them).
PROFILES: dict[str, WebConfig] = {
    "standard": WebConfig(),
    "hard": WebConfig(
        topic_hosts=6, neighbour_hosts=30, portal_hosts=12, other_hosts=200, profile="hard",
        portal_topic_share=0.03, portal_neighbour_share=0.10, other_topic_share=0.003,
        generic_anchor_share=1 / 3, neighbour_like_topic=True, seed_kinds=("portal", "other"),
        link_weights=(
            ("topic", (("topic", 70), ("neighbour", 12), ("portal", 8), ("other", 10))),
            ("neighbour", (("neighbour", 70), ("topic", 2), ("portal", 10), ("other", 18))),
            ("portal", (("topic", 6), ("neighbour", 14), ("other", 80))),
            ("other", (("other", 88), ("portal", 10), ("neighbour", 1.5), ("topic", 0.5))),
        )),
}
GENERIC_ANCHORS = ("read more", "click here", "more", "continue reading", "this post", "here", "link",
                   "see this", "full story")


def web_config(profile: str = "standard", **overrides) -> WebConfig:
    """The named profile's config with ``overrides`` (e.g. ``scale``, ``heldout``)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown test web profile {profile!r}; choose one of {', '.join(PROFILES)}")
    return dataclasses.replace(PROFILES[profile], **overrides)


@dataclass(frozen=True)
class Host:
    name: str
    kind: str  # topic | neighbour | portal | other | trap-calendar | trap-session
    site_name: str
    n_articles: int
    style: str  # wordpress | plain | news
    charset: str  # utf-8 | wrong (cp1252 bytes declared utf-8) | latin-1 (declared in <meta> only)
    robots: str  # standard | none | disallow-all | error
    categories: tuple[str, ...]
    friends: tuple[str, ...] = ()
    archive_trap: bool = False


@dataclass
class ImageRef:
    url: str  # absolute
    photo: Photo | None
    shows_topic: bool
    alt: str | None  # None: no alt attribute
    alt_describes: bool
    html_size: tuple[int, int] | None
    size: tuple[int, int]
    caption: str | None = None  # <figcaption>


@dataclass
class ArticleMeta:
    host: str
    index: int
    label: str  # the topic, the neighbour topic, "other"
    title: str
    url: str
    images: list[ImageRef] = field(default_factory=list)
    status: int = 200


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    delay: float = 0.0


def slugify(text: str, words: int = 6) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:words]) or "post"


def stable_int(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def is_heldout(photo: Photo) -> bool:
    """Half of the photos (by a stable hash of their key) reserved for training a model."""
    return stable_int("heldout", photo.key) % 2 == 1


def is_background_reserve(photo: Photo) -> bool:
    """One photo in 16 (stable hash of its key) whose captions may feed the general-English
    background corpus (``focuscrawl.topic.background``): a ``heldout`` web never shows them,
    so a background built from them has not seen the web's off-topic ALT texts either."""
    return stable_int("background", photo.key) % 16 == 0


def heldout_photos(pool: TextPool, topic: str) -> list[Photo]:
    """The topic's photos a ``heldout`` web never shows: their captions may train its model."""
    return [p for p in pool.topic_photos(topic) if is_heldout(p)]


def image_spec(host: str, path: str) -> tuple[int, int, str] | None:
    """(width, height, format) of the image at ``path``: a pure function of the URL, so the
    server needs no image registry; ``None`` if the path is not an image."""
    m = re.search(r"\.(jpe?g|png|gif|webp)$", path)
    if not m:
        return None
    fmt = {"jpg": "JPEG", "jpeg": "JPEG", "png": "PNG", "gif": "GIF", "webp": "WEBP"}[m.group(1)]
    if path.startswith("/static/logo"):
        return 240, 60, fmt
    if path.startswith("/static/icons/"):
        return 32, 32, fmt
    if path.startswith("/ads/banner"):
        return 728, 90, fmt
    if path.startswith("/ads/"):
        return 300, 250, fmt
    if path.startswith("/avatars/"):
        return 48, 48, fmt
    if path.startswith("/pixel"):
        return 1, 1, fmt
    w, h = CONTENT_SIZES[stable_int(host, path) % len(CONTENT_SIZES)]
    return w, h, fmt


class TestWeb:
    """The web for one ``(pool, topic, seed, config)``; pages and truth on demand."""

    __test__ = False  # not a pytest class

    def __init__(self, pool: TextPool, topic: str = "cat", seed: int = 1, config: WebConfig | None = None):
        self.pool, self.topic, self.seed = pool, topic, seed
        self.config = config or WebConfig()
        self.neighbour = NEIGHBOURS.get(topic, "dog" if topic != "dog" else "cat")
        self._pattern = topic_pattern(topic)
        self.topic_photos = [p for p in pool.topic_photos(topic) if not (self.config.heldout and is_heldout(p))]
        self.neighbour_photos = [p for p in pool.topic_photos(self.neighbour) if not self._shows(p)]
        self.other_photos = [p for p in pool.other_photos(topic, self.neighbour)
                             if not (self.config.heldout and is_background_reserve(p))]
        if len(self.topic_photos) < 5:
            raise ValueError(f"topic {topic!r}: only {len(self.topic_photos)} captioned photos mention it; "
                             "need at least 5")
        self.topic_docs = pool.topic_documents(topic)
        self.other_docs = pool.other_documents(topic, self.neighbour)
        self.topic_lead = pool.lead(topic) or ""
        self.neighbour_lead = pool.lead(self.neighbour) or ""
        self.other_leads = pool.other_leads(topic, self.neighbour)
        self.hosts: dict[str, Host] = {}
        self._build_hosts()
        self.by_kind: dict[str, list[str]] = {}
        for h in self.hosts.values():
            self.by_kind.setdefault(h.kind, []).append(h.name)
        self._meta = lru_cache(maxsize=200_000)(self._article_meta)

    # -- hosts ---------------------------------------------------------------------
    def _shows(self, photo: Photo) -> bool:
        return any(self._pattern.search(c) for c in photo.captions)

    def _build_hosts(self) -> None:
        cfg, rng, t = self.config, random.Random(f"testweb:{self.seed}:{self.topic}:hosts"), self.topic
        specs: list[tuple[str, str, str]] = []
        for i in range(cfg.count(cfg.topic_hosts)):
            if i % 2 == 0:
                name, site = f"{t}s-blog-{i}.test", f"{t.capitalize()}s Blog {i}"
            else:
                w, n = rng.choice(SITE_WORDS), rng.choice(SITE_NOUNS)
                name, site = f"{w}-{n}-{i}.test", f"{w.capitalize()} {n.capitalize()} {i}"
            specs.append((name, "topic", site))
        nb = self.neighbour
        for i in range(cfg.count(cfg.neighbour_hosts)):
            if not cfg.neighbour_like_topic:
                specs.append((f"{nb}s-world-{i}.test", "neighbour", f"{nb.capitalize()}s World {i}"))
                continue
            j = 100 + i  # named like the topic's blogs: the host name does not give it away
            w, n = rng.choice(SITE_WORDS), rng.choice(SITE_NOUNS)
            specs.append((f"{w}-{n}-{j}.test", "neighbour", f"{w.capitalize()} {n.capitalize()} {j}"))
        for i in range(cfg.count(cfg.portal_hosts)):
            kind = ["daily-news", "city-herald", "web-portal"][i % 3]
            specs.append((f"{kind}-{i}.test", "portal", kind.replace("-", " ").title() + f" {i}"))
        titles = [slugify(title, 2) for title in sorted(self.pool.leads)] or ["general"]
        for i in range(cfg.count(cfg.other_hosts)):
            stem = titles[i % len(titles)]
            suffix = ["site", "fans", "info", "online", "hub"][i % 5]
            specs.append((f"{stem}-{suffix}-{i}.test", "other", f"{stem.replace('-', ' ').title()} {suffix} {i}"))
        for i in range(max(2, cfg.count(cfg.trap_hosts))):  # one of each kind at least
            kind = "trap-calendar" if i % 2 == 0 else "trap-session"
            name = f"events-calendar-{i}.test" if kind == "trap-calendar" else f"shop-{i}.test"
            specs.append((name, kind, name.split(".")[0].replace("-", " ").title()))
        for name, kind, site in specs:
            lo, hi = cfg.portal_articles if kind == "portal" else cfg.articles
            n = max(3, round(rng.randint(lo, hi) * max(cfg.scale, 0.05) ** 0.5)) if cfg.scale < 1 else rng.randint(lo, hi)
            style = "news" if kind == "portal" else rng.choice(["wordpress", "wordpress", "plain"])
            charset = rng.choices(["utf-8", "wrong", "latin-1"], [0.9, 0.05, 0.05])[0]
            robots = rng.choices(["standard", "none", "disallow-all", "error"], [0.82, 0.12, 0.03, 0.03])[0]
            cats = tuple(SECTIONS) if kind == "portal" else tuple(f"topic-{k}" for k in range(rng.randint(2, 5)))
            self.hosts[name] = Host(name, kind, site, n if not kind.startswith("trap") else 0, style, charset,
                                    robots, cats, archive_trap=(style == "wordpress" and rng.random() < 0.3))
        # blogrolls: mostly hosts of the same kind (topical locality)
        names = {k: [name for name, kind, _ in specs if kind == k]
                 for k in ("topic", "neighbour", "portal", "other", "trap-calendar", "trap-session")}
        for name, host in list(self.hosts.items()):
            same = [h for h in names.get(host.kind, []) if h != name] or names["other"]
            friends = rng.sample(same, min(len(same), rng.randint(3, 6)))
            if rng.random() < 0.4 and names["portal"]:
                friends.append(rng.choice(names["portal"]))
            if rng.random() < 0.15:
                friends.append(rng.choice(names["trap-calendar"] + names["trap-session"]))
            self.hosts[name] = Host(**{**host.__dict__, "friends": tuple(friends)})

    # -- article metadata (label, title, images): cheap, cached, used by linkers ----------
    def article_label(self, host: Host, i: int) -> str:
        r = random.Random(f"{self.seed}|label|{host.name}|{i}").random()
        cfg = self.config
        if host.kind == "topic":
            return self.topic if r < 0.9 else "other"
        if host.kind == "neighbour":
            return self.neighbour if r < 0.9 else "other"
        if host.kind == "portal":
            return (self.topic if r < cfg.portal_topic_share else
                    self.neighbour if r < cfg.portal_topic_share + cfg.portal_neighbour_share else "other")
        return self.topic if r < cfg.other_topic_share else "other"

    def _article_meta(self, host_name: str, i: int) -> ArticleMeta:
        host = self.hosts[host_name]
        rng = random.Random(f"{self.seed}|meta|{host_name}|{i}")
        label = self.article_label(host, i)
        if label == self.topic:
            photos = [rng.choice(self.topic_photos) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.2:
                photos.append(rng.choice(self.other_photos))
            title = _title_from_caption(self._topic_caption(photos[0], rng))
        elif label == self.neighbour and self.neighbour_photos:
            photos = [rng.choice(self.neighbour_photos) for _ in range(rng.randint(1, 2))]
            title = _title_from_caption(rng.choice(photos[0].captions))
        else:
            photos = [rng.choice(self.other_photos) for _ in range(rng.choice([0, 1, 1, 2]))]
            if rng.random() < 0.03:
                photos.append(rng.choice(self.topic_photos))
            doc = self._other_doc(host_name, i)
            title = doc[0][:90] if doc and len(doc[0]) < 120 else _title_from_caption(
                rng.choice(photos[0].captions) if photos else "A note")
        url = f"http://{host_name}/post/{i}-{slugify(title)}.html"
        meta = ArticleMeta(host_name, i, label, title, url)
        if rng.random() < 0.01:
            meta.status = 500
        for k, photo in enumerate(photos):
            meta.images.append(self._image(host, i, k, photo, rng))
        return meta

    def article(self, host_name: str, i: int) -> ArticleMeta:
        return self._meta(host_name, i)

    def _topic_caption(self, photo: Photo, rng: random.Random) -> str:
        mentioning = [c for c in photo.captions if self._pattern.search(c)]
        return rng.choice(mentioning or list(photo.captions))

    def _other_doc(self, host_name: str, i: int) -> list[str]:
        if not self.other_docs:
            return []
        return self.other_docs[stable_int(self.seed, host_name, i) % len(self.other_docs)]

    def _image(self, host: Host, i: int, k: int, photo: Photo, rng: random.Random) -> ImageRef:
        shows = self._shows(photo)
        caption = self._topic_caption(photo, rng) if shows else rng.choice(photo.captions)
        ext = rng.choices(["jpg", "jpeg", "png", "gif", "webp"], [0.7, 0.08, 0.12, 0.05, 0.05])[0]
        n = 1000 + 4 * i + k  # unique per host: one URL, one photo, one ALT
        if host.style == "wordpress":
            y, m = 2010 + stable_int(host.name, i) % 8, 1 + i % 12
            stem = f"img_{n}" if rng.random() < 0.5 else f"{slugify(caption, 5)}-{n}"
            path = f"/wp-content/uploads/{y}/{m:02d}/{stem}.{ext}"
            r = rng.random()
            alt = (f"wp-content-uploads-{y}-{m:02d}-{stem}" if r < 0.35 else caption if r < 0.8
                   else "" if r < 0.9 else None)
        else:
            path = f"/images/{slugify(caption, 4)}-{n}.{ext}" if rng.random() < 0.6 else f"/media/{n}.{ext}"
            r = rng.random()
            alt = (caption if r < 0.65 else "Photo" if r < 0.75 else f"DSC_{n}.JPG" if r < 0.85 else None)
        w, h, _ = image_spec(host.name, path)
        r = rng.random()
        html_size = (w, h) if r < 0.7 else (w // 2, h // 2) if r < 0.8 else None
        fig = rng.choice(photo.captions) if rng.random() < 0.5 else None
        return ImageRef(f"http://{host.name}{path}", photo, shows, alt,
                        alt is not None and alt in photo.captions, html_size, (w, h), fig)

    # -- enumeration and truth -----------------------------------------------------------
    def articles(self) -> Iterator[ArticleMeta]:
        for host in self.hosts.values():
            for i in range(host.n_articles):
                yield self.article(host.name, i)

    def anchor(self, target: ArticleMeta, rng: random.Random) -> str:
        """The anchor text of a link to ``target``: its title, or (profile's share) a generic phrase."""
        if self.config.generic_anchor_share and rng.random() < self.config.generic_anchor_share:
            return rng.choice(GENERIC_ANCHORS)
        return target.title

    def listing_pages(self, host: Host) -> list[str]:
        n_pages = max(1, -(-host.n_articles // PER_PAGE))
        urls = [f"http://{host.name}/"] + [f"http://{host.name}/page/{k}/" for k in range(2, n_pages + 1)]
        urls += [f"http://{host.name}/category/{c}/" for c in host.categories]
        return urls + [f"http://{host.name}/about.html"]

    def page_count(self) -> int:
        return sum(h.n_articles + len(self.listing_pages(h)) for h in self.hosts.values() if h.n_articles)

    def seeds(self, n: int = 5) -> list[str]:
        """Start URLs: ``standard``, as in the thesis, mostly on-topic sites plus a portal;
        ``hard``, portals and generic sites (no on-topic seed)."""
        first, *rest = self.config.seed_kinds
        crawlable = [h for h in self.by_kind.get(first, []) if self.hosts[h].robots not in ("disallow-all", "error")]
        chosen = crawlable[: max(1, n - len(rest))]
        for kind in rest:
            chosen += [h for h in self.by_kind.get(kind, []) if self.hosts[h].robots == "standard"][:1]
        return [f"http://{h}/" for h in chosen[:n]]

    def truth(self) -> tuple[list[dict], list[dict]]:
        """(pages, images): every non-trap page with its label; every content image occurrence."""
        pages: list[dict] = []
        images: dict[str, dict] = {}
        for host in self.hosts.values():
            if not host.n_articles:
                continue
            listing_label = {"topic": self.topic, "neighbour": self.neighbour}.get(host.kind, "other")
            for url in self.listing_pages(host):
                pages.append({"url": url, "host": host.name, "kind": "listing", "label": listing_label,
                              "on_topic": listing_label == self.topic, "status": 200})
            for i in range(host.n_articles):
                meta = self.article(host.name, i)
                pages.append({"url": meta.url, "host": host.name, "kind": "article", "label": meta.label,
                              "on_topic": meta.label == self.topic, "status": meta.status})
                for img in meta.images:
                    images.setdefault(img.url, {
                        "url": img.url, "page_url": meta.url, "photo": img.photo.key if img.photo else "",
                        "shows_topic": img.shows_topic, "alt": img.alt, "alt_describes": img.alt_describes,
                        "width": img.size[0], "height": img.size[1],
                        "html_width": img.html_size[0] if img.html_size else None,
                        "html_height": img.html_size[1] if img.html_size else None})
        return pages, list(images.values())

    def describe(self) -> dict:
        return {"seed": self.seed, "topic": self.topic, "neighbour": self.neighbour,
                "profile": self.config.profile, "heldout": self.config.heldout, "hosts": len(self.hosts), "pages": self.page_count(),
                "hosts_by_kind": {k: len(v) for k, v in sorted(self.by_kind.items())},
                "seeds": self.seeds()}


def _title_from_caption(caption: str) -> str:
    words = caption.strip().rstrip(".").split()
    title = " ".join(words[:12])
    return title[:1].upper() + title[1:]


def escape(text: str) -> str:
    return html.escape(text, quote=True)
