"""The changing web of :mod:`bench.changing_web`: URLs, page classes, one timeline, the bytes.

Pure (no Twisted, no Scrapy): the site serves it, the benchmark scores
against it, and both build it from the same parameters, so the ground truth
is the very timeline the server applied.  Every rate is given in *passes*
(URLs per host × delay), so the full and the smoke run are one world at two
speeds; the classes (``KINDS``), their validators, sizes and the version id
carried in the bytes are described, once, in ``docs/changing-web.md``
("The world").
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

KINDS = ("poisson", "traced", "grouped", "bursty", "static", "noise", "liar", "image", "index")
#: shares of the HTML pages of a host (the index comes on top, the images apart)
PAGE_MIX = {"poisson": 0.3, "traced": 0.15, "bursty": 0.15, "static": 0.2, "noise": 0.1, "liar": 0.1}
#: the corpus sources a ``traced`` page replays (``bench/traces/SOURCE.jsonl.gz``)
TRACE_SOURCES = ("endoflife-releases", "help-scraper", "rss-feeds", "tosback2")
#: a document needs this many versions to be replayed (its gaps carry its clustering)
TRACE_MIN_VERSIONS = 12
#: the histories a ``grouped`` host replays one service of: the committed tosback2 source
#: (terms of online services, crawled by EFF), so the world is the same from any checkout
#: (a trace looked for beside the checkout made a run and its rescore from another folder
#: two different worlds)
GROUP_TRACES = (Path(__file__).resolve().parent / "traces" / "tosback2.jsonl.gz",)
#: mean change intervals in passes
POISSON_MEDIAN = 1.0
POISSON_SIGMA = 1.0
NOISE_INTERVAL = 12.0
IMAGE_INTERVAL = 30.0
BURST_QUIET = 3.0
#: a liar's validators date from a week before the world started
LIAR_AGE = 7 * 86_400.0
#: how long before the run a static page last changed: log-uniform between these (seconds)
STATIC_AGE = (3 * 3_600.0, 90 * 86_400.0)
#: the share of its page's changes a figure changes with (at the same instant)
FIGURE_WITH_PAGE = 0.5

_WORDS = (
    "adaptive archive article board budget change city committee council crawl data deadline draft edition "
    "election energy event festival forecast garden harbour health history housing library market meeting "
    "museum network notice opening policy price programme project public railway report research result "
    "review river school science season service sport station story street summer theatre traffic update "
    "version village weather winter workshop"
).split()


@dataclass(frozen=True)
class Url:
    index: int  #: position in ``World.urls``
    host: int
    path: str
    kind: str
    size: int  #: body bytes of the stable part (pages) or of the whole (images)
    latency: float  #: the host's seconds before answering
    #: change instants, seconds after the world's origin, sorted
    changes: tuple[float, ...]
    #: how long before the origin version 0 began (its Last-Modified)
    age0: float
    #: a figure's page (its ``index``), None for a page
    owner: int | None = None

    @property
    def is_page(self) -> bool:
        return self.kind != "image"

    def version(self, t: float) -> int:
        """The version live at *t* seconds after the origin."""
        lo, hi = 0, len(self.changes)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.changes[mid] <= t:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def started(self, version: int) -> float:
        """When *version* began, seconds after the origin (version 0: before it)."""
        return -self.age0 if version == 0 else self.changes[version - 1]


def _poisson(rng: random.Random, mean: float, end: float) -> list[float]:
    out: list[float] = []
    t = rng.expovariate(1.0 / mean)
    while t <= end:
        out.append(t)
        t += rng.expovariate(1.0 / mean)
    return out


def _bursty(rng: random.Random, quiet: float, spacing: float, end: float) -> list[float]:
    """Quiet spells (exponential, mean *quiet*) then 3–8 changes *spacing*-ish apart."""
    out: list[float] = []
    t = rng.uniform(0.0, quiet)  # a random phase: not every page bursts at once
    while t <= end:
        for _ in range(rng.randint(3, 8)):
            t += rng.uniform(0.5, 3.0) * spacing
            if t > end:
                break
            out.append(t)
        t += rng.expovariate(1.0 / quiet)
    return out


@lru_cache(maxsize=1)
def _trace_gaps() -> tuple[tuple[float, ...], ...]:
    """Every corpus document's gaps between versions (seconds), in order, for
    the documents with :data:`TRACE_MIN_VERSIONS` versions or more."""
    folder = Path(__file__).resolve().parent / "traces"
    out = []
    for source in TRACE_SOURCES:
        with gzip.open(folder / f"{source}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                versions = sorted({float(v) for v in json.loads(line)["versions"]})
                gaps = tuple(b - a for a, b in zip(versions, versions[1:]))
                if len(gaps) + 1 >= TRACE_MIN_VERSIONS:
                    out.append(gaps)
    if not out:
        raise RuntimeError(f"no document with {TRACE_MIN_VERSIONS}+ versions in bench/traces")
    return tuple(out)


def _traced(rng: random.Random, mean: float, end: float) -> list[float]:
    """A real document's gaps, in their order from a random one on (wrapping
    round), scaled so that their mean is *mean*: the history's clustering
    (bursts of short gaps between long quiet spells) at the world's scale."""
    docs = _trace_gaps()
    gaps = docs[rng.randrange(len(docs))]
    scale = mean / (sum(gaps) / len(gaps))
    i = rng.randrange(len(gaps))
    out: list[float] = []
    t = rng.uniform(0.0, gaps[i] * scale)  # a random phase inside the first gap
    while t <= end:
        out.append(t)
        i = (i + 1) % len(gaps)
        t += gaps[i] * scale
    return out


@lru_cache(maxsize=1)
def _services() -> tuple[tuple[tuple[float, ...], ...], ...]:
    """The services with two documents or more of the first of :data:`GROUP_TRACES` that exists:
    each one's documents' versions (seconds), in the file's order."""
    path = next((p for p in GROUP_TRACES if p.exists()), None)
    if path is None:
        raise RuntimeError("no trace for grouped pages: " + ", ".join(map(str, GROUP_TRACES)))
    groups: dict[str, list[tuple[float, ...]]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        for line in fh:
            if line.strip():
                row = json.loads(line)
                versions = tuple(sorted({float(v) for v in row["versions"]}))
                if len(versions) >= 2:
                    groups.setdefault(str(row.get("service", "")), []).append(versions)
    return tuple(tuple(docs) for _, docs in sorted(groups.items()) if len(docs) >= 2)


def _grouped(rng: random.Random, count: int, unit: float, end: float) -> list[list[float]]:
    """The change instants of *count* pages replaying real services' documents together.

    A service with two documents or more is drawn, then one shared moment
    in its history; a page per document replays it from that moment on, all
    at one time scale, chosen so that the service's mean interval between a
    document's versions is drawn as a ``poisson`` page's (*unit*: one pass),
    and the history repeats itself after its end.  The documents' changes
    keep their real order and coincidences: what one commit of the history
    changed together changes at one instant here.  While pages remain, the
    next service is drawn (another group on the same host, from its own moment).
    """
    services = list(_services())
    out: list[list[float]] = []
    while len(out) < count:
        docs = services.pop(rng.randrange(len(services))) if services else _services()[0]
        mean = POISSON_MEDIAN * unit * math.exp(POISSON_SIGMA * rng.gauss(0.0, 1.0))
        first, last = min(d[0] for d in docs), max(d[-1] for d in docs)
        raw_mean = sum(d[-1] - d[0] for d in docs) / sum(len(d) - 1 for d in docs)
        scale, period = mean / raw_mean, last - first + raw_mean
        moment = rng.uniform(first, last)
        for versions in docs[: count - len(out)]:
            changes = [
                t
                for cycle in range(int(end / scale / period) + 2)
                for v in versions
                if 0.0 < (t := (v + cycle * period - moment) * scale) <= end
            ]
            out.append(sorted(changes))
    return out


class World:
    """Every URL of one copy of the site, with its class, size and change instants.

    *delay* is the politeness delay every crawler uses; *horizon* how many
    seconds after the origin the timeline must cover (the run plus margin).
    *grouped* is the share of each host's pages that replay one real
    service's documents together (:func:`_grouped`), taken from the
    ``poisson`` share; 0 (the default) leaves the world as it was without it.
    """

    def __init__(
        self, hosts: int, pages: int, images: int, delay: float, horizon: float, seed: int = 13, grouped: float = 0.0
    ) -> None:
        if hosts < 1 or pages < 5 or images < 0 or delay <= 0 or horizon <= 0 or not 0.0 <= grouped <= 1.0:
            raise ValueError("need hosts >= 1, pages >= 5, images >= 0, delay > 0, horizon > 0 and 0 <= grouped <= 1")
        self.hosts, self.pages, self.images = hosts, pages, images
        self.delay, self.horizon, self.seed, self.grouped = delay, horizon, seed, grouped
        self.per_host = 1 + pages + images
        #: one polite pass over a host, seconds: the time unit of every rate
        self.pass_seconds = self.per_host * delay
        self.urls: list[Url] = []
        self.by_path: dict[tuple[int, str], Url] = {}
        for host in range(hosts):
            self._build_host(host)

    def _build_host(self, host: int) -> None:
        rng = random.Random(f"{self.seed}|host|{host}")
        # 20-200 ms at a 3 s delay, scaled with it like every other time
        latency = round(rng.uniform(0.02, 0.2) * self.delay / 3.0, 4)
        counts = {k: int(round(share * self.pages)) for k, share in PAGE_MIX.items()}
        counts["poisson"] += self.pages - sum(counts.values())
        if self.grouped:
            counts["grouped"] = min(counts["poisson"], int(round(self.grouped * self.pages)))
            counts["poisson"] -= counts["grouped"]
        kinds = [k for k, n in counts.items() for _ in range(n)]
        rng.shuffle(kinds)
        unit = self.pass_seconds
        group: list[list[float]] = []
        if counts.get("grouped"):
            group = _grouped(random.Random(f"{self.seed}|group|{host}"), counts["grouped"], unit, self.horizon)
        specs = [("/", "index")]
        specs += [(f"/p/{n}.html", kind) for n, kind in enumerate(kinds)]
        specs += [(f"/img/{n}.jpg", "image") for n in range(self.images)]
        for path, kind in specs:
            r = random.Random(f"{self.seed}|{host}|{path}")
            if kind == "image":
                size = int(math.exp(r.uniform(math.log(15_000), math.log(120_000))))
            else:
                size = int(math.exp(r.uniform(math.log(2_500), math.log(60_000))))
            if kind in ("poisson", "liar"):
                mean = POISSON_MEDIAN * unit * math.exp(POISSON_SIGMA * r.gauss(0.0, 1.0))
                changes = _poisson(r, mean, self.horizon)
            elif kind == "grouped":
                changes = group.pop()
            elif kind == "traced":
                mean = POISSON_MEDIAN * unit * math.exp(POISSON_SIGMA * r.gauss(0.0, 1.0))
                changes = _traced(r, mean, self.horizon)
            elif kind == "noise":
                changes = _poisson(r, NOISE_INTERVAL * unit, self.horizon)
            elif kind == "image":
                owner = self._owner(host, int(path[len("/img/") : -len(".jpg")]))
                own = _poisson(r, IMAGE_INTERVAL * unit, self.horizon)
                changes = sorted({*own, *(t for t in owner.changes if r.random() < FIGURE_WITH_PAGE)})
            elif kind == "bursty":
                changes = _bursty(r, BURST_QUIET * unit, self.delay, self.horizon)
            else:
                changes = []
            if kind == "liar":
                age0 = LIAR_AGE
            elif kind == "static":
                age0 = math.exp(r.uniform(math.log(STATIC_AGE[0]), math.log(STATIC_AGE[1])))
            else:
                age0 = r.uniform(0.1, 2.0) * unit
            owner_index = self._owner(host, int(path[len("/img/") : -len(".jpg")])).index if kind == "image" else None
            url = Url(len(self.urls), host, path, kind, size, latency, tuple(changes), age0, owner_index)
            self.urls.append(url)
            self.by_path[(host, path)] = url

    def host_urls(self, host: int) -> list[Url]:
        return [u for u in self.urls if u.host == host]

    def _owner(self, host: int, figure: int) -> Url:
        """The page figure number *figure* of *host* is embedded in (pages in
        path order, one figure each, round again if there are more figures)."""
        return self.by_path[(host, f"/p/{figure % self.pages}.html")]

    def figures(self, page: Url) -> list[Url]:
        """The figures embedded in *page*."""
        return [u for u in self.host_urls(page.host) if u.owner == page.index]

    # -- validators --------------------------------------------------------------------------

    def etag(self, url: Url, version: int) -> str | None:
        if url.kind == "noise":
            return None
        return f'"{url.host}-{url.index}-{0 if url.kind == "liar" else version}"'

    def last_modified(self, url: Url, version: int, origin: float) -> float | None:
        """Unix seconds behind the Last-Modified header (None: no header)."""
        if url.kind == "noise":
            return None
        return origin + url.started(0 if url.kind == "liar" else version)

    # -- bytes -----------------------------------------------------------------------------------

    def body(self, url: Url, version: int, now: float = 0.0) -> bytes:
        """The bytes of *version* (a noise page adds the clock at *now* and a fresh token)."""
        if url.kind == "image":
            return _image(self.seed, url.host, url.index, url.size, version)
        figures = tuple(f.path for f in self.figures(url))
        html = _page(self.seed, url.host, url.index, url.size, version, self._links(url), figures)
        if url.kind != "noise":
            return html
        token = random.Random(f"{now!r}|{url.index}").getrandbits(64)
        clock = f'<p class="clock">Served at {now:.3f} · request token {token:016x}</p>'
        return html.replace(b"<!--clock-->", clock.encode())

    def _links(self, url: Url) -> tuple[str, ...]:
        siblings = self.host_urls(url.host)
        pages = [u.path for u in siblings if u.kind not in ("image", "index")]
        if url.kind == "index":
            return tuple(pages)
        r = random.Random(f"{self.seed}|links|{url.index}")
        return ("/", *r.sample(pages, min(5, len(pages))))


def version_of(body: bytes) -> int | None:
    """The version id in a body (page or image), None when absent (a stopped or empty body)."""
    for marker, end in ((b'<meta name="bench-version" content="', b'"'), (b"bench-version:", b";")):
        start = body.find(marker, 0, 512)
        if start >= 0:
            start += len(marker)
            stop = body.find(end, start, start + 20)
            digits = body[start:stop] if stop > 0 else b""
            if digits.isdigit():
                return int(digits)
    return None


@lru_cache(maxsize=1)
def _paragraphs(seed: int) -> tuple[str, ...]:
    r = random.Random(f"{seed}|paragraphs")
    out = []
    for _ in range(300):
        words = [r.choice(_WORDS) for _ in range(r.randint(40, 110))]
        out.append(" ".join(words).capitalize() + ".")
    return tuple(out)


@lru_cache(maxsize=4096)
def _page(
    seed: int, host: int, index: int, size: int, version: int, links: tuple[str, ...], figures: tuple[str, ...] = ()
) -> bytes:
    """A page: stable article text of about *size* bytes, a news block per version, links, its figures."""
    paras = _paragraphs(seed)
    stable = random.Random(f"{seed}|{index}|stable")
    news = random.Random(f"{seed}|{index}|v{version}")
    head = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta name="bench-version" content="{version}">\n'
        f"<title>Host {host} page {index}</title></head>\n<body>\n<nav>"
        + " ".join(f'<a href="{p}">{p}</a>' for p in links)
        + f"</nav>\n<!--clock-->\n<h1>Page {index}</h1>\n"
        f'<section class="news"><h2>Update {version}</h2><p>{news.choice(paras)}</p>'
        f"<p>{news.choice(paras)}</p>"
        + "".join(f'<figure><img src="{f}" alt="figure"></figure>' for f in figures)
        + "</section>\n<article>\n"
    )
    parts = [head]
    length = len(head)
    while length < size:
        p = f"<p>{stable.choice(paras)}</p>\n"
        parts.append(p)
        length += len(p)
    parts.append("</article>\n</body></html>\n")
    return "".join(parts).encode()


@lru_cache(maxsize=1)
def _noise_block(seed: int) -> bytes:
    return random.Random(f"{seed}|image-bytes").randbytes(256 * 1024)


@lru_cache(maxsize=1024)
def _image(seed: int, host: int, index: int, size: int, version: int) -> bytes:
    """JPEG framing (SOI, a COM segment with the version, EOI) around seeded bytes."""
    comment = f"bench-version:{version};host {host} image {index}".encode()
    block = _noise_block(seed)
    offset = int.from_bytes(hashlib.sha256(f"{index}|{version}".encode()).digest()[:4], "big") % (len(block) - size)
    com = b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment
    return b"\xff\xd8" + com + block[offset : offset + size] + b"\xff\xd9"
