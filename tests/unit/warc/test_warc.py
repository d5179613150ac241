"""The WARC writer, built directly: records, revisits, rotation, repair."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from scrapy_adaptive.change.digest import payload_digest
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.integration.downloadermiddlewares.warc import exchange_of
from scrapy_adaptive.warc.writer import (
    IDENTICAL_PROFILE,
    NOT_MODIFIED_PROFILE,
    HttpExchange,
    WarcWriter,
)

warcio = pytest.importorskip("warcio")
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

URL = "http://127.0.0.1:8000/page"
NAME = re.compile(r"^adaptive-\d{17}-\d{5}\.warc\.gz$")


def exchange(
    body: bytes = b"<p>one</p>", status: int = 200, *, headers_only: bool = False, at: float = 1.8e9
) -> HttpExchange:
    return HttpExchange(
        url=URL,
        method="GET",
        request_headers=[("User-Agent", "test")],
        request_body=b"",
        status=status,
        protocol="HTTP/1.1",
        response_headers=[("Content-Type", "text/html"), ("ETag", '"v1"')],
        body=b"" if headers_only else body,
        headers_only=headers_only,
        fetched=at,
    )


def read_records(folder: Path) -> list[tuple[str, Any]]:
    """Every record of every WARC file, in file order: (file name, type,
    WARC headers, HTTP headers + payload)."""
    out = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as file:
            for record in ArchiveIterator(file, check_digests=True):
                http = record.http_headers.to_bytes() if record.http_headers is not None else b""
                out.append((path.name, record.rec_type, record.rec_headers, http + record.content_stream().read()))
    return out


def warcio_check(folder: Path) -> None:
    """warcio's own checker verifies every block and payload digest."""
    files = [str(p) for p in sorted(folder.glob("*.warc.gz"))]
    check = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", "-v", *files], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest" in check.stdout and "fail" not in check.stdout.lower(), check.stdout


@pytest.fixture
def writer(tmp_path: Path) -> Any:
    w = WarcWriter(str(tmp_path / "warc"), info={"software": "test"})
    w.open()
    yield w
    w.close()


def test_new_body_response_same_body_revisit_then_304_refers_to_the_latest_capture(
    writer: WarcWriter, tmp_path: Path
) -> None:
    assert writer.archive(exchange(b"<p>one</p>", at=1.8e9)) == "response"
    assert writer.archive(exchange(b"<p>one</p>", at=1.8e9 + 60)) == "revisit"
    assert writer.archive(exchange(b"<p>two</p>", at=1.8e9 + 120)) == "response"
    not_modified = exchange(status=304, headers_only=True, at=1.8e9 + 180)
    not_modified.response_headers = [("ETag", '"v2"'), ("Content-Length", "0"), ("Cache-Control", "max-age=60")]
    assert writer.archive(not_modified) == "revisit"
    assert writer.archive(exchange(status=200, headers_only=True, at=1.8e9 + 240)) == "revisit"  # an abort
    writer.close()
    folder = tmp_path / "warc"
    records = read_records(folder)
    assert NAME.match(records[0][0])
    types = [r[1] for r in records]
    assert types == ["warcinfo"] + ["response", "request", "revisit", "request"] * 2 + ["revisit", "request"]
    assert b"software: test" in records[0][3] and records[0][2].get_header("WARC-Filename") == records[0][0]
    by_id = {r[2].get_header("WARC-Record-ID"): r for r in records}
    responses = [r for r in records if r[1] == "response"]
    assert [r[3].split(b"\r\n\r\n", 1)[1] for r in responses] == [b"<p>one</p>", b"<p>two</p>"]
    revisits = [r for r in records if r[1] == "revisit"]
    assert [r[2].get_header("WARC-Profile") for r in revisits] == [IDENTICAL_PROFILE] + [NOT_MODIFIED_PROFILE] * 2
    for revisit, original in zip(revisits, [responses[0], responses[1], responses[1]], strict=True):
        headers = revisit[2]
        target = by_id[headers.get_header("WARC-Refers-To")]
        assert target is original and target[1] == "response"  # never a revisit
        assert headers.get_header("WARC-Refers-To-Target-URI") == original[2].get_header("WARC-Target-URI")
        assert headers.get_header("WARC-Refers-To-Date") == original[2].get_header("WARC-Date")
        assert headers.get_header("WARC-Payload-Digest") == original[2].get_header("WARC-Payload-Digest")
        assert headers.get_header("WARC-Payload-Digest") != payload_digest(b"")
    # a 304: the stored response's status and headers as the 304 updates them
    # (its fresh fields, not its Content-Length), so that replay serves the page
    assert revisits[1][3] == (
        b'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: "v2"\r\nCache-Control: max-age=60\r\n\r\n'
    )
    for request, response in zip(
        [r for r in records if r[1] == "request"], [r for r in records if r[1] in ("response", "revisit")], strict=True
    ):
        assert request[2].get_header("WARC-Concurrent-To") == response[2].get_header("WARC-Record-ID")
        assert request[3].startswith(b"GET /page HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n")
    assert responses[0][2].get_header("WARC-Date") == "2027-01-15T08:00:00.000000Z"
    assert all(r[2].protocol == "WARC/1.1" for r in records)
    warcio_check(folder)


def test_a_304_without_a_capture_writes_nothing_and_an_empty_body_is_never_a_capture(writer: WarcWriter) -> None:
    assert writer.archive(exchange(status=304, headers_only=True)) is None
    assert writer.archive(exchange(b"")) == "response"
    assert writer.archive(exchange(b"")) == "response"  # not a revisit of an empty payload
    assert writer.archive(exchange(status=304, headers_only=True)) is None
    assert writer.counts == {"files": 1, "revisit_without_capture": 2, "request": 2, "response": 2}


def test_files_rotate_by_size_each_starting_with_warcinfo_and_revisits_reach_across(tmp_path: Path) -> None:
    folder = tmp_path / "warc"
    w = WarcWriter(str(folder), max_size=600)
    w.open()
    for i in range(4):
        w.archive(exchange(b"x" * 500 + str(i).encode(), at=1.8e9 + i))
    assert w.archive(exchange(b"x" * 500 + b"3", at=1.8e9 + 9)) == "revisit"
    w.close()
    names = sorted(p.name for p in folder.glob("*.warc.gz"))
    # every capture filled a file; the last file holds only its warcinfo
    assert len(names) == 6 and all(NAME.match(n) for n in names)
    assert [n.rsplit("-", 1)[1] for n in names] == [f"{i:05d}.warc.gz" for i in range(6)]
    by_file: dict[str, list[str]] = {}
    for name, kind, _headers, _payload in read_records(folder):
        by_file.setdefault(name, []).append(kind)
    assert all(kinds[0] == "warcinfo" for kinds in by_file.values())
    # gzip per record: each file is a series of members, one per record
    with gzip.open(folder / names[0], "rb") as file:
        assert file.read().count(b"WARC/1.1\r\n") == 3
    warcio_check(folder)


def test_a_kill_mid_record_is_cut_off_and_only_durable_captures_are_revisited(tmp_path: Path) -> None:
    """Killed after a capture was written but before it was made durable:
    the index does not know it, so the next fetch writes a response again
    (at least once) instead of a revisit that might refer to nothing; the
    half-written record a kill leaves is cut off at the next open."""
    folder = tmp_path / "warc"
    w = WarcWriter(str(folder))
    w.open()
    w.archive(exchange(b"<p>durable</p>", at=1.8e9))
    w.make_durable()
    w.archive(exchange(b"<p>not durable</p>", at=1.8e9 + 1))
    assert w.file is not None
    w.file.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" * 50)[:40])  # a record cut by the kill
    w.file.close()  # the bytes the OS had; no make_durable, no close()
    w.index.close()
    first = next(folder.glob("*.warc.gz"))

    again = WarcWriter(str(folder))
    again.open()
    assert again.archive(exchange(b"<p>durable</p>", at=1.8e9 + 10)) == "revisit"
    assert again.archive(exchange(b"<p>not durable</p>", at=1.8e9 + 11)) == "response"
    again.close()
    assert [r[1] for r in read_records(folder) if r[0] == first.name] == ["warcinfo"] + ["response", "request"] * 2
    warcio_check(folder)


def test_a_bad_prefix_is_refused_with_the_setting_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ADAPTIVE_WARC_PREFIX \('a/b'\)"):
        WarcWriter(str(tmp_path), prefix="a/b")


def test_credentials_are_redacted_in_request_records_unless_kept() -> None:
    secret = {"Authorization": "Basic c2VjcmV0", "Proxy-Authorization": "Basic eA==", "Cookie": "s=1", "X-A": "b"}
    request = Request(URL, headers=secret)
    response = HtmlResponse(URL, status=200, body=b"<p>", request=request)
    redacted = dict(exchange_of(request, response, 1.8e9).request_headers)
    assert redacted == {
        "Authorization": "REDACTED",
        "Proxy-Authorization": "REDACTED",
        "Cookie": "REDACTED",
        "X-A": "b",
    }
    assert dict(exchange_of(request, response, 1.8e9, keep_credentials=True).request_headers) == secret


def test_exchange_keeps_the_body_as_sent_and_drops_what_replay_would_misread() -> None:
    request = Request(URL, headers={"Proxy-Authorization": "Basic eA==", "Accept": "*/*"})
    response = HtmlResponse(
        URL,
        status=200,
        headers={"Content-Encoding": "gzip", "Transfer-Encoding": "chunked", "Set-Cookie": ["a=1", "b=2"]},
        body=b"\x1f\x8b raw",
        request=request,
    )
    ex = exchange_of(request, response, 1.8e9)
    assert ("Accept", "*/*") in ex.request_headers and ("Proxy-Authorization", "REDACTED") in ex.request_headers
    assert ex.response_headers == [("Content-Encoding", "gzip"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]
    assert ex.body == b"\x1f\x8b raw" and not ex.headers_only
    stopped = HtmlResponse(URL, status=200, body=b"<p>par", request=request, flags=["download_stopped"])
    ex = exchange_of(request, stopped, 1.8e9)
    assert ex.headers_only and ex.body == b""


def test_the_index_lives_in_the_warc_folder_and_the_folder_is_refused_clearly(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    from scrapy_adaptive.warc.writer import WarcError

    with pytest.raises(WarcError, match=re.escape(f"ADAPTIVE_WARC_DIR {blocker}")):
        WarcWriter(str(blocker)).open()
    assert os.path.isfile(blocker)


def test_the_middleware_is_off_without_the_folder_and_refuses_clearly_without_warcio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from scrapy.exceptions import NotConfigured
    from scrapy.settings import Settings
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.integration.downloadermiddlewares.warc import WarcMiddleware
    from scrapy_adaptive.warc.writer import EXTRA_MESSAGE

    with pytest.raises(NotConfigured):
        WarcMiddleware.from_crawler(get_crawler(settings_dict={}))
    config = AdaptiveConfig.from_settings(Settings({"ADAPTIVE_WARC_DIR": str(tmp_path / "warc")}))
    stats = MemoryStatsCollector(get_crawler())
    monkeypatch.setitem(sys.modules, "warcio", None)  # import warcio -> ImportError
    mw = WarcMiddleware(stats)
    mw.config = config
    mw.frontier_opened(None)  # type: ignore[arg-type]
    assert mw.writer is None and mw.refusal.message == EXTRA_MESSAGE
    assert "pip install scrapy-adaptive[warc]" in caplog.text and not (tmp_path / "warc").exists()


def test_a_capture_indexed_before_headers_were_kept_still_reads_and_a_304_of_it_replays_as_200() -> None:
    from scrapy_adaptive.warc.capture import Capture, updated_by_304

    old = Capture.from_json(b'["http://h/", "2027-01-15T08:00:00.000000Z", "<urn:uuid:1>", "sha1:AAAA"]')
    assert old.status is None and old.headers is None
    not_modified = exchange(status=304, headers_only=True)
    not_modified.response_headers = [("ETag", '"v2"'), ("Content-Length", "0")]
    assert updated_by_304(old, not_modified) == ("200 OK", "HTTP/1.1", [("ETag", '"v2"')])
    kept = Capture("http://h/", "d", "<urn:uuid:2>", "sha1:B", "200 OK", "HTTP/1.0", (("Content-Type", "text/html"),))
    assert Capture.from_json(kept.to_json()) == kept


def test_a_folder_that_cannot_be_written_fails_once_and_confirms_nothing(writer: WarcWriter) -> None:
    from scrapy_adaptive.runtime.sink_failure import SinkError

    told: list[SinkError] = []
    writer.on_failure = told.append
    assert writer.archive(exchange(b"<p>one</p>")) == "response"
    writer.file.close()  # type: ignore[union-attr]
    writer.file = open("/dev/full", "wb")  # noqa: SIM115  # every write now fails: No space left on device
    with pytest.raises(SinkError):
        writer.archive(exchange(b"<p>two</p>"))
    assert not writer.make_durable() and len(told) == 1  # nothing more is confirmed
    assert "The disk holding the WARC file" in str(told[0]) and "is full" in str(told[0])
    with pytest.raises(SinkError):
        writer.archive(exchange(b"<p>three</p>"))
    assert not writer.make_durable() and len(told) == 1  # said once


def test_an_embed_fetched_for_a_pages_capture_gets_a_via_metadata_record(writer: WarcWriter, tmp_path: Path) -> None:
    """Each page capture the embed's fetch came for: one ``metadata`` record
    (``application/warc-fields``) concurrent to the embed's response or
    revisit, naming the page (``via``), the page's WARC-Date and the gap."""
    page = "http://127.0.0.1:8000/news.html"
    image = exchange(b"PNG one", at=1.8e9 + 1.25)
    image.url = "http://127.0.0.1:8000/fig.png"
    image.pages = ((page, 1.8e9),)
    assert writer.archive(image) == "response"
    again = exchange(b"PNG one", at=1.8e9 + 70.5)  # the page's next capture: the image unchanged
    again.url = image.url
    again.pages = ((page, 1.8e9 + 70.0), ("http://127.0.0.1:8000/other.html", 1.8e9 + 69.0))
    assert writer.archive(again) == "revisit"
    assert writer.archive(exchange(b"<p>no page</p>")) == "response"  # not an embed: no metadata
    writer.close()
    records = read_records(tmp_path / "warc")
    assert [r[1] for r in records] == [
        "warcinfo",
        "response",
        "request",
        "metadata",
        "revisit",
        "request",
        "metadata",
        "metadata",
        "response",
        "request",
    ]
    by_id = {r[2].get_header("WARC-Record-ID"): r for r in records}
    metadata = [r for r in records if r[1] == "metadata"]
    for record in metadata:
        headers = record[2]
        concurrent = by_id[headers.get_header("WARC-Concurrent-To")]
        assert concurrent[1] in ("response", "revisit")
        assert headers.get_header("WARC-Target-URI") == concurrent[2].get_header("WARC-Target-URI") == image.url
        assert headers.get_header("WARC-Date") == concurrent[2].get_header("WARC-Date")
        assert headers.get_header("Content-Type") == "application/warc-fields"
    assert metadata[0][3] == (
        b"via: http://127.0.0.1:8000/news.html\r\n"
        b"page-capture: 2027-01-15T08:00:00.000000Z\r\n"
        b"seconds-after-page: 1.250\r\n"
    )
    assert b"page-capture: 2027-01-15T08:01:10.000000Z\r\nseconds-after-page: 0.500" in metadata[1][3]
    assert b"via: http://127.0.0.1:8000/other.html\r\n" in metadata[2][3]
    assert b"seconds-after-page: 1.500" in metadata[2][3]
    assert writer.counts["metadata"] == 3
    warcio_check(tmp_path / "warc")


def test_the_middleware_takes_the_download_time_and_the_pages_from_the_fetchs_meta() -> None:
    from scrapy_adaptive import meta
    from scrapy_adaptive.integration.downloadermiddlewares.warc import pages_of

    request = Request("http://127.0.0.1:8000/fig.png", meta={meta.PAGE: (("http://127.0.0.1:8000/p", 5.0),)})
    response = HtmlResponse(request.url, body=b"x", request=request)
    assert exchange_of(request, response, 7.0).pages == (("http://127.0.0.1:8000/p", 5.0),)
    # as yielded (one pair, before any download): not a fetch's pages
    assert pages_of(Request(request.url, meta={meta.PAGE: ("http://127.0.0.1:8000/p", 5.0)})) == ()
    assert pages_of(Request(request.url)) == ()
