"""The frontier across restarts and damaged records: a hypothesis state machine.

A real LevelDB store in a temporary folder, a fake clock, and a plain model
of what the frontier promises.  Rules: add a URL, issue the next one, end
its fetch and give a verdict (visited / retry / failed, with waits), let
leases lapse, restart (close the store and open it again; URLs still out
are simply forgotten, as after a ``kill -9``), and garble a stored record
behind the frontier's back.  After every step:

* every URL added is known (a record and a queue entry), or quarantined
  with its bytes kept once it was garbled;
* no visit count goes backwards (each record's equals the model's);
* nothing is out after a restart, or after its lease ran out;
* politeness holds across restarts: a host is never fetched before the
  wait of its last recorded fetch is over (valence 1);
* a garbled record never blocks its host: whenever the model has a host
  ready with a readable URL due, ``next()`` issues something.
"""

from __future__ import annotations

import hashlib
import math
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from scrapy_adaptive.frontier import Batch, Frontier, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.hostqueue import ARRIVAL_LEAD_MS
from scrapy_adaptive.model import Plan, UrlRecord
from scrapy_adaptive.store.keys import NEVER_MS, time_to_ms
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.hypo import examples

HOSTS = ["a", "b"]
MIN_DELAY, MAX_DELAY, RETRY_DELAY, MAX_RETRIES, LEASE = 1.0, 3.0, 50.0, 2, 30.0
GARBAGE = b"\x00not a record"


def fp_of(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


class RestartingFrontier(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_000.0
        self._tmp = tempfile.TemporaryDirectory()
        self.path = self._tmp.name + "/db"
        self.store = LevelDBStore(self.path)
        self.frontier = self._frontier()
        # the model
        self.next_ms: dict[bytes, int] = {}  # readable records -> when due
        self.visits: dict[bytes, int] = {}
        self.total_visits = 0
        self.failures: dict[bytes, int] = {}
        self.host: dict[bytes, str] = {}
        self.garbled: set[bytes] = set()  # garbled, not yet moved aside
        self.moved: set[bytes] = set()  # quarantined (bytes under x/)
        self.out: dict[bytes, str] = {}
        self.fetching: set[bytes] = set()
        self.rest: dict[str, float] = dict.fromkeys(HOSTS, 0.0)  # politeness, in memory
        #: ... as of the last write of the host's counters (a new URL, a verdict, a quarantine)
        self.recorded_rest: dict[str, float] = dict.fromkeys(HOSTS, 0.0)

    def _frontier(self) -> Frontier:
        politeness = Politeness(
            delay_factor=1.0,
            min_delay=MIN_DELAY,
            max_delay=MAX_DELAY,
            valence=1,
            retry_delay=RETRY_DELAY,
            max_retries=MAX_RETRIES,
            lease=LEASE,
        )
        frontier = Frontier(self.store, politeness, clock=lambda: self.now)
        frontier.load()
        return frontier

    def _record_rest(self, host: str) -> None:
        """The host's wait as its counters keep it: in milliseconds, rounded
        up (never a millisecond early, :attr:`.HostQueue.next_fetch_ms`)."""
        self.recorded_rest[host] = math.ceil(self.rest[host] * 1000) / 1000

    def teardown(self) -> None:
        self.store.close()
        self._tmp.cleanup()

    # -- rules ---------------------------------------------------------------

    @rule(host=st.sampled_from(HOSTS), n=st.integers(0, 5))
    def add(self, host: str, n: int) -> None:
        url = f"http://{host}/{n}"
        fp = fp_of(url)
        self.frontier.add(fp, url, host, {"url": url})
        if fp not in self.next_ms and fp not in self.garbled:  # new, or rediscovered after quarantine
            raw = self.store.get_record(host, fp)
            assert raw is not None
            # a new URL is due at once, its time its place in its queue's line
            now_ms = time_to_ms(self.now)
            self.next_ms[fp] = UrlRecord.from_bytes(raw).next_ms
            assert now_ms - ARRIVAL_LEAD_MS <= self.next_ms[fp] <= now_ms
            self.visits[fp] = self.failures[fp] = 0
            self.host[fp] = host
            self._record_rest(host)  # every write of a host's counters records its wait

    @rule(seconds=st.sampled_from([0.3, 1.0, 2.5, 10.0, 60.0]))
    def tick(self, seconds: float) -> None:
        self.now += seconds

    def _ready_hosts(self) -> set[str]:
        """Hosts the model says may be fetched now."""
        busy = set(self.out.values())
        return {
            self.host[fp]
            for fp, next_ms in self.next_ms.items()
            if next_ms / 1000 <= self.now
            and fp not in self.out
            and self.host[fp] not in busy
            and self.rest[self.host[fp]] <= self.now
        }

    @rule()
    def next(self) -> None:
        ready = self._ready_hosts()
        issued = self.frontier.next()
        moved_now = {fp for fp, raw in self.store.quarantined() if fp in self.garbled and raw == GARBAGE}
        for fp in moved_now:
            self._record_rest(self.host[fp])
        self.moved |= moved_now
        self.garbled -= moved_now
        if issued is None:
            assert not ready, f"hosts {sorted(ready)} are ready with a readable URL due, nothing was issued"
            return
        fp, host = issued.fp, issued.record.queue
        assert fp in self.next_ms, "issued a URL that is not a readable record"
        assert fp not in self.out and host not in self.out.values(), "valence 1 exceeded"
        assert self.next_ms[fp] / 1000 <= self.now, "issued before it was due"
        assert self.rest[host] <= self.now, f"host {host} fetched {self.rest[host] - self.now:.3f}s early"
        self.out[fp] = host
        self.fetching.add(fp)

    @precondition(lambda self: bool(self.out))
    @rule(
        data=st.data(),
        outcome=st.sampled_from([Outcome.VISITED, Outcome.VISITED, Outcome.RETRY, Outcome.FAILED]),
        wait=st.sampled_from([0.5, 5.0, 100.0]),
        duration=st.sampled_from([0.0, 2.0, 5.0]),
    )
    def verdict(self, data: st.DataObject, outcome: Outcome, wait: float, duration: float) -> None:
        fp = data.draw(st.sampled_from(sorted(self.out)))
        host = self.out.pop(fp)
        if fp in self.fetching:
            self.fetching.discard(fp)
            self.frontier.downloads.fetch_ended(fp, duration)
            self.rest[host] = self.now + min(max(duration, MIN_DELAY), MAX_DELAY)
        plan = Plan(wait) if outcome is Outcome.VISITED else None
        record = self.frontier.update(fp, Visit(outcome, status=200, queue=host), plan)
        assert record is not None
        self._record_rest(host)
        if outcome is Outcome.RETRY and self.failures[fp] + 1 > MAX_RETRIES:
            outcome = Outcome.FAILED
        if outcome is Outcome.VISITED:
            self.visits[fp] += 1
            self.total_visits += 1
            self.failures[fp] = 0
            self.next_ms[fp] = time_to_ms(self.now + wait)
        elif outcome is Outcome.RETRY:
            self.failures[fp] += 1
            self.next_ms[fp] = time_to_ms(self.now + RETRY_DELAY)
        else:
            self.next_ms[fp] = NEVER_MS

    @rule()
    def leases_lapse(self) -> None:
        self.now += LEASE + 0.5
        expired = set(self.frontier._leases.expire_leases())
        assert expired == set(self.out), "a URL stayed out after its lease"
        for fp in expired:
            if fp in self.fetching:
                self.rest[self.out[fp]] = self.now + MIN_DELAY
        self.out.clear()
        self.fetching.clear()

    @rule()
    def restart(self) -> None:
        """Close and reopen; URLs out are forgotten as after a kill -9 (the
        frontier writes nothing at close that a kill would skip)."""
        self.store.close()
        self.store = LevelDBStore(self.path, create=False)
        self.frontier = self._frontier()
        assert self.frontier.counts().out == 0
        self.out.clear()
        self.fetching.clear()
        # what was only in memory is gone; the recorded waits are kept, and
        # every known host rests its shortest wait from the restart (a fetch
        # in flight at the kill left no end time)
        self.rest = dict(self.recorded_rest)
        for host in set(self.host.values()):
            self.rest[host] = max(self.rest[host], self.now + MIN_DELAY)
        self.next()  # a resumed crawl asks at once

    @precondition(lambda self: any(fp not in self.out for fp in self.next_ms))
    @rule(data=st.data())
    def garble(self, data: st.DataObject) -> None:
        """Damage one stored record behind the frontier's back."""
        candidates = sorted(fp for fp in self.next_ms if fp not in self.out and fp not in self.moved)
        if not candidates:
            return
        fp = data.draw(st.sampled_from(candidates))
        self.store.write(Batch(records={(self.host[fp], fp): GARBAGE}))
        del self.next_ms[fp]
        self.garbled.add(fp)

    # -- invariants ----------------------------------------------------------

    @invariant()
    def every_url_is_known_or_kept_aside(self) -> None:
        quarantined = dict(self.store.quarantined())
        for fp, next_ms in self.next_ms.items():
            raw = self.store.get_record(self.host[fp], fp)
            assert raw is not None, "an added URL has no record"
            record = UrlRecord.from_bytes(raw)
            assert record.next_ms == next_ms
            assert record.visits == self.visits[fp], "a visit count went backwards (or jumped)"
        for fp in self.garbled:
            assert self.store.get_record(self.host[fp], fp) == GARBAGE
        for fp in self.moved - self.next_ms.keys():
            assert quarantined[fp] == GARBAGE and self.store.get_record(self.host[fp], fp) is None
        assert self.frontier.counts().urls == len(self.next_ms) + len(self.garbled)
        assert self.frontier.counts().quarantined == len(self.moved)
        assert self.frontier.counts().visits == self.total_visits  # host counters keep quarantined URLs' visits

    @invariant()
    def nothing_out_but_what_was_issued(self) -> None:
        assert self.frontier.counts().out == len(self.out)


TestRestartingFrontier = RestartingFrontier.TestCase
TestRestartingFrontier.settings = settings(
    max_examples=examples(60), stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
