"""Property-based tests of the frontier's queue invariants (hypothesis).

Random interleavings of add / next / fetch end / verdict / lease expiry /
clock moves, checked against a plain model after every step:

* a URL is never issued while out, nor before it is due;
* what is issued is the head of its queue in (directive, time) order, or
  a due URL of the head's directive later than the head relative to its
  own wait, while the head is late by less than its wait;
* a queue never has more than ``valence`` fetches running, and a slot is
  never reused before its politeness wait is over;
* no URL is ever lost: every added URL keeps exactly one record and one
  queue entry, whatever happened to it;
* counts kept incrementally equal counts recomputed from the store.
"""

from __future__ import annotations

import hashlib
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit, urgency
from scrapy_adaptive.model import Plan, UrlRecord
from scrapy_adaptive.store.keys import NEVER_MS, time_to_ms
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.hypo import examples

HOSTS = ["a", "b", "c"]
MIN_DELAY = 1.0


def fp_of(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


class FrontierMachine(RuleBasedStateMachine):
    valence = 2
    use_leveldb = False

    def __init__(self) -> None:
        super().__init__()
        self.now = 1_000.0
        if self.use_leveldb:
            self._tmp = tempfile.TemporaryDirectory()
            self.store = LevelDBStore(self._tmp.name + "/db")
        else:
            self.store = MemoryStore()
        self.frontier = Frontier(
            self.store,
            Politeness(
                delay_factor=1.0,
                min_delay=MIN_DELAY,
                max_delay=3.0,
                valence=self.valence,
                retry_delay=50.0,
                max_retries=2,
                lease=30.0,
            ),
            clock=lambda: self.now,
        )
        self.known: set[bytes] = set()
        self.out: dict[bytes, str] = {}  # fp -> queue
        self.fetching: dict[bytes, str] = {}  # out and still downloading
        self.running: dict[str, int] = {h: 0 for h in HOSTS}
        self.slot_free: dict[str, list[float]] = {h: [] for h in HOSTS}

    def teardown(self) -> None:
        self.store.close()
        if self.use_leveldb:
            self._tmp.cleanup()

    @rule(
        host=st.sampled_from(HOSTS), n=st.integers(0, 6), directive=st.sampled_from([0, 0, 0, 1]), force=st.booleans()
    )
    def add(self, host: str, n: int, directive: int, force: bool) -> None:
        url = f"http://{host}/{n}"
        fp = fp_of(url)
        self.frontier.add(fp, url, host, {"url": url}, directive=directive, force=force)
        self.known.add(fp)

    @rule(seconds=st.sampled_from([0.1, 0.5, 1.0, 2.0, 10.0, 20.0, 60.0]))
    def tick(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def next(self) -> None:
        entries_before = {h: list(self.store.queue_entries(h, limit=100)) for h in HOSTS}
        issued = self.frontier.next()
        if issued is None:
            return
        fp, record = issued.fp, issued.record
        host = record.queue
        assert fp not in self.out, "issued a URL that is already out"
        assert record.next_ms <= time_to_ms(self.now), "issued a URL before it was due"
        candidates = [e for e in entries_before[host] if e[2] not in self.out]
        assert candidates, "issued from an empty queue"
        head = candidates[0]
        if head[2] != fp:
            # only a due URL of the head's rank, later relative to its own
            # wait, goes ahead of the head, and only while the head is
            # late by less than a wait (urgency.py)
            now_ms = time_to_ms(self.now)
            issued_entry = next(e for e in candidates if e[2] == fp)
            assert issued_entry[0] == head[0], "went ahead of a higher directive"
            assert candidates.index(issued_entry) < urgency.WINDOW, "issued beyond the weighed window"
            assert head[1] < now_ms, "went ahead of a head that was not late"

            window = [e for e in candidates if e[0] == head[0] and e[1] <= now_ms][: urgency.WINDOW]
            records = {e[2]: UrlRecord.from_bytes(self.store.get_record(host, e[2]) or b"") for e in window}
            waits = {k: max(r.wait, 1.0) for k, r in records.items() if r.visits and r.wait}
            shortest = min(waits.values(), default=1.0)

            def relative(entry: tuple[int, int, bytes]) -> float:
                return (now_ms - entry[1]) / 1000 / waits.get(entry[2], shortest)

            assert issued_entry[1] <= now_ms, "issued a URL before it was due"
            assert relative(head) < 1.0, "went ahead of a head late by a whole wait"
            assert relative(issued_entry) >= relative(head), "went ahead with a URL less late for its wait"
        assert self.running[host] < self.valence, "valence exceeded"
        free = sorted(self.slot_free[host])
        if len(free) >= self.valence:  # every slot has been used before
            assert free[0] <= self.now + 1e-9, "slot reused before its politeness wait ended"
            self.slot_free[host].remove(free[0])
        self.out[fp] = host
        self.fetching[fp] = host
        self.running[host] += 1

    def _end_fetch(self, fp: bytes, duration: float) -> None:
        host = self.fetching.pop(fp, None)
        if host is None:
            return
        self.running[host] -= 1
        self.slot_free[host].append(self.now + min(max(duration, MIN_DELAY), 3.0))

    @precondition(lambda self: bool(self.fetching))
    @rule(data=st.data(), duration=st.sampled_from([0.0, 0.5, 2.0, 5.0]))
    def fetch_ends(self, data: st.DataObject, duration: float) -> None:
        fp = data.draw(st.sampled_from(sorted(self.fetching)))
        self.frontier.downloads.fetch_ended(fp, duration)
        self._end_fetch(fp, duration)

    @precondition(lambda self: bool(self.out))
    @rule(
        data=st.data(),
        outcome=st.sampled_from([Outcome.VISITED, Outcome.VISITED, Outcome.RETRY, Outcome.DISREGARDED]),
        change=st.sampled_from(list(ChangeState)),
        wait=st.sampled_from([1.0, 5.0, 30.0, 100.0]),
    )
    def verdict(self, data: st.DataObject, outcome: Outcome, change: ChangeState, wait: float) -> None:
        fp = data.draw(st.sampled_from(sorted(self.out)))
        if fp in self.fetching:
            self.frontier.downloads.fetch_ended(fp, 0.0)
            self._end_fetch(fp, 0.0)
        plan = Plan(wait) if outcome is Outcome.VISITED else None
        record = self.frontier.update(fp, Visit(outcome, change=change, status=200), plan)
        assert record is not None
        if record.outcome == "visited":
            assert record.next_ms == time_to_ms(self.now + wait)
        del self.out[fp]

    @rule()
    def expire(self) -> None:
        for fp in self.frontier._leases.expire_leases():
            if fp in self.fetching:
                host = self.fetching.pop(fp)
                self.running[host] -= 1
                self.slot_free[host].append(self.now + MIN_DELAY)
            del self.out[fp]

    @invariant()
    def nothing_is_lost(self) -> None:
        entries = [e for h in HOSTS for e in self.store.queue_entries(h, limit=1000)]
        fps = [e[2] for e in entries]
        assert sorted(fps) == sorted(self.known), "a URL lost its queue entry or has two"
        for h in HOSTS:
            for directive, next_ms, fp in self.store.queue_entries(h, limit=1000):
                raw = self.store.get_record(h, fp)
                assert raw is not None, "a queue entry without its record"
                record = UrlRecord.from_bytes(raw)
                assert (record.directive, record.next_ms) == (directive, next_ms), "record and queue entry disagree"

    @invariant()
    def counts_match_the_store(self) -> None:
        records = [UrlRecord.from_bytes(raw) for _, raw in self.store.records()]
        shape = self.frontier.shape(due_limit=0)
        assert shape["urls"] == len(self.known) == len(records)
        assert shape["never"] == sum(1 for r in records if r.next_ms >= NEVER_MS)
        assert shape["out"] == len(self.out)
        assert self.frontier.has_pending() == (bool(self.out) or any(r.next_ms < NEVER_MS for r in records))


class LevelDBFrontierMachine(FrontierMachine):
    use_leveldb = True
    valence = 1


TestFrontierMemory = FrontierMachine.TestCase
TestFrontierMemory.settings = settings(
    max_examples=examples(150), stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestFrontierLevelDB = LevelDBFrontierMachine.TestCase
TestFrontierLevelDB.settings = settings(
    max_examples=examples(60), stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
