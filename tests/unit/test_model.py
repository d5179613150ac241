"""The stored forms of a URL record and of a queue's counters.

Both are written at every verdict, so they are built by hand where that is
faster; these tests pin them to the bytes the JSON encoder gives, so state
folders written before and after read the same.
"""

from __future__ import annotations

import json

import pytest

from scrapy_adaptive.frontier.hostqueue import HostQueue
from scrapy_adaptive.model import RecordError, UrlRecord
from scrapy_adaptive.model.record import ranking_fields

#: a visited record as stored by earlier versions (json.dumps, compact)
STORED = (
    b'{"u":"http://h.example/a\xc3\xa9","q":"h.example","n":1795672636773,"d":1,"dt":1795672636.773869,'
    b'"vi":1,"ve":0,"fa":0,"st":200,"sz":1000,"ft":1795672636.774022,"du":0.1,"ov":0.123,'
    b'"dg":"sha1:00","wt":86400.0,"oc":"visited","hi":[[1795672636.774,"unchanged",200]],"ps":{"k":[1,2]}}\n'
    b'{"url":"http://h.example/a\xc3\xa9","method":"GET","meta":{},"callback":"parse"}'
)


def test_stored_record_reads_and_writes_back_the_same_bytes() -> None:
    record = UrlRecord.from_bytes(STORED)
    assert (record.url, record.queue, record.directive, record.visits, record.wait) == (
        "http://h.example/aé",
        "h.example",
        1,
        1,
        86400.0,
    )
    assert record.history == [[1795672636.774, "unchanged", 200]]
    assert record.request["method"] == "GET"
    assert record.to_bytes() == STORED
    record.request = {"url": record.url}  # a new request is encoded again
    assert record.to_bytes().endswith(b'\n{"url":"http://h.example/a\xc3\xa9"}')


def test_record_of_one_document_reads() -> None:
    """The request inside the visit state (the first stored form)."""
    record = UrlRecord.from_bytes(b'{"u":"a","q":"b","n":1,"rq":{"x":1},"zz":3}')
    assert (record.url, record.request, record.next_ms) == ("a", {"x": 1}, 1)


def test_empty_values_are_left_out_and_counts_kept() -> None:
    record = UrlRecord("http://h/", "h", {}, 5, directive=0, history=[], policy={}, hint=None)
    head = json.loads(record.to_bytes().partition(b"\n")[0])
    assert head == {"u": "http://h/", "q": "h", "n": 5, "dt": 0.0, "vi": 0, "ve": 0, "fa": 0}


def test_whitespace_around_a_document_is_read_as_json_reads_it() -> None:
    record = UrlRecord.from_bytes(b' {"u":"a","q":"b","n":1} \n {"x":1}\n')
    assert (record.url, record.request) == ("a", {"x": 1})


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"[]",
        b"5",
        b"\xff\xfe",
        b"{}\n{}",
        b'{"u":"a","q":"b","n":1} x',
        b'{"u":"a","q":"b","n":1}\n{}{}',
        b'{"u":"a","q":"b","n":1}\n[]',
        b'{"u":"a","q":"b","n":1.0}\n{}',
    ],
)
def test_unreadable_records_raise_record_error(raw: bytes) -> None:
    with pytest.raises(RecordError):
        UrlRecord.from_bytes(raw)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ct", 7),
        ("vi", "many"),
        ("vi", True),
        ("ps", [1]),
        ("dg", 5),
        ("et", {"a": 1}),
        ("hi", [["x", "y", "z"]]),
        ("hi", [[1.0, "changed"]]),
        ("wt", "1h"),
        ("vl", ["a"]),
        ("nz", 3),
    ],
)
def test_a_field_of_the_wrong_type_makes_the_record_unreadable(key: str, value: object) -> None:
    """A record that reads as JSON but holds another shape (tampered, or from a
    foreign tool) is quarantined as unreadable, not judged and crashed on."""
    head, _, tail = STORED.partition(b"\n")
    data = json.loads(head)
    data[key] = value
    with pytest.raises(RecordError, match="wrong type"):
        UrlRecord.from_bytes(json.dumps(data).encode() + b"\n" + tail)


def test_the_ranking_fields_are_the_records_visits_and_wait_and_refuse_what_the_record_refuses() -> None:
    """The urgency weighing reads a due URL's visits and wait from the visit
    state alone; a head the record could not be read from is refused as the
    record is, and a garbled request alone does not stop the ranking (the
    whole record is read, and quarantined, when its turn comes)."""
    record = UrlRecord.from_bytes(STORED)
    assert ranking_fields(STORED) == (record.visits, record.wait)
    assert ranking_fields(UrlRecord(url="u", queue="q", next_ms=1, request={}).to_bytes()) == (0, None)
    head, _, _ = STORED.partition(b"\n")
    assert ranking_fields(head + b"\n{garbled") == (record.visits, record.wait)
    for raw in (b"", b"[]", b"\xff\xfe", head[:-3] + b"\n{}"):
        with pytest.raises(RecordError):
            ranking_fields(raw)
    for key, value in (("vi", "many"), ("vi", True), ("wt", "1h")):
        data = json.loads(head)
        data[key] = value
        with pytest.raises(RecordError, match="wrong type"):
            ranking_fields(json.dumps(data).encode())


@pytest.mark.parametrize(
    "facts",
    [
        {},
        {"quarantined": 2, "forgotten": 1},
        {"slots": [1795672636.7731]},
        {"crawl_delay": 2.5},
        {"crawl_delay": 3, "slots": [12.0]},
        {"trust": {"host": {"right": 3}}},
        {"hint_trust": {"sitemap": [1.0, 0.0, 0.5]}},
    ],
)
def test_counters_bytes_are_the_json_encoders(facts: dict[str, object]) -> None:
    q = HostQueue(name="h", valence=1, urls=7, never=2, visits=11, versions=3)
    for name, value in facts.items():
        setattr(q, name, value)
    assert q.counters_bytes() == json.dumps(q.counters(), separators=(",", ":")).encode()


def test_record_json_is_the_encoders() -> None:
    """Whatever the stored data holds (non-ASCII, integer keys, NaN), the
    bytes are those of ``json.dumps`` with the same options."""
    policy = {"é": [1.5, None, True], 3: {"nested": float("nan")}}
    record = UrlRecord("http://h/\u2028", "h", {"meta": {"x": [1, 2]}}, 5, policy=policy, hint={"s": "sitemap"})
    head, _, request = record.to_bytes().partition(b"\n")
    assert json.loads(head)["ps"]["é"] == [1.5, None, True]
    expected = json.dumps(
        {"u": record.url, "q": "h", "n": 5, "dt": 0.0, "vi": 0, "ve": 0, "fa": 0, "ps": policy, "hn": record.hint},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert head == expected.encode("utf-8")
    assert request == b'{"meta":{"x":[1,2]}}'


def test_a_record_at_the_longest_history_stays_a_few_tens_of_kb() -> None:
    """ADAPTIVE_HISTORY_SIZE's limit bounds the record rewritten at every visit."""
    from scrapy_adaptive.config.spec import MAX_HISTORY
    from scrapy_adaptive.frontier.update_steps import fold_visit
    from scrapy_adaptive.model import ChangeState, Outcome, Plan, Visit

    record = UrlRecord(
        url="http://example.com/a", queue="example.com", request={"url": "http://example.com/a"}, next_ms=0
    )
    start = 1_800_000_000.123
    for i in range(MAX_HISTORY + 50):
        fold_visit(
            record,
            Visit(Outcome.VISITED, change=ChangeState.UNCHANGED, status=200),
            Plan(86_400.0, memory={"e": 1e-6}),
            start + i * 86_400,
            MAX_HISTORY,
        )
    assert len(record.history) == MAX_HISTORY
    assert len(record.to_bytes()) < 40_000
