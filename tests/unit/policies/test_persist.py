"""The policies' shared aggregates survive a restart (policies/persist.py)."""

from __future__ import annotations

import json
import random

import pytest

from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies import BurstWaitPolicy, WaitParams, persist

DAY = 86_400.0


def _crawl(policy: BurstWaitPolicy, records: dict[int, dict], rounds: int, rng: random.Random, t0: float) -> float:
    """Visit every URL *rounds* times in its own rhythm; returns the last time."""
    t = t0
    for _ in range(rounds):
        for i, history in records.items():
            wait = history.get("wait")
            t = (history.get("fetched") or t0) + (wait or 0.0)
            changed = rng.random() < 0.5
            visit = Visit(
                Outcome.VISITED,
                status=200,
                change=ChangeState.CHANGED if changed or not wait else ChangeState.UNCHANGED,
                url=f"https://h{i % 5}.example/p{i}",
                fetched=t,
            )
            plan = policy.plan(history, visit)
            records[i] = {
                "visits": history.get("visits", 0) + 1,
                "fetched": t,
                "wait": plan.wait,
                "discovered": t0,
                "policy": plan.memory,
            }
    return t


def _fresh(budget: float | None = 500.0) -> tuple[BurstWaitPolicy, dict]:
    params = WaitParams(budget=budget)
    return BurstWaitPolicy.from_params(params), params.crawl.persisted()


def test_a_restored_crawl_continues_the_same_aggregates() -> None:
    rng = random.Random(3)
    first, first_shared = _fresh()
    records: dict[int, dict] = {i: {"visits": 0, "discovered": 0.0, "policy": {}} for i in range(200)}
    _crawl(first, records, 4, rng, 1_000_000.0)
    raw = persist.dump_shared(first_shared)
    assert raw is not None and json.loads(raw)["format"] == persist.FORMAT

    second, second_shared = _fresh()
    assert persist.restore_shared(second_shared, raw) == ["rate_allocator", "header_belief", "burst_offsets"]
    a, b = first.allocator, second.allocator
    assert (b.epoch, b.prior.get(), b.prior.count) == (a.epoch, a.prior.get(), a.prior.count)
    assert [p.get() for p in second.offsets] == [p.get() for p in first.offsets]
    a.solve()
    b.solve()
    assert b.ratio == pytest.approx(a.ratio)
    assert b.planned_rate() == pytest.approx(a.planned_rate())
    # the same epoch: revisits replace their old contributions instead of adding to them
    before = b.prior.count
    copy = {i: dict(r) for i, r in records.items()}
    _crawl(second, copy, 1, random.Random(4), 0.0)
    assert b.prior.count == before
    assert sum(c[0] for cells in b._hosts.values() for c in cells.values()) == pytest.approx(200)


def test_the_checks_of_first_visit_headers_survive_a_restart() -> None:
    """What a crawl learned of its hosts' Last-Modified headers (which lie,
    per sibling class) is saved with the other aggregates: a restarted crawl
    does not check old-dated pages of a host proven honest as if it knew
    nothing of it."""
    first, first_shared = _fresh()
    belief = first_shared["header_belief"]
    for i in range(6):
        belief.note("h.example", False, f"https://h.example/img/{i}.jpg")
        belief.note("h.example", True, f"https://h.example/p/{i}.html")
    belief.note("g.example", False)
    raw = persist.dump_shared(first_shared)
    assert raw is not None
    second, second_shared = _fresh()
    assert second_shared["header_belief"].lie_probability("h.example") == pytest.approx(0.5)
    persist.restore_shared(second_shared, raw)
    restored = second_shared["header_belief"]
    assert restored is second.header_belief
    for queue, url in (
        ("h.example", "https://h.example/img/9.jpg"),
        ("h.example", "https://h.example/p/9.html"),
        ("g.example", None),
    ):
        assert restored.lie_probability(queue, url) == pytest.approx(belief.lie_probability(queue, url))
    assert (
        restored.lie_probability("h.example", "https://h.example/img/9.jpg")
        < 0.25
        < restored.lie_probability("h.example", "https://h.example/p/9.html")
    )
    with pytest.raises(ValueError, match="header_belief"):
        persist.restore_shared(second_shared, b'{"format": 1, "shared": {"header_belief": {"total": [1]}}}')


def test_a_fresh_allocator_without_the_state_counts_everything_twice() -> None:
    """What the saved state prevents: a new epoch cannot take old contributions back."""
    rng = random.Random(3)
    first, first_shared = _fresh()
    records: dict[int, dict] = {i: {"visits": 0, "discovered": 0.0, "policy": {}} for i in range(100)}
    _crawl(first, records, 3, rng, 1_000_000.0)
    second, second_shared = _fresh()
    _crawl(second, records, 1, rng, 0.0)
    assert second.prior.count == 100  # only what was revisited since the restart
    assert first.prior.count == 100


def test_an_unreadable_state_is_reported_with_the_key() -> None:
    _, shared = _fresh()
    with pytest.raises(ValueError, match="policy-shared"):
        persist.restore_shared(shared, b"{not json")
    with pytest.raises(ValueError, match="policy-shared.*rate_allocator"):
        persist.restore_shared(shared, b'{"format": 1, "shared": {"rate_allocator": {"epoch": 1}}}')
    assert persist.dump_shared({}) is None


def test_a_state_of_the_wrong_shape_leaves_every_aggregate_fresh() -> None:
    """Valid JSON of another shape (a tampered or foreign database) is the same
    refusal as garbage, and what was restored before the bad key is undone."""
    first, first_shared = _fresh()
    rng = random.Random(5)
    records: dict[int, dict] = {i: {"visits": 0, "discovered": 0.0, "policy": {}} for i in range(50)}
    _crawl(first, records, 2, rng, 1_000_000.0)
    good = json.loads(persist.dump_shared(first_shared) or b"{}")
    _, shared = _fresh()
    fresh = persist.dump_shared(shared)
    for bad in ({"epoch": 5, "hosts": [1]}, [1, 2], "x"):
        rest = {k: v for k, v in good["shared"].items() if k != "rate_allocator"}
        doc = {"format": 1, "shared": {**rest, "rate_allocator": bad}}  # the others restored first
        with pytest.raises(ValueError, match="rate_allocator"):
            persist.restore_shared(shared, json.dumps(doc).encode())
        assert persist.dump_shared(shared) == fresh
    with pytest.raises(ValueError, match="not a mapping"):
        persist.restore_shared(shared, b'{"format": 1, "shared": [1]}')


def test_the_stored_memory_keys_stay_readable() -> None:
    """The policy memory's stored keys are part of the state folder: names may
    change, the letters never."""
    from scrapy_adaptive.policies.memory import MEMORY_KEYS

    assert dict(MEMORY_KEYS) == {
        "observations": "o",
        "last_modified_agreement": "lm",
        "estimate": "e",
        "age_unchecked": "ua",
        "prior_contribution": "pp",
        "sibling_contribution": "sr",
        "allocation": "al",
        "burst_state": "s",
        "burst_offset_0": "b0",
        "burst_offset_1": "b1",
        "burst_offset_2": "b2",
        "noise_guard": "ng",
        "fix_bits": "b",
        "window_bits": "w",
        "window_seen": "n",
        "markov_state": "p",
        "markov_tables": "t",
        "held_interval": "hv",
    }
