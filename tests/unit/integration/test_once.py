"""The requests the frontier cannot keep, fetched once and paced
(:mod:`scrapy_adaptive.integration.once`)."""

from __future__ import annotations

from scrapy import Request

from scrapy_adaptive.integration.once import OnceQueue


def one_off(path: str, **kwargs: object) -> Request:
    return Request(f"http://a.example/{path}", callback=lambda response: None, **kwargs)  # type: ignore[arg-type]


def test_they_go_out_in_order_one_per_spacing_whatever_their_hosts() -> None:
    """Outside the frontier they are outside its politeness: a spider that
    yields many of them cannot hit a host faster than the minimum delay."""
    queue = OnceQueue(spacing=2.0)
    first, second, third = one_off("1"), one_off("2"), Request("http://b.example/3", callback=lambda r: None)
    for n, request in enumerate((first, second, third)):
        assert queue.add(bytes([n]), request)
    assert queue.ready_at() == float("-inf")  # the first goes at once (a one-off command's only request)
    assert queue.take(100.0) is first
    assert queue.take(101.9) is None and queue.ready_at() == 102.0
    assert queue.take(102.0) is second
    assert queue.take(103.0) is None
    assert queue.take(104.5) is third
    assert queue.take(1000.0) is None and queue.ready_at() is None and len(queue) == 0


def test_a_url_goes_once_unless_the_request_asks_for_it_again() -> None:
    queue = OnceQueue()
    assert queue.add(b"a", one_off("x"))
    assert not queue.add(b"a", one_off("x"))
    again = one_off("x", dont_filter=True)
    assert queue.add(b"a", again)
    assert queue.take(0.0) is not None and queue.take(0.0) is again


def test_without_spacing_they_all_go_at_once() -> None:
    queue = OnceQueue()
    for n in range(3):
        queue.add(bytes([n]), one_off(str(n)))
    assert [queue.take(5.0) is not None for _ in range(4)] == [True, True, True, False]
