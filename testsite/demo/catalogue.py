"""The demo site's page inventory: paths, roles, schedules, validators, links.

The catalogue is data, not behaviour: it says *what* exists and *how* each page
is meant to behave, so the HTTP layer (:mod:`.site`), the renderer
(:mod:`.render`) and the ``/_demo/schedule`` endpoint all read from one source
of truth.  Only the schedule phases and the Poisson change instants depend on
the seed; paths, cadences and validator behaviour are fixed so documentation
and tests can name them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from ..schedule import Never, Periodic, PerRequest, Poisson, Schedule

__all__ = [
    "Cadence",
    "Catalogue",
    "Change",
    "Media",
    "Page",
    "Role",
    "Validators",
    "build_catalogue",
]


class Media(StrEnum):
    """What kind of bytes a page is served as."""

    HTML = "html"
    PNG = "png"
    CSS = "css"
    TEXT = "text"


class Role(StrEnum):
    """The page's place in the site tree (drives rendering and linking)."""

    INDEX = "index"
    SECTION = "section"
    ARTICLE = "article"
    PRODUCT = "product"
    LAB = "lab"
    PRIVATE = "private"
    ASSET = "asset"
    ROBOTS = "robots"


class Validators(StrEnum):
    """How a page uses HTTP validators (``ETag`` / ``Last-Modified``).

    * ``honour``: sends both, answers matching conditional requests with 304.
    * ``ignore``: sends both but always answers 200 with the full body.
    * ``none``: sends neither.
    * ``lie``: sends both but they never change although the content does,
      and matching conditional requests get a 304, so a crawler that trusts
      validators never sees a change.
    """

    HONOUR = "honour"
    IGNORE = "ignore"
    NONE = "none"
    LIE = "lie"

    @property
    def sends_validators(self) -> bool:
        return self is not Validators.NONE

    @property
    def answers_304(self) -> bool:
        return self in (Validators.HONOUR, Validators.LIE)


class Change(StrEnum):
    """What differs between two versions of a page (for change-detection tests)."""

    #: Visible text changes (a "Revision N" line and one paragraph).
    CONTENT = "content"
    #: Classes, attributes, comments, inline script change; visible text identical.
    MARKUP = "markup-only"
    #: Product data (the price) changes; layout identical.
    PRICE = "price"
    #: Layout / markup structure changes; product data identical.
    LAYOUT = "layout"
    #: Only a "Generated at" line changes, on every request.
    TIMESTAMP = "timestamp"
    #: Never changes.
    NONE = "none"


@dataclass(frozen=True)
class Cadence:
    """A seed-independent description of a schedule, turned into one per page."""

    kind: str
    seconds: float = 0.0

    def build(self, seed: int, path: str) -> Schedule:
        """Instantiate the schedule; the seed only moves phases / random instants."""
        key = f"{seed}|{path}"
        if self.kind == "periodic":
            phase = random.Random(f"{key}|phase").uniform(0.0, self.seconds)
            return Periodic(self.seconds, min(phase, self.seconds * 0.999))
        if self.kind == "poisson":
            return Poisson(self.seconds, f"{key}|poisson")
        if self.kind == "per-request":
            return PerRequest()
        return Never()


EVERY_15S = Cadence("periodic", 15.0)
EVERY_1M = Cadence("periodic", 60.0)
EVERY_5M = Cadence("periodic", 300.0)
POISSON_30S = Cadence("poisson", 30.0)
POISSON_2M = Cadence("poisson", 120.0)
NEVER = Cadence("never")
PER_REQUEST = Cadence("per-request")

HONOUR, IGNORE, NONE, LIE = (
    Validators.HONOUR,
    Validators.IGNORE,
    Validators.NONE,
    Validators.LIE,
)


@dataclass(frozen=True)
class Page:
    """One URL of the demo site and everything known about its behaviour."""

    id: int
    path: str
    title: str
    media: Media
    role: Role
    schedule: Schedule
    validators: Validators
    change: Change
    section: str | None = None
    links: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    stylesheets: tuple[str, ...] = ()
    note: str = ""

    @property
    def robots_allowed(self) -> bool:
        return not self.path.startswith(PRIVATE_DIR)


@dataclass(frozen=True)
class Catalogue:
    """All pages, in id order, with lookup by path."""

    pages: tuple[Page, ...]
    by_path: Mapping[str, Page] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_path", MappingProxyType({p.path: p for p in self.pages}))

    def get(self, path: str) -> Page | None:
        return self.by_path.get(path)

    def __iter__(self) -> Iterator[Page]:
        return iter(self.pages)

    def __len__(self) -> int:
        return len(self.pages)

    def html_pages(self) -> tuple[Page, ...]:
        return tuple(p for p in self.pages if p.media is Media.HTML)


# --------------------------------------------------------------------------
# The inventory.  Cadence and validator behaviour per page are spelled out
# here, table-style, so README and tests can rely on them.
# --------------------------------------------------------------------------

#: (slug, title) of each section, in navigation order.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("news", "News"),
    ("blog", "Blog"),
    ("docs", "Docs"),
    ("shop", "Shop"),
    ("lab", "Lab"),
)

SECTION_BEHAVIOUR: Mapping[str, tuple[Cadence, Validators]] = MappingProxyType(
    {
        "news": (EVERY_15S, HONOUR),
        "blog": (EVERY_1M, IGNORE),
        "docs": (NEVER, HONOUR),
        "shop": (EVERY_1M, NONE),
        "lab": (NEVER, HONOUR),
    }
)

NEWS: tuple[tuple[Cadence, Validators], ...] = (
    (EVERY_15S, HONOUR),
    (EVERY_15S, IGNORE),
    (EVERY_15S, NONE),
    (EVERY_1M, HONOUR),
    (EVERY_1M, HONOUR),
    (POISSON_30S, HONOUR),
    (POISSON_2M, NONE),
    (EVERY_5M, HONOUR),
    (NEVER, HONOUR),
    (NEVER, NONE),
)

BLOG: tuple[tuple[Cadence, Validators], ...] = (
    (EVERY_1M, HONOUR),
    (EVERY_1M, IGNORE),
    (EVERY_5M, HONOUR),
    (EVERY_5M, NONE),
    (POISSON_2M, HONOUR),
    (NEVER, HONOUR),
    (NEVER, IGNORE),
    (NEVER, NONE),
    (EVERY_5M, HONOUR),
    (EVERY_1M, NONE),
)

DOCS: tuple[tuple[Cadence, Validators], ...] = (
    *((NEVER, HONOUR),) * 6,
    (EVERY_5M, HONOUR),
    (NEVER, NONE),
)

#: Products: (cadence, validators, what changes).
SHOP: tuple[tuple[Cadence, Validators, Change], ...] = (
    (EVERY_15S, HONOUR, Change.PRICE),
    (EVERY_1M, IGNORE, Change.PRICE),
    (EVERY_5M, NONE, Change.PRICE),
    (POISSON_30S, HONOUR, Change.PRICE),
    (NEVER, HONOUR, Change.NONE),
    (EVERY_1M, HONOUR, Change.LAYOUT),
)

#: Lab pages: (file name, title, cadence, validators, change, note).
LAB: tuple[tuple[str, str, Cadence, Validators, Change, str], ...] = (
    (
        "conditional.html",
        "Honours conditional GET",
        EVERY_15S,
        HONOUR,
        Change.CONTENT,
        "Reference page: correct ETag/Last-Modified, 304 on a match.",
    ),
    (
        "ignores-conditional.html",
        "Ignores conditional GET",
        EVERY_15S,
        IGNORE,
        Change.CONTENT,
        "Sends correct validators but always answers 200 with the full body.",
    ),
    (
        "no-validators.html",
        "No validators",
        EVERY_15S,
        NONE,
        Change.CONTENT,
        "Sends neither ETag nor Last-Modified.",
    ),
    (
        "liar.html",
        "Lying validators",
        EVERY_15S,
        LIE,
        Change.CONTENT,
        ("Content changes every 15 s but ETag and Last-Modified never do; matching conditional requests get 304."),
    ),
    (
        "timestamp.html",
        "Generated timestamp",
        PER_REQUEST,
        NONE,
        Change.TIMESTAMP,
        "Only a 'Generated at' timestamp line changes, on every request.",
    ),
    (
        "markup.html",
        "Markup-only changes",
        EVERY_15S,
        HONOUR,
        Change.MARKUP,
        ("Classes, data attributes, comments and an inline script change; visible text is identical across versions."),
    ),
)

#: Images: 16 photos embedded by articles/products plus the logo.
PHOTO_COUNT = 16
IMAGES: Mapping[str, tuple[Cadence, Validators]] = MappingProxyType(
    {
        "/images/logo.png": (NEVER, HONOUR),
        **{
            f"/images/photo-{n:02d}.png": (
                (EVERY_5M if n <= 2 else NEVER),
                (NONE if n == PHOTO_COUNT else HONOUR),
            )
            for n in range(1, PHOTO_COUNT + 1)
        },
    }
)

SITE_CSS = "/static/site.css"
THEME_CSS = "/static/theme.css"
STYLESHEETS: Mapping[str, tuple[Cadence, Validators]] = MappingProxyType(
    {SITE_CSS: (NEVER, HONOUR), THEME_CSS: (EVERY_5M, IGNORE)}
)

#: robots.txt disallows this folder; PRIVATE_PATH is the one page in it.
PRIVATE_DIR = "/private/"
PRIVATE_PATH = PRIVATE_DIR + "secret.html"
ROBOTS_PATH = "/robots.txt"

_TOPICS = (
    "river", "harbour", "orchard", "lantern", "compass", "meadow", "signal",
    "granite", "willow", "tide", "ember", "atlas", "falcon", "prairie",
    "cobalt", "summit", "thistle", "quarry", "beacon", "canyon", "glacier",
    "saffron", "juniper", "marble",
)  # fmt: skip


@dataclass(frozen=True)
class _Draft:
    """A page before links are resolved (links need the full path list)."""

    path: str
    title: str
    media: Media
    role: Role
    cadence: Cadence
    validators: Validators
    change: Change
    section: str | None = None
    note: str = ""


def _topic_title(seed: int, path: str, prefix: str) -> str:
    """A stable, human-looking title such as ``News 03: Harbour beacon``."""
    rng = random.Random(f"{seed}|{path}|title")
    first, second = rng.sample(_TOPICS, 2)
    return f"{prefix}: {first.capitalize()} {second}"


def _content_change(cadence: Cadence) -> Change:
    return Change.NONE if cadence.kind == "never" else Change.CONTENT


def _section_drafts() -> list[_Draft]:
    drafts = [
        _Draft("/", "Adaptive demo site", Media.HTML, Role.INDEX, EVERY_1M, HONOUR, Change.CONTENT),
    ]
    for slug, title in SECTIONS:
        cadence, validators = SECTION_BEHAVIOUR[slug]
        drafts.append(
            _Draft(
                f"/{slug}/",
                title,
                Media.HTML,
                Role.SECTION,
                cadence,
                validators,
                _content_change(cadence),
                section=slug,
            )
        )
    return drafts


def _item_drafts(seed: int) -> list[_Draft]:
    drafts: list[_Draft] = []
    listings: Sequence[tuple[str, str, str, tuple[tuple[Cadence, Validators], ...]]] = (
        ("news", "article", "News", NEWS),
        ("blog", "post", "Blog", BLOG),
        ("docs", "page", "Docs", DOCS),
    )
    for slug, stem, label, rows in listings:
        for n, (cadence, validators) in enumerate(rows, start=1):
            path = f"/{slug}/{stem}-{n:02d}.html"
            title = _topic_title(seed, path, f"{label} {n:02d}")
            drafts.append(
                _Draft(
                    path, title, Media.HTML, Role.ARTICLE, cadence, validators, _content_change(cadence), section=slug
                )
            )
    for n, (cadence, validators, change) in enumerate(SHOP, start=1):
        path = f"/shop/product-{n:02d}.html"
        title = _topic_title(seed, path, f"Product {n:02d}")
        drafts.append(_Draft(path, title, Media.HTML, Role.PRODUCT, cadence, validators, change, section="shop"))
    for name, title, cadence, validators, change, note in LAB:
        drafts.append(
            _Draft(f"/lab/{name}", title, Media.HTML, Role.LAB, cadence, validators, change, section="lab", note=note)
        )
    drafts.append(
        _Draft(
            PRIVATE_PATH,
            "Staff only",
            Media.HTML,
            Role.PRIVATE,
            NEVER,
            NONE,
            Change.NONE,
            section="private",
            note="Disallowed by robots.txt; a polite crawler never fetches it.",
        )
    )
    return drafts


def _asset_drafts() -> list[_Draft]:
    drafts = [
        _Draft(path, path.rsplit("/", 1)[-1], Media.PNG, Role.ASSET, cadence, validators, _content_change(cadence))
        for path, (cadence, validators) in IMAGES.items()
    ]
    drafts += [
        _Draft(path, path.rsplit("/", 1)[-1], Media.CSS, Role.ASSET, cadence, validators, _content_change(cadence))
        for path, (cadence, validators) in STYLESHEETS.items()
    ]
    drafts.append(_Draft(ROBOTS_PATH, "robots.txt", Media.TEXT, Role.ROBOTS, NEVER, NONE, Change.NONE))
    return drafts


def _section_of(drafts: Sequence[_Draft], slug: str) -> list[str]:
    return [d.path for d in drafts if d.section == slug and d.role is not Role.SECTION]


def _links_for(draft: _Draft, drafts: Sequence[_Draft], articles: Sequence[str]) -> tuple[str, ...]:
    """Outgoing page links beyond the shared navigation bar.

    Index -> sections, lab, featured articles and the private page; section
    -> its items; item -> its section, previous/next sibling and one related
    item elsewhere, so the graph is well connected.  Paths are absolute here;
    the renderer writes same-directory links as relative hrefs.
    """
    if draft.role is Role.INDEX:
        return (
            *(f"/{slug}/" for slug, _ in SECTIONS),
            *articles[:3],
            PRIVATE_PATH,
        )
    if draft.role is Role.SECTION:
        return tuple(_section_of(drafts, draft.section or ""))
    if draft.role is Role.PRIVATE or draft.section is None:
        return ("/",)
    siblings = _section_of(drafts, draft.section)
    i = siblings.index(draft.path)
    links = [f"/{draft.section}/", siblings[i - 1], siblings[(i + 1) % len(siblings)]]
    if draft.role in (Role.ARTICLE, Role.PRODUCT):
        links.append(articles[(articles.index(draft.path) * 7 + 3) % len(articles)])
    return tuple(dict.fromkeys(links))


def _images_for(draft: _Draft, articles: Sequence[str]) -> tuple[str, ...]:
    """Articles and products embed one or two photos; the index shows the logo."""
    if draft.role is Role.INDEX:
        return ("/images/logo.png",)
    if draft.path not in articles:
        return ()
    j = articles.index(draft.path)
    photos = [j % PHOTO_COUNT]
    if j % 2 == 0:
        photos.append((j + 5) % PHOTO_COUNT)
    return tuple(f"/images/photo-{k + 1:02d}.png" for k in photos)


def _stylesheets_for(draft: _Draft) -> tuple[str, ...]:
    """Only some pages link CSS, as on real sites: news articles link none."""
    if draft.role in (Role.INDEX, Role.SECTION, Role.LAB):
        return (SITE_CSS, THEME_CSS) if draft.section == "shop" else (SITE_CSS,)
    if draft.section in ("docs",):
        return (SITE_CSS,)
    if draft.section in ("blog", "shop"):
        return (SITE_CSS, THEME_CSS)
    return ()


def build_catalogue(seed: int = 0) -> Catalogue:
    """Build the full inventory (about 47 HTML pages plus assets) for ``seed``."""
    drafts = _section_drafts() + _item_drafts(seed) + _asset_drafts()
    articles = [d.path for d in drafts if d.role in (Role.ARTICLE, Role.PRODUCT)]
    pages = []
    for page_id, d in enumerate(drafts):
        is_html = d.media is Media.HTML
        pages.append(
            Page(
                id=page_id,
                path=d.path,
                title=d.title,
                media=d.media,
                role=d.role,
                schedule=d.cadence.build(seed, d.path),
                validators=d.validators,
                change=d.change,
                section=d.section,
                links=_links_for(d, drafts, articles) if is_html else (),
                images=_images_for(d, articles) if is_html else (),
                stylesheets=_stylesheets_for(d) if is_html else (),
                note=d.note,
            )
        )
    return Catalogue(tuple(pages))
