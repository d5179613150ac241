"""How long a host takes to get through its due URLs (Umbrich et al., section 5).

Umbrich, Mrzelj and Polleres estimate a domain's crawl time from its mean
download time *t* and its crawl delay *d*: fetches start every *d*, each
lasts *t*, so ``threads = t / d`` of them overlap, and *docs* documents take

    crawltime = docs × t / threads + d × (threads − 1)

(the last fetch starts (docs − 1)·d after the first and ends *t* later).
Comparing that with the time until the URLs are due again tells which hosts
cannot be visited as often as their URLs need: the thesis's *chronically
overdue* hosts (ch. 6), whose queues only grow.

**Our politeness model.**  The frontier does not space fetch *starts*: each
of a queue's ``valence`` slots rests ``w = clamp(factor × t, min_delay,
max_delay)`` (or the robots.txt Crawl-delay if longer) after its fetch
*ends* (:meth:`HostQueue.politeness_wait`).  A slot therefore starts a fetch
every ``t + w``, and the host one every ``(t + w) / valence``: that is the
paper's *d* for us (:func:`start_spacing`), and ``threads = min(valence,
t / d)`` never exceeds the valence.  With one slot the formula is then exact:
``docs·(t + w) − w``.  Plugging in ``w`` itself, as the paper does with a
crawl delay, misjudges it both ways: with one slot it leaves the fetch time
out of every cycle and underestimates by ``(docs − 1) × t``; with several
slots that rest side by side it sees one fetch per ``w`` (``threads = t/w <
1``) and overestimates, up to valence-fold (both errors on real fetches:
``docs/benchmarks.md``, "Crawl budget and crawl-time estimates").

No Scrapy import: the scheduler feeds it fetch durations and asks it about
the frontier's queues; tests drive it directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .hostqueue import HostQueue

#: the paper's default download time for a host never fetched from (seconds)
DEFAULT_FETCH_TIME = 2.0


def crawl_time(docs: int, fetch_time: float, delay: float, valence: int) -> float:
    """The paper's crawl time of *docs* URLs of one host, in seconds.

    *delay* is the spacing of fetch starts on the host; at most *valence*
    fetches overlap.  A zero delay (no politeness) runs *valence* fetches
    side by side.

    >>> crawl_time(6, 3.0, 1.0, 8)  # the paper's figure 7: 3 threads
    8.0
    >>> crawl_time(6, 3.0, 1.0, 2)  # our valence caps the threads
    10.0
    """
    if docs <= 0:
        return 0.0
    t = max(fetch_time, 0.0)
    if t == 0.0:
        return delay * (docs - 1)
    threads = float(valence) if delay <= 0 else min(float(valence), t / delay)
    return docs * t / threads + delay * (threads - 1)


def start_spacing(fetch_time: float, wait: float, valence: int) -> float:
    """The paper's *d* under our politeness rule: a slot starts a fetch every
    ``t + w`` (the wait counts from the end of the fetch), *valence* slots
    interleave."""
    return (max(fetch_time, 0.0) + max(wait, 0.0)) / max(valence, 1)


def capacity(queue: HostQueue, fetch_time: float, *, delay_factor: float, min_delay: float, max_delay: float) -> float:
    """The most fetches per second *queue*'s politeness allows when fetches
    take *fetch_time*: one per start spacing (the long-run rate of
    :func:`crawl_time` as docs grow)."""
    wait = queue.politeness_wait(fetch_time, delay_factor, min_delay, max_delay)
    return 1.0 / max(start_spacing(fetch_time, wait, queue.valence), 1e-3)


class FetchTimes:
    """Mean fetch duration per queue, as an exponentially weighted average.

    Weighted so that a host that became slow is seen as slow within a few
    dozen fetches; one float and one count per queue (memory grows with
    hosts, like the frontier's).  Not persisted: a restarted crawl relearns
    it within a few fetches per host.
    """

    def __init__(self, weight: float = 0.05) -> None:
        if not 0 < weight <= 1:
            raise ValueError("weight must be in (0, 1]")
        self.weight = weight
        self._mean: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def add(self, queue: str, seconds: float) -> None:
        seconds = max(0.0, seconds)
        count = self._count.get(queue, 0) + 1
        self._count[queue] = count
        # the first fetches are averaged plainly, so one early outlier does
        # not stand for the host until the weighted average forgets it
        weight = max(self.weight, 1.0 / count)
        old = self._mean.get(queue, seconds)
        self._mean[queue] = old + weight * (seconds - old)

    def mean(self, queue: str) -> float | None:
        return self._mean.get(queue)

    def count(self, queue: str) -> int:
        return self._count.get(queue, 0)


@dataclass(frozen=True)
class HostCrawlTime:
    """One host's pass over the URLs due within *horizon*, and how it compares."""

    queue: str
    docs: int
    fetch_time: float
    #: the politeness wait after a fetch of that duration (Crawl-delay included)
    wait: float
    #: the paper's d: seconds between fetch starts on the host
    delay: float
    threads: float
    crawl_time: float
    horizon: float
    #: False: the fetch time is the paper's default, no fetch of this host
    #: was measured in this process (a restart forgets them), so the figure
    #: must not be reported as the host's
    measured: bool = True

    @property
    def load(self) -> float:
        """Crawl time over horizon: above 1 the host falls behind its URLs."""
        return self.crawl_time / self.horizon if self.horizon > 0 else float("inf")

    @property
    def overdue(self) -> bool:
        return self.crawl_time > self.horizon


def estimate(
    queue: HostQueue,
    docs: int,
    fetch_time: float,
    horizon: float,
    *,
    delay_factor: float,
    min_delay: float,
    max_delay: float,
) -> HostCrawlTime:
    """The crawl time of *docs* URLs of *queue* under its politeness."""
    wait = queue.politeness_wait(fetch_time, delay_factor, min_delay, max_delay)
    delay = start_spacing(fetch_time, wait, queue.valence)
    threads = queue.valence if delay <= 0 else min(queue.valence, fetch_time / delay)
    return HostCrawlTime(
        queue=queue.name,
        docs=docs,
        fetch_time=fetch_time,
        wait=wait,
        delay=delay,
        threads=threads,
        crawl_time=crawl_time(docs, fetch_time, delay, queue.valence),
        horizon=horizon,
    )


class CountDue(Protocol):
    """How many URLs of a queue are due by a time, up to a limit (:meth:`.Frontier.count_due`)."""

    def __call__(self, queue: str, by: float, *, limit: int) -> int: ...


def estimate_hosts(
    queues: Iterable[HostQueue],
    count_due: CountDue,
    fetch_times: FetchTimes,
    *,
    now: float,
    horizon: float,
    delay_factor: float,
    min_delay: float,
    max_delay: float,
    limit: int = 200_000,
) -> list[HostCrawlTime]:
    """Every queue with URLs due by ``now + horizon`` (overdue ones included),
    and the crawl time of one pass over them, worst load first.

    Counting stops at *limit* due URLs in all (a queue is counted up to what
    is left), so a huge backlog costs a bounded scan; the crawl times of the
    hosts counted last are then lower bounds.  A host not fetched from in
    this process is assumed to take the paper's 2 s per fetch, and its row
    says it was not measured.
    """
    until = now + horizon
    rows = []
    left = limit
    for q in queues:
        if left <= 0:
            break
        if q.head_time() > until:
            continue
        docs = count_due(q.name, until, limit=left)
        if docs <= 0:
            continue
        left -= docs
        mean = fetch_times.mean(q.name)
        t = DEFAULT_FETCH_TIME if mean is None else mean
        row = estimate(q, docs, t, horizon, delay_factor=delay_factor, min_delay=min_delay, max_delay=max_delay)
        rows.append(row if mean is not None else replace(row, measured=False))
    rows.sort(key=lambda r: -r.load)
    return rows
