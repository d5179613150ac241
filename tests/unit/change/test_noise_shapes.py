"""Learned noise on shapes a tester tried after the generator was written
(issue 46's closing pass), each through the real chain: every value a
response carried is delivered once, no noise is delivered, nothing parked.

Two shapes are known limits, pinned as strict xfails: noise that moves at
some fetches only (a counter of every other hit) is not proven noise by
one learning, and a list whose items only swap places is learned item by
item, a false change or two before it is whole.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest

from tests.unit.change.test_noise import T0, Chain

EDITS = [300.0 * k + 17 for k in range(1, 12)]


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _hms(t: float, fmt: str = "%H:%M:%S") -> str:
    return time.strftime(fmt, time.gmtime(t))


Render = Callable[[float, int, random.Random, int], str]

SHAPES: dict[str, Render] = {
    "json-ld dateModified now": lambda t, n, r, f: (
        f'<html><head><script type="application/ld+json">{{"dateModified": "{_iso(t)}", '
        f'"offers": {{"price": "{19 + n}.99"}}}}</script></head><body><h1>x</h1></body></html>'
    ),
    "minutes ago": lambda t,
    n,
    r,
    f: f"<html><body><p>Posted {int((t - T0) // 60)} minutes ago</p><p>Stock {n}</p></body></html>",
    "nonce in a script src": lambda t, n, r, f: (
        f'<html><head><script src="/app.js?v={r.getrandbits(48):x}"></script></head><body><p>Stock {n}</p></body></html>'
    ),
    "time datetime now": lambda t,
    n,
    r,
    f: f'<html><body><time datetime="{_iso(t)}">now</time><p>Stock {n}</p></body></html>',
    "session id on every link": lambda t, n, r, f: (
        "<html><body>"
        + "".join(f'<a href="/p/{i}?sid={r.getrandbits(40):x}">p{i}</a>' for i in range(8))
        + f"<p>Stock {n}</p></body></html>"
    ),
    "whitespace and attribute order": lambda t, n, r, f: (
        f'<html><body><p class="a" id="b">Stock {n}</p></body></html>'
        if f % 2
        else f'<html>\n<body>  <p id="b"  class="a">Stock   {n}</p></body></html>'
    ),
    "__DATA__ with a nonce beside the price": lambda t, n, r, f: (
        f'<html><body><script>window.__DATA__ = {{"nonce":"{r.getrandbits(64):x}","price":{19 + n}.99}};</script></body></html>'
    ),
    "12-hour clock": lambda t,
    n,
    r,
    f: f"<html><body><p>Now {_hms(t, '%I:%M:%S %p')}</p><p>Stock {n}</p></body></html>",
    "clock in the title": lambda t,
    n,
    r,
    f: f"<html><head><title>Shop {_hms(t)}</title></head><body><p>Stock {n}</p></body></html>",
    "csrf meta beside a data meta": lambda t, n, r, f: (
        f'<html><head><meta name="csrf-token" content="{r.getrandbits(64):x}"><meta name="description" content="Stock {n}"></head><body></body></html>'
    ),
    "rotating ad words": lambda t, n, r, f: (
        f"<html><body><div class=ad>{' '.join(r.choice(['Buy', 'Try', 'Get']) for _ in range(3))}</div><p>Stock {n}</p></body></html>"
    ),
    "edit of the clock line's label": lambda t, n, r, f: (
        f"<html><body><p>{'Server' if n % 2 == 0 else 'Host'} time {_hms(t)}</p></body></html>"
    ),
    "counter of every other hit": lambda t, n, r, f: f"<html><body><p>Hits {f // 2}</p><p>Stock {n}</p></body></html>",
    "items swapping places": lambda t, n, r, f: (
        "<html><body><ul>"
        + "".join(f"<li>{x}</li>" for x in r.sample(["alpha", "beta", "gamma", "delta"], 4))
        + f"</ul><p>Stock {n}</p></body></html>"
    ),
}
LIMITS = {
    "counter of every other hit": "moves at some fetches only: not proven noise within one learning's probes",
    "items swapping places": "items that only swap places are learned one by one: a false change or two first",
}


@pytest.mark.parametrize(
    "shape",
    [pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=LIMITS[s])) if s in LIMITS else s for s in SHAPES],
)
def test_a_shape_is_learned_without_a_lost_edit_or_a_false_change(shape: str) -> None:
    render = SHAPES[shape]
    chain = Chain(1.0)

    def site(t: float, fetch: int) -> tuple[str, dict[str, str], int]:
        n = sum(1 for e in EDITS if T0 + e <= t)
        return render(t, n, random.Random(fetch * 7919), fetch), {}, n

    for fetch in range(40):
        _, value = chain.fetch(site, fetch)
        if chain.settled():
            assert chain.delivered[-1] == value, (fetch, chain.verdicts_seen)
    assert chain.delivered == chain.expected() and chain.false == 0, chain.verdicts_seen
    assert chain.record().wait < 3600
