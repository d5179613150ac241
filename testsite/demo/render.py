"""Turn a (page, version) pair into response bytes.

Rendering is a pure function of ``(page, version, seed)`` for every page
except the timestamp page, whose whole point is per-request noise; that is
what makes "same version => identical bytes" hold and lets tests compare
content across versions meaningfully.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from types import MappingProxyType

from ..httputil import robots_txt
from .catalogue import PRIVATE_DIR, SECTIONS, Catalogue, Change, Media, Page, Role
from .png import gradient_png

__all__ = ["RenderContext", "render", "render_robots"]

_WORDS = (
    "adaptive", "crawler", "frontier", "revisit", "signal", "change", "steady",
    "quiet", "morning", "report", "market", "river", "bridge", "harbour",
    "council", "garden", "festival", "engine", "station", "library", "season",
    "weather", "museum", "archive", "journey", "village", "harvest", "forecast",
    "update", "notice", "schedule", "volunteers", "residents", "announced",
    "reopened", "expanded", "measured", "observed", "recorded", "delayed",
    "improved", "local", "northern", "eastern", "historic", "modern", "small",
    "annual", "weekly", "careful", "bright", "early", "late", "new", "old",
)  # fmt: skip


@dataclass(frozen=True)
class RenderContext:
    """Inputs a renderer may use beyond the page itself.

    ``now`` (wall-clock seconds from the site's clock) and ``render_number``
    are only used by the timestamp page; everything else must ignore them so
    that content stays a function of the version.
    """

    catalogue: Catalogue
    seed: int
    version: int
    now: float
    render_number: int
    crawl_delay: float | None = None


def _rng(ctx: RenderContext, page: Page, *parts: object) -> random.Random:
    """An RNG keyed by seed, page and ``parts``: deterministic, independent streams."""
    return random.Random("|".join(map(str, (ctx.seed, page.path, *parts))))


def _sentence(rng: random.Random, words: int = 9) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, sentences: int = 3) -> str:
    return " ".join(_sentence(rng, rng.randint(6, 12)) for _ in range(sentences))


def _title_of(ctx: RenderContext, path: str) -> str:
    page = ctx.catalogue.get(path)
    return page.title if page else path


def _nav() -> str:
    """The shared navigation bar: every page links home and every section."""
    items = ['<a href="/">Home</a>'] + [f'<a href="/{slug}/">{escape(title)}</a>' for slug, title in SECTIONS]
    return "<nav>" + " | ".join(items) + "</nav>"


def _href(page: Page, target: str) -> str:
    """Same-directory targets become relative hrefs (``article-02.html``).

    Real sites mix relative and root-relative links; serving both exercises a
    crawler's URL joining.
    """
    directory, _, name = target.rpartition("/")
    if name and page.path.rpartition("/")[0] == directory:
        return name
    return target


def _link_list(ctx: RenderContext, page: Page, targets: Sequence[str]) -> str:
    """``<ul>`` of links to ``targets`` (absolute paths), titled from the catalogue."""
    items = [f'<li><a href="{escape(_href(page, t))}">{escape(_title_of(ctx, t))}</a></li>' for t in targets]
    return "<ul>\n" + "\n".join(items) + "\n</ul>"


def _document(page: Page, main: str, *, head_extra: str = "", body_attrs: str = "") -> bytes:
    links = "".join(f'\n<link rel="stylesheet" href="{escape(s)}">' for s in page.stylesheets)
    html = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(page.title)}</title>{links}{head_extra}\n</head>\n"
        f"<body{body_attrs}>\n<header>{_nav()}</header>\n<main>\n{main}\n</main>\n"
        "<footer><p>Adaptive demo site - a local test fixture.</p></footer>\n"
        "</body>\n</html>\n"
    )
    return html.encode("utf-8")


def _revision(ctx: RenderContext, page: Page) -> str:
    """A visible "Revision N" line on pages whose content changes."""
    if page.change in (Change.NONE, Change.MARKUP, Change.TIMESTAMP):
        return ""
    return f'<p class="revision">Revision {ctx.version}</p>\n'


def _figures(page: Page) -> str:
    return "".join(
        f'<figure><img src="{escape(src)}" alt="Illustration {i + 1}" width="48" height="32"></figure>\n'
        for i, src in enumerate(page.images)
    )


def _extra_links(ctx: RenderContext, page: Page) -> str:
    return f"<aside><h2>See also</h2>\n{_link_list(ctx, page, page.links)}\n</aside>"


def _render_index(ctx: RenderContext, page: Page) -> bytes:
    articles = [p.path for p in ctx.catalogue if p.role is Role.ARTICLE]
    featured = articles[ctx.version % len(articles)]
    main = (
        f"<h1>{escape(page.title)}</h1>\n"
        '<img src="/images/logo.png" alt="Demo logo" width="64" height="16">\n'
        f"{_revision(ctx, page)}"
        f"<p>{_paragraph(_rng(ctx, page, 'intro'))}</p>\n"
        f'<p class="featured">Featured: <a href="{featured}">'
        f"{escape(_title_of(ctx, featured))}</a></p>\n"
        f"{_link_list(ctx, page, page.links)}"
    )
    return _document(page, main)


def _render_section(ctx: RenderContext, page: Page) -> bytes:
    latest = _sentence(_rng(ctx, page, "latest", ctx.version))
    main = (
        f"<h1>{escape(page.title)}</h1>\n{_revision(ctx, page)}"
        f'<p class="latest">{latest}</p>\n{_link_list(ctx, page, page.links)}'
    )
    return _document(page, main)


def _render_article(ctx: RenderContext, page: Page) -> bytes:
    """Two stable paragraphs around one that is rewritten in every version."""
    main = (
        f'<article class="article">\n<h1>{escape(page.title)}</h1>\n'
        f'<p class="byline">Filed under {escape(page.section or "misc")}</p>\n'
        f"{_revision(ctx, page)}"
        f"<p>{_paragraph(_rng(ctx, page, 'lead'))}</p>\n{_figures(page)}"
        f'<p class="update">{_paragraph(_rng(ctx, page, "body", ctx.version), 2)}</p>\n'
        f"<p>{_paragraph(_rng(ctx, page, 'tail'))}</p>\n</article>\n"
        f"{_extra_links(ctx, page)}"
    )
    return _document(page, main)


def product_price(seed: int, path: str, version: int) -> str:
    """The price of a product at ``version``, as a ``"123.45"`` string.

    ``37`` is coprime with ``41``, so consecutive versions always get a
    different price: a PRICE page never has a no-op version.
    """
    rng = random.Random(f"{seed}|{path}|price")
    base = rng.randint(20, 200)
    offset = rng.randrange(41)
    step = (version * 37 + offset) % 41 - 20
    return f"{base + step * 0.5:.2f}"


def _product_fields(ctx: RenderContext, page: Page) -> tuple[str, str, str]:
    data_version = ctx.version if page.change is Change.PRICE else 0
    price = product_price(ctx.seed, page.path, data_version)
    description = _paragraph(_rng(ctx, page, "description"), 2)
    sku = f"SKU-{page.id:03d}-{ctx.seed % 1000:03d}"
    return price, description, sku


def _product_layout(variant: int, version: int, page: Page, price: str, desc: str, sku: str) -> str:
    """One of three structurally different layouts carrying identical data.

    Every layout keeps schema.org microdata (``itemprop="price"`` ...), which
    is what a robust extractor keys on; class names also embed the version so
    that each version's markup differs even when the variant repeats.
    """
    name = escape(page.title)
    img = _figures(page)
    if variant == 0:
        return (
            f'<article class="product layout-{version}" itemscope '
            f'itemtype="https://schema.org/Product">\n<h1 itemprop="name">{name}</h1>\n{img}'
            f'<p class="price-line">Price: <span itemprop="price" content="{price}">{price}</span> '
            f'<span itemprop="priceCurrency">EUR</span></p>\n'
            f'<p itemprop="description">{desc}</p>\n<p class="sku">{sku}</p>\n</article>'
        )
    if variant == 1:
        return (
            f'<div class="shell-{version}"><article class="product grid" itemscope '
            f'itemtype="https://schema.org/Product">\n<table class="facts">\n'
            f'<tr><th>Product</th><td><h1 itemprop="name">{name}</h1></td></tr>\n'
            f'<tr><th>Price</th><td><span itemprop="price" content="{price}">{price}</span> '
            f'<span itemprop="priceCurrency">EUR</span></td></tr>\n'
            f'<tr><th>Code</th><td class="sku">{sku}</td></tr>\n</table>\n{img}'
            f'<div class="text"><p itemprop="description">{desc}</p></div>\n</article></div>'
        )
    return (
        f'<section class="wrap-{version}"><article class="product stacked" itemscope '
        f'itemtype="https://schema.org/Product">\n<header><h1 itemprop="name">{name}</h1>'
        f'</header>\n<div class="body"><p itemprop="description">{desc}</p>{img}</div>\n'
        f'<dl><dt>Price</dt><dd><span itemprop="price" content="{price}">{price}</span> '
        f'<span itemprop="priceCurrency">EUR</span></dd><dt>Code</dt><dd class="sku">{sku}'
        f"</dd></dl>\n</article></section>"
    )


def _render_product(ctx: RenderContext, page: Page) -> bytes:
    price, desc, sku = _product_fields(ctx, page)
    variant = ctx.version % 3 if page.change is Change.LAYOUT else 0
    version_tag = ctx.version if page.change is Change.LAYOUT else 0
    body = _product_layout(variant, version_tag, page, price, desc, sku)
    return _document(page, f"{body}\n{_extra_links(ctx, page)}")


def _render_markup_only(ctx: RenderContext, page: Page) -> bytes:
    """Visible text fixed; only attributes, a comment and script/meta change."""
    v = ctx.version
    digest = hashlib.sha1(f"{ctx.seed}|{page.path}|{v}".encode()).hexdigest()[:12]
    text = _paragraph(_rng(ctx, page, "text"), 4)
    head = (
        f'\n<meta name="build-id" content="{digest}">\n'
        f'<script>window.__BUILD__ = "{digest}"; window.__REV__ = {v};</script>'
    )
    main = (
        f"<!-- build {digest} -->\n"
        f'<article class="article theme-{v % 4}" data-build="{digest}">\n'
        f"<h1>{escape(page.title)}</h1>\n"
        f'<div class="col-{v % 3}" style="margin: {v % 5}px"><p>{text}</p></div>\n'
        f"<script>document.body.dataset.rev = {v};</script>\n</article>\n"
        f"{_extra_links(ctx, page)}"
    )
    return _document(page, main, head_extra=head, body_attrs=f' class="rev-{v % 2}"')


def _render_timestamp(ctx: RenderContext, page: Page) -> bytes:
    """Same text on every request except the "Generated at" line."""
    stamp = datetime.fromtimestamp(ctx.now, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    main = (
        f'<article class="article">\n<h1>{escape(page.title)}</h1>\n'
        f"<p>{_paragraph(_rng(ctx, page, 'text'), 4)}</p>\n</article>\n"
        f'<p class="generated">Generated at {stamp} UTC (render #{ctx.render_number})</p>\n'
        f"{_extra_links(ctx, page)}"
    )
    return _document(page, main)


def _render_private(ctx: RenderContext, page: Page) -> bytes:
    main = (
        f"<h1>{escape(page.title)}</h1>\n"
        "<p>If a crawler stored this page, it ignored robots.txt.</p>\n"
        '<p><a href="/">Back home</a></p>'
    )
    return _document(page, main)


def _render_html(ctx: RenderContext, page: Page) -> bytes:
    if page.role is Role.INDEX:
        return _render_index(ctx, page)
    if page.role is Role.SECTION:
        return _render_section(ctx, page)
    if page.role is Role.PRODUCT:
        return _render_product(ctx, page)
    if page.role is Role.PRIVATE:
        return _render_private(ctx, page)
    if page.change is Change.MARKUP:
        return _render_markup_only(ctx, page)
    if page.change is Change.TIMESTAMP:
        return _render_timestamp(ctx, page)
    return _render_article(ctx, page)


def _colour(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randrange(256), rng.randrange(256), rng.randrange(256))


def _render_png(ctx: RenderContext, page: Page) -> bytes:
    rng = _rng(ctx, page, "png", ctx.version)
    if page.path.endswith("/logo.png"):
        return gradient_png(64, 16, _colour(rng), _colour(rng))
    return gradient_png(48, 32, _colour(rng), _colour(rng))


def _render_css(ctx: RenderContext, page: Page) -> bytes:
    rng = _rng(ctx, page, "css", ctx.version)
    accent = "#{:02x}{:02x}{:02x}".format(*_colour(rng))
    return (
        f"/* {page.path} - version {ctx.version} */\n"
        f":root {{ --accent: {accent}; }}\n"
        "body { font-family: sans-serif; max-width: 48rem; margin: auto; }\n"
        "a { color: var(--accent); }\n"
        ".price-line, .revision { font-weight: bold; }\n"
    ).encode()


def render_robots(crawl_delay: float | None) -> bytes:
    """``robots.txt``: everything allowed except ``/private/``; ``Crawl-delay`` only if configured."""
    return robots_txt((PRIVATE_DIR,), crawl_delay)


_RENDERERS: Mapping[Media, Callable[[RenderContext, Page], bytes]] = MappingProxyType(
    {
        Media.HTML: _render_html,
        Media.PNG: _render_png,
        Media.CSS: _render_css,
        Media.TEXT: lambda ctx, page: render_robots(ctx.crawl_delay),
    }
)


def render(ctx: RenderContext, page: Page) -> bytes:
    """The response body for ``page`` at ``ctx.version``."""
    return _RENDERERS[page.media](ctx, page)
