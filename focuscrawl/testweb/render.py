"""HTTP responses of the test web: HTML pages, robots.txt, images, redirects, errors, traps."""
from __future__ import annotations

import hashlib
import io
import random
import re
from functools import lru_cache
from urllib.parse import parse_qs, urlsplit

from focuscrawl.testweb.web import (PER_PAGE, ArticleMeta, Host, ImageRef, Response, TestWeb, escape,
                                    image_spec, stable_int)

PALETTE = [(200, 80, 60), (60, 120, 200), (90, 170, 90), (220, 200, 80), (120, 90, 160), (230, 230, 230),
           (40, 40, 40), (170, 120, 70)]
ARTICLE_RE = re.compile(r"^/post/(\d+)-[^/]*\.html$")


def respond(web: TestWeb, host_name: str, target: str) -> Response:
    """The response of ``web`` for ``http://host_name/target`` (path with query)."""
    host = web.hosts.get(host_name.lower().split(":")[0])
    if host is None:  # a name outside the closed web: not found, as no server answers for it (a proxy's
        # 502 would be a server error to retry, and a crawl's ERROR line once retrying gave up)
        return _text(404, "unknown host (the test web has no such site)\n")
    parts = urlsplit(target)
    path, query = parts.path or "/", parts.query
    if path == "/robots.txt":
        return _robots(host)
    spec = image_spec(host.name, path)
    if spec is not None:
        return Response(200, {"Content-Type": f"image/{spec[2].lower()}", "Cache-Control": "max-age=86400"},
                        image_bytes(*spec))
    if path == "/static/style.css":
        return Response(200, {"Content-Type": "text/css"}, b"body{font-family:sans-serif}\n")
    if host.kind == "trap-calendar":
        return _html(host, *_calendar_page(web, host, path))
    if host.kind == "trap-session":
        return _html(host, *_session_page(web, host, path, query))
    if path.startswith("/private/") or path.startswith("/cgi-bin/"):
        return _html(host, "Log in", _layout(web, host, "Log in", "<p>Please log in to continue.</p>", None))
    if path.startswith("/go/"):
        i = _int(path[4:])
        if i is None or i >= host.n_articles:
            return _not_found(web, host)
        return Response(301, {"Location": web.article(host.name, i).url, "Content-Type": "text/html"},
                        b"<html><body>Moved</body></html>")
    m = ARTICLE_RE.match(path)
    if m:
        i = int(m.group(1))
        if i >= host.n_articles or web.article(host.name, i).url != f"http://{host.name}{path}":
            return _not_found(web, host)
        meta = web.article(host.name, i)
        if meta.status == 500:
            return _text(500, "Internal Server Error\n")
        delay = 1.0 if stable_int(web.seed, host.name, i, "slow") % 100 == 0 else 0.0
        title, body = _article_page(web, host, meta)
        response = _html(host, title, body)
        response.delay = delay
        return response
    if path == "/" or path == "/index.html":
        return _html(host, *_listing(web, host, 1))
    m = re.match(r"^/page/(\d+)/$", path)
    if m:
        k = int(m.group(1))
        if 2 <= k <= max(1, -(-host.n_articles // PER_PAGE)):
            return _html(host, *_listing(web, host, k))
        return _not_found(web, host)
    m = re.match(r"^/(?:category|section)/([a-z0-9-]+)/$", path)
    if m and m.group(1) in host.categories:
        return _html(host, *_category(web, host, m.group(1)))
    m = re.match(r"^/archive/(\d{4})/(\d{2})/$", path)
    if m and host.archive_trap:
        return _html(host, *_archive(web, host, int(m.group(1)), int(m.group(2))))
    if path == "/about.html":
        body = f"<p>{escape(host.site_name)} is a site written by one person in their spare time.</p>"
        return _html(host, "About", _layout(web, host, "About", body, None))
    return _not_found(web, host)


# -- images -----------------------------------------------------------------------------
@lru_cache(maxsize=512)
def image_bytes(width: int, height: int, fmt: str, colour: int | None = None) -> bytes:
    """A flat-colour image of the true size: small in bytes, real for Pillow."""
    from PIL import Image

    rgb = PALETTE[(colour if colour is not None else width * 7 + height) % len(PALETTE)]
    img = Image.new("RGB", (width, height), rgb)
    if fmt == "GIF":
        img = img.convert("P")
    buf = io.BytesIO()
    img.save(buf, fmt, **({"quality": 40} if fmt in ("JPEG", "WEBP") else {}))
    return buf.getvalue()


# -- responses --------------------------------------------------------------------------
def _text(status: int, text: str) -> Response:
    return Response(status, {"Content-Type": "text/plain; charset=utf-8"}, text.encode())


def _robots(host: Host) -> Response:
    if host.robots == "none":
        return _text(404, "Not Found\n")
    if host.robots == "error":
        return _text(500, "Internal Server Error\n")
    if host.robots == "disallow-all":
        return _text(200, "User-agent: *\nDisallow: /\n")
    return _text(200, "User-agent: *\nDisallow: /private/\nDisallow: /cgi-bin/\n\n"
                      "User-agent: BadBot\nDisallow: /\n")


def _html(host: Host, title: str, body: str, status: int = 200) -> Response:
    page = (f"<!DOCTYPE html>\n<html lang=\"en\"><head>{_meta_charset(host)}<title>{escape(title)} | "
            f"{escape(host.site_name)}</title>\n<link rel=\"stylesheet\" href=\"/static/style.css\">"
            f"</head>\n<body>\n{body}\n</body></html>\n")
    if host.charset == "wrong":  # declared utf-8, sent as cp1252 (a common real-world mistake)
        return Response(status, {"Content-Type": "text/html; charset=utf-8"},
                        page.encode("cp1252", errors="replace"))
    if host.charset == "latin-1":  # no charset in the header, only in <meta>
        return Response(status, {"Content-Type": "text/html"}, page.encode("latin-1", errors="replace"))
    return Response(status, {"Content-Type": "text/html; charset=utf-8"}, page.encode("utf-8"))


def _meta_charset(host: Host) -> str:
    return '<meta charset="iso-8859-1">' if host.charset == "latin-1" else '<meta charset="utf-8">'


def _not_found(web: TestWeb, host: Host) -> Response:
    return _html(host, "Page not found",
                 _layout(web, host, "Page not found", "<p>Sorry, this page does not exist.</p>", None), 404)


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


# -- page parts -------------------------------------------------------------------------
def _img(img: ImageRef, thumbnail: bool = False) -> str:
    attrs = [f'src="{escape(img.url)}"']
    if img.alt is not None:
        attrs.append(f'alt="{escape(img.alt)}"')
    size = (300, 225) if thumbnail else img.html_size
    if size:
        attrs.append(f'width="{size[0]}" height="{size[1]}"')
    attrs.append('class="thumb"' if thumbnail else 'class="wp-image aligncenter"')
    tag = f"<img {' '.join(attrs)}>"
    if img.caption and not thumbnail:
        return f'<figure class="wp-caption">{tag}<figcaption>{escape(img.caption)}</figcaption></figure>'
    return tag


def _icon_row(host: Host) -> str:
    return ('<span class="social"><a href="/private/share?to=facebook"><img src="/static/icons/facebook.png" '
            'alt="Facebook" width="32" height="32"></a> <a href="/private/share?to=twitter">'
            '<img src="/static/icons/twitter.gif" width="32" height="32"></a></span>'
            '<img src="/pixel.gif" width="1" height="1">')


def _layout(web: TestWeb, host: Host, title: str, main: str, meta: ArticleMeta | None) -> str:
    rng = random.Random(f"{web.seed}|layout|{host.name}|{meta.index if meta else title}")
    nav = "".join(f'<li><a href="/{"section" if host.kind == "portal" else "category"}/{c}/">'
                  f'{escape(c.replace("-", " ").title())}</a></li>' for c in host.categories)
    recent = ""
    if host.n_articles:
        start = (meta.index + 1) if meta else 0
        items = [web.article(host.name, (start + k) % host.n_articles) for k in range(5)]
        recent = "<h3>Recent posts</h3><ul>" + "".join(
            f'<li><a href="{escape(a.url)}">{escape(a.title)}</a></li>' for a in items) + "</ul>"
    blogroll = "<h3>Links</h3><ul>" + "".join(
        f'<li><a href="http://{f}/">{escape(web.hosts[f].site_name)}</a></li>' for f in host.friends) + "</ul>"
    archive = ""
    if host.archive_trap:
        archive = '<div id="calendar"><h3>Archives</h3><a href="/archive/2015/03/">March 2015</a></div>'
    ad = rng.randint(1, 9)
    sidebar = (f'<div id="sidebar">{recent}{blogroll}{archive}<div class="ad"><a href="http://ads.example.invalid/">'
               f'<img src="/ads/box-{ad}.jpg" alt="Advertisement" width="300" height="250"></a></div></div>')
    header = (f'<div id="header"><a href="/"><img src="/static/logo.png" alt="{escape(host.site_name)} logo" '
              f'width="240" height="60"></a><ul class="nav"><li><a href="/">Home</a></li>{nav}'
              f'<li><a href="/about.html">About</a></li></ul></div>'
              f'<div class="banner"><img src="/ads/banner-{ad}.gif" alt="Advertisement" width="728" height="90"></div>')
    footer = (f'<div id="footer"><p>&copy; 2015 {escape(host.site_name)}. All rights reserved. '
              f'<a href="/about.html">About</a> <a href="/private/login">Log in</a> '
              f'<a href="/cgi-bin/contact.pl">Contact</a></p>{_icon_row(host)}</div>')
    return f'{header}\n<div id="main">{main}</div>\n{sidebar}\n{footer}'


def _paragraphs(web: TestWeb, meta: ArticleMeta, rng: random.Random) -> list[str]:
    if meta.label in (web.topic, web.neighbour):
        lead = web.topic_lead if meta.label == web.topic else web.neighbour_lead
        photos = web.topic_photos if meta.label == web.topic else web.neighbour_photos
        paras = []
        for _ in range(rng.randint(1, 3)):
            caps = [rng.choice(rng.choice(photos).captions).rstrip(".") + "." for _ in range(rng.randint(2, 4))]
            paras.append(" ".join(caps))
        sentences = re.split(r"(?<=[.!?])\s+", lead) if lead else []
        if sentences and rng.random() < 0.6:
            k = rng.randrange(len(sentences))
            paras.insert(rng.randint(0, len(paras)), " ".join(sentences[k:k + rng.randint(2, 4)]))
        docs = web.topic_docs if meta.label == web.topic and web.topic_docs else web.other_docs
        if docs and rng.random() < 0.5:
            doc = rng.choice(docs)
            k = rng.randrange(len(doc))
            paras.append(doc[k])
        return paras
    doc = web._other_doc(meta.host, meta.index)
    if doc and rng.random() < 0.8:
        k = rng.randrange(max(1, len(doc) - 3))
        return doc[k + 1:k + rng.randint(3, 7)] or doc[:3]
    leads = web.other_leads
    return [leads[stable_int(meta.host, meta.index) % len(leads)]] if leads else ["Nothing to say today."]


def _external_target(web: TestWeb, host: Host, rng: random.Random) -> ArticleMeta | None:
    """An article on another host, chosen with topical locality."""
    weights = web.config.external_weights(host.kind)
    kinds = [k for k in weights if web.by_kind.get(k)]
    kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
    candidates = [h for h in web.by_kind[kind] if h != host.name]
    if kind == host.kind and host.friends and rng.random() < 0.5:
        candidates = [f for f in host.friends if web.hosts[f].kind == kind] or candidates
    if not candidates:
        return None
    target = web.hosts[rng.choice(candidates)]
    return web.article(target.name, rng.randrange(target.n_articles)) if target.n_articles else None


def _article_page(web: TestWeb, host: Host, meta: ArticleMeta) -> tuple[str, str]:
    rng = random.Random(f"{web.seed}|body|{host.name}|{meta.index}")
    paras = _paragraphs(web, meta, rng)
    blocks = [f"<p>{escape(p)}</p>" for p in paras]
    for k, img in enumerate(meta.images):
        blocks.insert(min(len(blocks), 1 + 2 * k), _img(img))
    links = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < (0.5 if host.kind == "topic" else 0.65):
            a = web.article(host.name, rng.randrange(host.n_articles))
            links.append(f'<a href="{escape(a.url)}">{escape(web.anchor(a, rng))}</a>')
        elif r < 0.94:
            a = _external_target(web, host, rng)
            if a is not None:
                links.append(f'<a href="{escape(a.url)}">{escape(web.anchor(a, rng))}</a>')
        elif r < 0.97:
            links.append(f'<a href="/go/{rng.randrange(host.n_articles)}">read more</a>')
        else:
            links.append(f'<a href="/post/{host.n_articles + 7}-removed.html">an old post</a>')
    if links:
        blocks.append("<p>See also: " + ", ".join(links) + ".</p>")
    date = f"{1 + meta.index % 28} {['March', 'April', 'May', 'June'][meta.index % 4]} 2015"
    main = (f'<article><h1>{escape(meta.title)}</h1><p class="meta">Posted on {date} by admin</p>'
            + "\n".join(blocks) + '</article><div class="comments"><h3>Leave a comment</h3>'
            f'<img src="/avatars/{meta.index % 7}.png" alt="" width="48" height="48">'
            '<a href="/private/login">Log in to comment</a></div>')
    return meta.title, _layout(web, host, meta.title, main, meta)


def _teaser(web: TestWeb, a: ArticleMeta, rng: random.Random) -> str:
    thumb = _img(a.images[0], thumbnail=True) if a.images else ""
    return f'<div class="teaser">{thumb}<h2><a href="{escape(a.url)}">{escape(web.anchor(a, rng))}</a></h2></div>'


def _listing(web: TestWeb, host: Host, k: int) -> tuple[str, str]:
    rng = random.Random(f"{web.seed}|listing|{host.name}|{k}")
    items = [web.article(host.name, i) for i in range((k - 1) * PER_PAGE, min(k * PER_PAGE, host.n_articles))]
    teasers = [_teaser(web, a, rng) for a in items]
    if host.kind == "portal":  # front pages link out with the target's title as anchor
        for _ in range(2 * PER_PAGE):
            a = _external_target(web, host, rng)
            if a is not None:
                teasers.insert(rng.randint(0, len(teasers)), _teaser(web, a, rng))
    n_pages = max(1, -(-host.n_articles // PER_PAGE))
    pager = "".join(f'<a href="{"/" if j == 1 else f"/page/{j}/"}">{j}</a> ' for j in
                    (k - 1, k + 1) if 1 <= j <= n_pages)
    title = host.site_name if k == 1 else f"Page {k}"
    return title, _layout(web, host, title, "\n".join(teasers) + f'<div class="pager">{pager}</div>', None)


def _category(web: TestWeb, host: Host, cat: str) -> tuple[str, str]:
    rng = random.Random(f"{web.seed}|category|{host.name}|{cat}")
    teasers = []
    if host.kind == "portal":
        want = {"pets": (web.topic, web.neighbour)}.get(cat)
        for _ in range(4 * PER_PAGE):
            a = _external_target(web, host, rng)
            if a is not None and (want is None or a.label in want or rng.random() < 0.2):
                teasers.append(_teaser(web, a, rng))
    idx = host.categories.index(cat)
    own = [i for i in range(idx, host.n_articles, len(host.categories))][:15]
    teasers += [_teaser(web, web.article(host.name, i), rng) for i in own]
    title = cat.replace("-", " ").title()
    return title, _layout(web, host, title, "\n".join(teasers), None)


def _archive(web: TestWeb, host: Host, year: int, month: int) -> tuple[str, str]:
    prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
    next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
    main = (f"<h1>Archive {year}-{month:02d}</h1><p>No posts were found for this month.</p>"
            f'<a href="/archive/{prev_y}/{prev_m:02d}/">&laquo; previous month</a> '
            f'<a href="/archive/{next_y}/{next_m:02d}/">next month &raquo;</a>')
    return f"Archive {year}-{month:02d}", _layout(web, host, "Archive", main, None)


def _calendar_page(web: TestWeb, host: Host, path: str) -> tuple[str, str]:
    m = re.match(r"^/calendar/(\d{4})/(\d{1,2})/(?:(\d{1,2})/)?$", path)
    year, month, day = (int(m.group(1)), int(m.group(2)), m.group(3)) if m else (2015, 3, None)
    prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
    next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
    days = "".join(f'<a href="/calendar/{year}/{month}/{d}/">{d}</a> ' for d in range(1, 29))
    doc = web.other_docs[stable_int(year, month) % len(web.other_docs)] if web.other_docs else ["Events."]
    main = (f"<h1>Events {year}-{month:02d}{'-' + day if day else ''}</h1><p>{escape(doc[0])}</p>"
            f'<div class="cal">{days}</div><a href="/calendar/{prev_y}/{prev_m}/">previous</a> '
            f'<a href="/calendar/{next_y}/{next_m}/">next</a>')
    return "Events", _layout(web, host, "Events", main, None)


def _session_page(web: TestWeb, host: Host, path: str, query: str) -> tuple[str, str]:
    sid = parse_qs(query).get("sid", ["start"])[0]
    links = []
    for k in range(6):  # every visit mints new session ids: an infinite URL space
        new_sid = hashlib.md5(f"{sid}{path}{k}".encode()).hexdigest()[:12]
        links.append(f'<a href="/item/{stable_int(sid, k) % 500}?sid={new_sid}">Product {k}</a>')
    caption = web.other_photos[stable_int(path) % len(web.other_photos)].captions[0]
    main = f"<h1>Shop</h1><p>{escape(caption)}</p><p>{' '.join(links)}</p>"
    return "Shop", _layout(web, host, "Shop", main, None)
