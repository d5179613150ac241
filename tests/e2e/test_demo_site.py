"""Tests of the demo site (``python -m testsite.demo``).

The demo site is the ground truth for demos and end-to-end tests of the
adaptive crawler, so its promises are pinned down here: pages change exactly
on their published schedule, validators behave per page as documented (honour,
ignore, absent, lie), the special change-detection pages change only what they
claim to, and ``/_demo/schedule`` tells the truth.

HTTP tests talk to a real child process whose clock is a file the test
rewrites (``--clock-file``), so time only moves when a test says so: no sleeps,
no flakiness, every test well under a second.
"""

from __future__ import annotations

import http.client
import json
import re
import struct
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from email.utils import formatdate
from html.parser import HTMLParser
from typing import Any

import pytest

from testsite.demo import (
    Catalogue,
    Change,
    DemoSiteProcess,
    Media,
    Role,
    Validators,
    build_catalogue,
    make_site,
)
from testsite.demo.cli import loopback_host, main
from testsite.demo.png import PNG_SIGNATURE, gradient_png
from testsite.demo.render import render_robots
from testsite.httputil import etag_matches, http_date
from testsite.schedule import Periodic, Poisson

#: Wall-clock instant of demo time 0 for the shared server (a fixed, arbitrary date).
START = 1_700_000_000.0

Response = tuple[int, Mapping[str, str], bytes]


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSiteProcess]:
    """One demo site child process for the module, with a test-controlled clock."""
    clock_file = tmp_path_factory.mktemp("demo-clock") / "now"
    with DemoSiteProcess(clock_file=clock_file, start_time=START, seed=0) as proc:
        yield proc


@pytest.fixture
def demo(site: DemoSiteProcess) -> DemoSiteProcess:
    """The shared site with its clock reset to demo time 0."""
    site.set_demo_time(0.0)
    return site


def fetch(
    site: DemoSiteProcess,
    path: str,
    headers: Mapping[str, str] | None = None,
    method: str = "GET",
) -> Response:
    """One plain HTTP request; no redirects followed, no exceptions on 3xx/4xx."""
    conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=5)
    try:
        conn.request(method, path, headers=dict(headers or {}))
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def truth(site: DemoSiteProcess, path: str) -> dict[str, Any]:
    """The ``/_demo/schedule`` entry for ``path`` at the site's current time."""
    status, _, body = fetch(site, f"/_demo/schedule?path={path}")
    assert status == 200
    (entry,) = json.loads(body)["pages"]
    return entry


def advance_past_change(site: DemoSiteProcess, path: str) -> None:
    """Move the clock just past ``path``'s next version change."""
    next_change = truth(site, path)["next_change"]
    assert next_change is not None, f"{path} never changes"
    site.set_time(next_change + 0.01)


class _VisibleText(HTMLParser):
    """Collects text a browser would show: no script/style/head, no comments."""

    HIDDEN = frozenset({"script", "style", "head"})

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.chunks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth and data.strip():
            self.chunks.append(data.strip())


def visible_text(body: bytes) -> str:
    parser = _VisibleText()
    parser.feed(body.decode("utf-8"))
    parser.close()
    return " ".join(parser.chunks)


def itemprop(body: bytes, name: str) -> str:
    """Text of the first ``itemprop=name`` element (the demo's markup is regular)."""
    match = re.search(rf'itemprop="{name}"[^>]*>([^<]*)<', body.decode("utf-8"))
    assert match, name
    return match.group(1)


# --------------------------------------------------------------------------
# Pure parts: catalogue, schedules, PNG, robots, CLI validation
# --------------------------------------------------------------------------


def test_catalogue_is_a_connected_site_of_the_promised_size() -> None:
    catalogue = build_catalogue(0)
    html = catalogue.html_pages()
    assert 30 <= len(html) <= 60
    nav = [p.path for p in catalogue if p.role in (Role.INDEX, Role.SECTION)]
    for page in html:
        for target in (*page.links, *page.images, *page.stylesheets):
            assert catalogue.get(target) is not None, (page.path, target)
        if page.role in (Role.ARTICLE, Role.PRODUCT):
            assert 1 <= len(page.images) <= 2, page.path
    seen, todo = {"/"}, deque(["/"])
    while todo:
        current = catalogue.by_path[todo.popleft()]
        for target in (*current.links, *nav):
            if target not in seen and catalogue.by_path[target].media is Media.HTML:
                seen.add(target)
                todo.append(target)
    assert seen == {p.path for p in html}
    assert "/private/secret.html" in catalogue.by_path["/"].links
    assert any(p.stylesheets for p in html) and not all(p.stylesheets for p in html)


def test_catalogue_mixes_every_behaviour() -> None:
    catalogue = build_catalogue(0)
    html = catalogue.html_pages()
    assert {p.validators for p in html} == set(Validators)
    assert {p.change for p in html} == set(Change)
    kinds = {p.schedule.describe(1.0)["kind"] for p in html}
    assert kinds == {"periodic", "poisson", "never", "per-request"}
    periods = {p.schedule.describe(1.0).get("period") for p in html} - {None}
    assert periods == {15.0, 60.0, 300.0}
    (liar,) = (p for p in html if p.validators is Validators.LIE)
    assert liar.path == "/lab/liar.html"
    images = [p for p in catalogue if p.media is Media.PNG]
    assert sum(p.schedule.describe(1.0)["kind"] == "never" for p in images) > len(images) // 2


def test_catalogue_is_deterministic_per_seed() -> None:
    a, b, c = build_catalogue(0), build_catalogue(0), build_catalogue(1)
    assert [p.path for p in a] == [p.path for p in c]

    def phases(catalogue: Catalogue) -> list[object]:
        return [p.schedule.describe(1.0).get("phase") for p in catalogue]

    assert phases(a) == phases(b) != phases(c)


def test_periodic_schedule_math() -> None:
    schedule = Periodic(15.0, 5.0)
    assert schedule.at(-3.0) == schedule.at(0.0)
    first = schedule.at(0.0)
    assert (first.version, first.started, first.ends) == (0, 0.0, 10.0)
    assert schedule.at(9.99).version == 0
    second = schedule.at(10.0)
    assert (second.version, second.started, second.ends) == (1, 10.0, 25.0)
    assert schedule.at(40.0).version == 3
    with pytest.raises(ValueError):
        Periodic(15.0, 15.0)


def test_poisson_schedule_is_a_pure_function_of_seed_and_time() -> None:
    grid = [i * 7.5 for i in range(2000)]
    a, b = Poisson(30.0, "0|/x|poisson"), Poisson(30.0, "0|/x|poisson")
    versions = [a.at(t).version for t in grid]
    # A fresh instance queried in reverse order gives the same answers.
    assert [b.at(t).version for t in reversed(grid)][::-1] == versions
    assert versions == sorted(versions)
    other = [Poisson(30.0, "1|/x|poisson").at(t).version for t in grid]
    assert other != versions
    # ~500 changes expected in 15000 s at a 30 s mean; allow a wide margin.
    assert 400 < versions[-1] < 600
    span = a.at(1234.5)
    assert span.ends is not None and span.started <= 1234.5 < span.ends
    assert a.at(span.ends).version == span.version + 1


def test_speed_scales_wall_clock_periods() -> None:
    now = [1000.0]
    site = make_site(clock=lambda: now[0], speed=10.0, seed=0)
    model = site.model
    page = model.catalogue.get("/lab/conditional.html")
    assert page is not None
    state = model.state(page, now[0])
    assert state.next_change is not None
    assert 0 < state.next_change - 1000.0 <= 1.5  # 15 demo seconds at 10x
    after = model.state(page, state.next_change + 0.001)
    assert after.version == state.version + 1
    assert after.etag != state.etag
    assert model.state(page, state.next_change + 1.5).version == state.version + 2


def test_png_encoder_produces_valid_png() -> None:
    data = gradient_png(7, 3, (255, 0, 0), (0, 0, 255))
    assert data.startswith(PNG_SIGNATURE)
    chunks, offset = [], len(PNG_SIGNATURE)
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        payload = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + payload) & 0xFFFFFFFF == crc
        chunks.append((kind, payload))
        offset += 12 + length
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">II", chunks[0][1][:8]) == (7, 3)
    assert len(zlib.decompress(chunks[1][1])) == 3 * (1 + 3 * 7)


def test_robots_crawl_delay_is_opt_in() -> None:
    assert render_robots(None) == b"User-agent: *\nDisallow: /private/\n"
    assert b"Crawl-delay: 2.5\n" in render_robots(2.5)
    assert make_site(clock=lambda: 0.0, crawl_delay=3.0).model.crawl_delay == 3.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1.2.3", "127.1.2.3"),
        ("localhost", "127.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "::1"),
    ],
)
def test_loopback_hosts_are_accepted(value: str, expected: str) -> None:
    assert loopback_host(value) == expected


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com", "8.8.8.8"])
def test_non_loopback_hosts_are_refused(host: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--host", host, "--port", "0"])
    assert exc.value.code == 2
    assert "not a loopback address" in capsys.readouterr().err


def test_etag_matching_and_http_dates() -> None:
    assert etag_matches('"a", "p1-v2"', '"p1-v2"')
    assert etag_matches('W/"p1-v2"', '"p1-v2"')
    assert etag_matches("*", '"p1-v2"')
    assert not etag_matches('"p1-v3"', '"p1-v2"')
    assert http_date(START + 0.9) == formatdate(START, usegmt=True)


# --------------------------------------------------------------------------
# Over HTTP, against the child process
# --------------------------------------------------------------------------


def test_versions_change_exactly_on_schedule(demo: DemoSiteProcess) -> None:
    path = "/lab/conditional.html"
    status, headers, body = fetch(demo, path)
    assert status == 200 and headers["x-demo-version"] == "0"
    assert fetch(demo, path)[2] == body  # same version => identical bytes
    entry = truth(demo, path)
    assert entry["schedule"]["period"] == 15.0
    demo.set_time(entry["next_change"] - 0.01)
    assert fetch(demo, path)[2] == body
    advance_past_change(demo, path)
    _, headers2, body2 = fetch(demo, path)
    assert headers2["x-demo-version"] == "1"
    assert body2 != body and b"Revision 1" in body2
    assert headers2["etag"] != headers["etag"]
    assert headers2["last-modified"] != headers["last-modified"]


def test_poisson_page_follows_published_change_times(demo: DemoSiteProcess) -> None:
    path = "/news/article-06.html"
    assert truth(demo, path)["schedule"]["kind"] == "poisson"
    for expected in range(1, 4):
        advance_past_change(demo, path)
        assert fetch(demo, path)[1]["x-demo-version"] == str(expected)


def test_honoured_validators_answer_304(demo: DemoSiteProcess) -> None:
    path = "/lab/conditional.html"
    advance_past_change(demo, path)  # version 1: Last-Modified is after START
    status, headers, body = fetch(demo, path)
    etag, last_modified = headers["etag"], headers["last-modified"]
    assert status == 200 and re.fullmatch(r'"p\d+-v1"', etag)

    status, headers304, body304 = fetch(demo, path, {"If-None-Match": etag})
    assert (status, body304) == (304, b"")
    assert headers304["etag"] == etag
    assert headers304.get("content-length") in (None, str(len(body)))
    assert fetch(demo, path, {"If-Modified-Since": last_modified})[0] == 304

    earlier = formatdate(truth(demo, path)["version_started"] - 1, usegmt=True)
    assert fetch(demo, path, {"If-Modified-Since": earlier})[0] == 200
    # If-None-Match takes precedence over If-Modified-Since.
    both = {"If-None-Match": '"stale"', "If-Modified-Since": last_modified}
    assert fetch(demo, path, both)[0] == 200

    advance_past_change(demo, path)
    status, _, body2 = fetch(demo, path, {"If-None-Match": etag})
    assert status == 200 and body2 != body
    assert fetch(demo, path, {"If-Modified-Since": last_modified})[0] == 200


def test_ignoring_page_sends_validators_but_always_200(demo: DemoSiteProcess) -> None:
    path = "/lab/ignores-conditional.html"
    status, headers, body = fetch(demo, path)
    assert status == 200 and "etag" in headers and "last-modified" in headers
    conditional = {
        "If-None-Match": headers["etag"],
        "If-Modified-Since": headers["last-modified"],
    }
    assert fetch(demo, path, conditional)[::2] == (200, body)
    assert truth(demo, path)["answers_304"] is False


def test_page_without_validators(demo: DemoSiteProcess) -> None:
    status, headers, _ = fetch(demo, "/lab/no-validators.html", {"If-None-Match": "*"})
    assert status == 200
    assert "etag" not in headers and "last-modified" not in headers


def test_lying_page_keeps_validators_while_content_changes(
    demo: DemoSiteProcess,
) -> None:
    path = "/lab/liar.html"
    _, headers, body = fetch(demo, path)
    for expected in (1, 2):
        advance_past_change(demo, path)
        status, later, body_later = fetch(demo, path)
        assert status == 200 and later["x-demo-version"] == str(expected)
        assert body_later != body
        assert (later["etag"], later["last-modified"]) == (
            headers["etag"],
            headers["last-modified"],
        )
    # A crawler trusting validators is told nothing changed.
    status, _, empty = fetch(demo, path, {"If-None-Match": headers["etag"]})
    assert (status, empty) == (304, b"")
    assert fetch(demo, path, {"If-Modified-Since": headers["last-modified"]})[0] == 304


def test_timestamp_page_differs_on_every_request_only_in_its_timestamp(
    demo: DemoSiteProcess,
) -> None:
    path = "/lab/timestamp.html"
    (_, headers, first), (_, _, second) = fetch(demo, path), fetch(demo, path)
    assert first != second
    assert "etag" not in headers
    generated = re.compile(rb"<p class=\"generated\">Generated at [^<]*</p>")
    assert generated.search(first)
    assert generated.sub(b"", first) == generated.sub(b"", second)


def test_markup_only_page_keeps_its_visible_text(demo: DemoSiteProcess) -> None:
    path = "/lab/markup.html"
    body = fetch(demo, path)[2]
    advance_past_change(demo, path)
    body2 = fetch(demo, path)[2]
    assert body2 != body
    assert visible_text(body2) == visible_text(body)


def test_price_page_changes_price_but_not_layout(demo: DemoSiteProcess) -> None:
    path = "/shop/product-01.html"
    body = fetch(demo, path)[2]
    advance_past_change(demo, path)
    body2 = fetch(demo, path)[2]
    price, price2 = itemprop(body, "price"), itemprop(body2, "price")
    assert price != price2
    assert body.replace(price.encode(), b"PRICE") == body2.replace(price2.encode(), b"PRICE")


def test_layout_page_changes_layout_but_not_data(demo: DemoSiteProcess) -> None:
    path = "/shop/product-06.html"
    body = fetch(demo, path)[2]
    advance_past_change(demo, path)
    body2 = fetch(demo, path)[2]
    assert body2 != body
    assert re.findall(rb"<(\w+)", body) != re.findall(rb"<(\w+)", body2)
    for field in ("name", "price", "description"):
        assert itemprop(body, field) == itemprop(body2, field)


def test_robots_txt_blocks_only_private(demo: DemoSiteProcess) -> None:
    status, headers, body = fetch(demo, "/robots.txt")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert body == b"User-agent: *\nDisallow: /private/\n"
    assert b'href="/private/secret.html"' in fetch(demo, "/")[2]
    assert fetch(demo, "/private/secret.html")[0] == 200  # robots.txt is advisory
    assert truth(demo, "/private/secret.html")["robots_allowed"] is False


def test_images_are_png_and_pages_link_assets(demo: DemoSiteProcess) -> None:
    catalogue = build_catalogue(0)
    for page in catalogue:
        if page.media is Media.PNG:
            status, headers, body = fetch(demo, page.path)
            assert status == 200 and headers["content-type"] == "image/png"
            assert body.startswith(PNG_SIGNATURE), page.path
    article = fetch(demo, "/blog/post-01.html")[2]
    assert b'<img src="/images/photo-' in article
    assert b'<link rel="stylesheet" href="/static/site.css">' in article
    status, headers, css = fetch(demo, "/static/site.css")
    assert status == 200 and headers["content-type"].startswith("text/css") and b"body" in css


def test_schedule_endpoint_tells_the_truth(demo: DemoSiteProcess) -> None:
    demo.set_demo_time(1234.0)
    status, headers, body = fetch(demo, "/_demo/schedule")
    assert status == 200 and headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["demo_time"] == pytest.approx(1234.0)
    assert (doc["speed"], doc["seed"], doc["origin"]) == (1.0, 0, START)
    pages = {p["path"]: p for p in doc["pages"]}
    assert set(pages) == {p.path for p in build_catalogue(0)}
    for path in (
        "/",
        "/news/",
        "/news/article-06.html",
        "/lab/liar.html",
        "/images/photo-01.png",
    ):
        _, page_headers, _ = fetch(demo, path)
        assert page_headers["x-demo-version"] == str(pages[path]["version"]), path
        assert page_headers.get("etag") == pages[path]["etag"], path
        assert page_headers.get("last-modified") == pages[path]["last_modified"], path
    honouring = {p for p, e in pages.items() if e["answers_304"]}
    assert "/lab/conditional.html" in honouring and "/lab/liar.html" in honouring
    assert "/lab/ignores-conditional.html" not in honouring
    assert fetch(demo, "/_demo/schedule?path=/nope")[0] == 404


def test_head_redirects_and_errors(demo: DemoSiteProcess) -> None:
    _, _, body = fetch(demo, "/news/")
    status, headers, head_body = fetch(demo, "/news/", method="HEAD")
    assert (status, head_body) == (200, b"")
    assert headers["content-length"] == str(len(body))
    status, headers, _ = fetch(demo, "/news")
    assert (status, headers["location"]) == (301, "/news/")
    assert fetch(demo, "/no/such/page.html")[0] == 404
    status, headers, _ = fetch(demo, "/", method="POST")
    assert status == 405 and headers["allow"] == "GET, HEAD"


def test_demo_site_process_reports_startup_failure() -> None:
    """A second site on an occupied port fails fast with a clear error, not a hang."""
    with DemoSiteProcess() as first:
        clash = DemoSiteProcess(port=first.port, startup_timeout=10.0)
        with pytest.raises(RuntimeError, match="exited early"):
            clash.start()
