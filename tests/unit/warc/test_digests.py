"""Cross-URL deduplication: the payload-digest index (bounded, evicting,
surviving restarts and kills) and the revisit records the writer makes of it."""

from __future__ import annotations

import dataclasses
import gzip
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy.statscollectors import StatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive.change.digest import payload_digest as exchange_digest
from scrapy_adaptive.integration.downloadermiddlewares.warc import WarcMiddleware
from scrapy_adaptive.ops.console.payloads import payload_lines
from scrapy_adaptive.warc.capture import Capture
from scrapy_adaptive.warc.digests import DigestIndex, shared_payloads, shared_payloads_in
from scrapy_adaptive.warc.writer import IDENTICAL_PROFILE, NOT_MODIFIED_PROFILE, WarcWriter
from tests.unit.warc.test_warc import exchange, read_records, warcio_check

plyvel = pytest.importorskip("plyvel")
pytest.importorskip("warcio")

A = "http://127.0.0.1:8000/a"
B = "http://127.0.0.1:8000/a?utm_source=x"
C = "http://127.0.0.1:8000/mirror/a"


def at(url: str, body: bytes = b"<p>shared</p>", when: float = 1.8e9, **kwargs: Any) -> Any:
    return dataclasses.replace(exchange(body, at=when, **kwargs), url=url)


def dedup_writer(folder: Path, size: int = 1000) -> WarcWriter:
    w = WarcWriter(str(folder), dedup_across_urls=True, digest_index_size=size)
    w.open()
    return w


def test_the_index_is_bounded_evicts_the_oldest_and_survives_a_restart(tmp_path: Path) -> None:
    db = plyvel.DB(str(tmp_path / "db"), create_if_missing=True)
    index = DigestIndex(db, limit=3)
    for i in range(5):
        index.add(Capture(f"http://h/{i}", f"2027-01-01T00:00:0{i}Z", f"<urn:{i}>", f"sha1:D{i}"))
        index.add(Capture(f"http://h/other{i}", "2027-01-02T00:00:00Z", "<urn:x>", f"sha1:D{i}"))  # not the first
        with db.write_batch() as batch:
            index.write(batch)
        index.evict()
    assert index.size == 3
    assert [index.lookup(f"sha1:D{i}") is None for i in range(5)] == [True, True, False, False, False]
    assert index.lookup("sha1:D4") == Capture("http://h/4", "2027-01-01T00:00:04Z", "<urn:4>", "sha1:D4")
    db.close()
    db = plyvel.DB(str(tmp_path / "db"))
    again = DigestIndex(db, limit=2)  # a smaller limit at the next start applies at the next write
    assert (again.size, again.next_seq) == (3, 5)
    assert again.lookup("sha1:D2") is not None
    again.add(Capture("http://h/5", "2027-01-01T00:00:05Z", "<urn:5>", "sha1:D5"))
    assert again.lookup("sha1:D5") is not None  # pending: found before it is durable
    with db.write_batch() as batch:
        again.write(batch)
    assert again.evict() == 2
    assert [again.lookup(f"sha1:D{i}") is None for i in range(2, 6)] == [True, True, False, False]
    assert sum(1 for _ in db.iterator(prefix=b"o/")) == sum(1 for _ in db.iterator(prefix=b"d/")) == 2
    db.close()


def test_a_body_first_archived_under_another_url_is_a_revisit_of_that_capture(tmp_path: Path) -> None:
    folder = tmp_path / "warc"
    w = dedup_writer(folder)
    assert w.archive(at(A)) == "response" and w.duplicate_of is None
    assert w.archive(at(B, when=1.8e9 + 1)) == "revisit" and w.duplicate_of == A  # not durable yet: still found
    w.make_durable()
    assert w.archive(at(C, when=1.8e9 + 2)) == "revisit" and w.duplicate_of == A
    assert w.archive(at(B, when=1.8e9 + 3)) == "revisit"  # B again: refers to A's capture still
    not_modified = at(B, status=304, headers_only=True, when=1.8e9 + 4)
    assert w.archive(not_modified) == "revisit"  # B's 304: B's own headers, A's payload
    assert w.archive(at(C, b"<p>own</p>", when=1.8e9 + 5)) == "response"
    assert w.counts["dedup_across_urls"] == 3 and w.counts["response"] == 2
    w.close()
    records = read_records(folder)
    first = next(r for r in records if r[1] == "response")
    revisits = [r for r in records if r[1] == "revisit"]
    assert [r[2].get_header("WARC-Target-URI") for r in revisits] == [B, C, B, B]
    assert [r[2].get_header("WARC-Profile") for r in revisits] == [IDENTICAL_PROFILE] * 3 + [NOT_MODIFIED_PROFILE]
    for r in revisits:
        assert r[2].get_header("WARC-Refers-To") == first[2].get_header("WARC-Record-ID")
        assert r[2].get_header("WARC-Refers-To-Target-URI") == A
        assert r[2].get_header("WARC-Refers-To-Date") == first[2].get_header("WARC-Date")
        assert r[2].get_header("WARC-Payload-Digest") == first[2].get_header("WARC-Payload-Digest")
    warcio_check(folder)


def test_off_by_default_each_url_keeps_its_own_response(tmp_path: Path) -> None:
    w = WarcWriter(str(tmp_path / "warc"))
    w.open()
    assert [w.archive(at(url)) for url in (A, B, C)] == ["response"] * 3
    assert "dedup_across_urls" not in w.counts
    w.close()


def test_after_a_kill_no_revisit_refers_to_a_capture_that_was_not_durable(tmp_path: Path) -> None:
    """A's response written but killed before the fsync: the index never
    held it, so B's body is archived as a response of its own, and the
    digest's entry is B's from then on."""
    folder = tmp_path / "warc"
    w = dedup_writer(folder)
    assert w.archive(at(C, b"<p>durable</p>")) == "response"
    w.make_durable()
    w.archive(at(A, when=1.8e9 + 1))
    assert w.file is not None
    w.file.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" * 50)[:40])  # cut by the kill
    w.file.close()
    w.index.close()

    again = dedup_writer(folder)
    assert again.archive(at(B, when=1.8e9 + 10)) == "response"
    assert again.archive(at(A, b"<p>durable</p>", when=1.8e9 + 11)) == "revisit" and again.duplicate_of == C
    again.make_durable()
    assert again.archive(at(C, when=1.8e9 + 12)) == "revisit" and again.duplicate_of == B
    again.close()
    by_id = {r[2].get_header("WARC-Record-ID"): r for r in read_records(folder)}
    for record in by_id.values():
        if record[1] == "revisit":
            assert by_id[record[2].get_header("WARC-Refers-To")][1] == "response"
    warcio_check(folder)


def test_an_evicted_body_is_archived_again_as_a_response(tmp_path: Path) -> None:
    w = dedup_writer(tmp_path / "warc", size=1)
    assert w.archive(at(A)) == "response"
    w.make_durable()
    assert w.archive(at(C, b"<p>other</p>", when=1.8e9 + 1)) == "response"
    w.make_durable()  # A's digest is evicted
    assert w.archive(at(B, when=1.8e9 + 2)) == "response"
    assert w.archive(at(A, when=1.8e9 + 3)) == "revisit"  # its own capture still
    w.close()


def test_the_report_groups_urls_by_the_payload_of_their_last_capture(tmp_path: Path) -> None:
    folder = tmp_path / "warc"
    w = dedup_writer(folder)
    for n, url in enumerate((A, B, C)):
        w.archive(at(url, when=1.8e9 + n))
    w.archive(at("http://127.0.0.1:8000/b", b"<p>b</p>"))
    w.archive(at("http://127.0.0.1:8000/b?sid=1", b"<p>b</p>"))
    w.archive(at("http://127.0.0.1:8000/alone", b"<p>alone</p>"))
    w.make_durable()
    section = shared_payloads(w.index)
    w.close()
    assert section["captures"] == 6 and section["complete"] and section["duplicates"] == 3
    assert [(g["urls"], sorted(g["examples"])) for g in section["groups"]] == [
        (3, sorted([A, B, C])),
        (2, ["http://127.0.0.1:8000/b", "http://127.0.0.1:8000/b?sid=1"]),
    ]
    assert shared_payloads_in(str(folder)) == section  # a stopped crawl's folder
    text = "\n".join(payload_lines(section))
    assert "of 6 archived URLs" in text and f"    3 URLs  {section['groups'][0]['digest']}\n         {A}" in text
    assert shared_payloads_in(str(tmp_path / "none")) == {"unavailable": f"no WARC index in {tmp_path / 'none'}"}


def test_a_running_crawl_offers_its_console_the_section(tmp_path: Path) -> None:
    config = SimpleNamespace(
        warc_dir=str(tmp_path / "warc"),
        warc_prefix="adaptive",
        warc_max_size=2**30,
        warc_dedup_across_urls=True,
        warc_digest_index_size=10,
        store_url=None,  # no Redis: the folder's own index
    )
    mw = WarcMiddleware(StatsCollector(get_crawler()), config=config)  # type: ignore[arg-type]
    console = SimpleNamespace(sections={})
    mw.frontier_opened(services=None, console=console)  # type: ignore[arg-type]
    assert console.sections["shared_payloads"]()["captures"] == 0
    mw.spider_closed(None)  # type: ignore[arg-type]
    assert "unavailable" in console.sections["shared_payloads"]()


def test_a_redis_fleet_shares_one_bounded_index_of_durable_captures(redis_url: str, tmp_path: Path) -> None:
    """Two workers, two WARC folders, one index in Redis: a body the first
    archived is a revisit for the second once the first made it durable."""
    from scrapy_adaptive.store.redis import RedisStore
    from scrapy_adaptive.warc.fleetdigests import FleetDigestIndex

    def worker(name: str, size: int = 1000) -> WarcWriter:
        fleet = FleetDigestIndex(RedisStore(redis_url, namespace="adaptive:fleet"), size)
        w = WarcWriter(str(tmp_path / name), dedup_across_urls=True, fleet_digests=fleet)
        w.open()
        return w

    one, two = worker("one"), worker("two")
    assert one.archive(at(A)) == "response"
    assert two.archive(at(B, when=1.8e9 + 1)) == "response"  # A's record is not durable yet: not published
    one.make_durable()
    two.make_durable()  # B's entry loses to A's (first published wins)
    assert two.archive(at(C, when=1.8e9 + 2)) == "revisit" and two.duplicate_of == A
    one.close()
    two.close()
    revisit = next(r for r in read_records(tmp_path / "two") if r[1] == "revisit")
    first = next(r for r in read_records(tmp_path / "one") if r[1] == "response")
    assert revisit[2].get_header("WARC-Refers-To") == first[2].get_header("WARC-Record-ID")
    assert revisit[2].get_header("WARC-Refers-To-Target-URI") == A

    small = worker("three", size=2)
    for n in range(4):
        small.archive(at(f"http://127.0.0.1:8000/{n}", f"<p>{n}</p>".encode(), when=1.8e9 + n))
        small.make_durable()
    assert small.digests is not None and small.digests.size == 2  # the oldest evicted
    assert small.digests.lookup(exchange_digest(b"<p>shared</p>")) is None
    assert small.digests.lookup(exchange_digest(b"<p>3</p>")) is not None
    small.close()


def test_a_url_back_to_an_earlier_body_is_a_revisit_of_that_capture(tmp_path: Path) -> None:
    w = dedup_writer(tmp_path / "warc")
    assert w.archive(at(A, b"<p>x</p>")) == "response"
    assert w.archive(at(A, b"<p>y</p>", when=1.8e9 + 1)) == "response"
    assert w.archive(at(A, b"<p>x</p>", when=1.8e9 + 2)) == "revisit"
    assert w.duplicate_of is None and "dedup_across_urls" not in w.counts  # its own capture, not another URL's
    w.close()
    records = read_records(tmp_path / "warc")
    first = next(r for r in records if r[1] == "response")
    revisit = next(r for r in records if r[1] == "revisit")
    assert revisit[2].get_header("WARC-Refers-To") == first[2].get_header("WARC-Record-ID")
