"""Change-rate estimators, the allocator and the rate policies."""

from __future__ import annotations

import heapq
import json
import math
import random
from dataclasses import replace
from email.utils import formatdate
from typing import Any

import pytest

from bench.sim.estimators import (
    bias_reduced_rate,
    complete_history_rate,
    interval_mle,
    last_modified_rate,
    naive_rate,
)
from scrapy_adaptive.model import ChangeState, Outcome, UrlRecord, Visit
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.estimator import (
    AGE,
    AGE_OUTLIER,
    CHANGED,
    EXACT,
    RateEstimator,
    age_tail,
    posterior_log_rate,
)
from scrapy_adaptive.policies.history import record_queue
from scrapy_adaptive.policies.memory import ALLOCATION
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.rate import PrecisionWaitPolicy, ProportionalWaitPolicy

DAY = 86_400.0


def posterior_mode_rate(*args: Any, **kwargs: Any) -> float:
    """λ at the posterior mode."""
    return math.exp(posterior_log_rate(*args, **kwargs)[0])


def binomial_mean(n: int, p: float, f: Any) -> float:
    return sum(math.comb(n, x) * p**x * (1 - p) ** (n - x) * f(x) for x in range(n + 1))


def test_notes_figures_for_the_naive_and_bias_reduced_estimators() -> None:
    interval, n = 1.0, 10
    # naive at r = 2: mean (1 − e^−2)/I = 0.43 of the truth
    p = 1 - math.exp(-2.0)
    assert binomial_mean(n, p, lambda x: naive_rate(n, x, interval)) / 2.0 == pytest.approx(0.432, abs=0.001)
    # bias-reduced: "within 3 %" for r ≤ 2 at n = 10 – exactly, 3.04 % at r = 2
    worst = max(
        abs(binomial_mean(n, 1 - math.exp(-r), lambda x: bias_reduced_rate(n, x, interval)) / r - 1)
        for r in (0.1, 0.5, 1.0, 1.5, 2.0)
    )
    assert worst == pytest.approx(0.0304, abs=0.0005)
    assert math.isfinite(bias_reduced_rate(n, n, interval))


def synthetic_history(rate: float, visits: int, seed: int) -> tuple[list[float], float]:
    """Irregular intervals (log-uniform 0.1–10 mean intervals) on a Poisson page."""
    rng = random.Random(seed)
    changed, unchanged = [], 0.0
    for _ in range(visits):
        t = math.exp(rng.uniform(math.log(0.1), math.log(10))) / rate
        if rng.random() < 1 - math.exp(-rate * t):
            changed.append(t)
        else:
            unchanged += t
    return changed, unchanged


def test_interval_mle_recovers_the_rate() -> None:
    rate = 1 / (3 * DAY)
    estimates = [interval_mle(*synthetic_history(rate, 400, seed)) for seed in range(5)]
    for est in estimates:
        assert est == pytest.approx(rate, rel=0.2)
    assert sum(estimates) / len(estimates) == pytest.approx(rate, rel=0.08)
    assert interval_mle([], 10.0) == 0.0
    assert interval_mle([5.0], 0.0) == math.inf


def test_interval_mle_solves_the_score_equation() -> None:
    changed, unchanged = synthetic_history(2.0, 50, 3)
    lam = interval_mle(changed, unchanged)
    assert sum(t / math.expm1(lam * t) for t in changed) == pytest.approx(unchanged, rel=1e-6)


def test_posterior_mode_with_a_flat_prior_is_the_mle() -> None:
    changed, unchanged = synthetic_history(1 / DAY, 60, 11)
    mle = interval_mle(changed, unchanged)
    mode = posterior_mode_rate(changed, unchanged, 0, math.log(1 / DAY), 1e4)
    assert mode == pytest.approx(mle, rel=1e-4)


def test_posterior_mode_is_finite_and_shrinks_toward_the_prior() -> None:
    prior = math.log(1 / (7 * DAY))
    every = posterior_mode_rate([DAY] * 5, 0.0, 0, prior, 1.0)  # changed at every visit
    assert math.isfinite(every) and every > 1 / DAY
    never = posterior_mode_rate([], 5 * DAY, 0, prior, 1.0)
    assert 0 < never < 1 / (7 * DAY)
    # exact (Last-Modified) observations alone: the mode approaches X/T as the prior widens
    assert posterior_mode_rate([], 10 * DAY, 5, prior, 1e4) == pytest.approx(last_modified_rate(5, 10 * DAY), rel=1e-3)


def test_complete_history_rate() -> None:
    assert complete_history_rate(9, 10.0, prior_changes=1.0) == 1.0
    assert complete_history_rate(0, 10.0, prior_time=10.0) == pytest.approx(0.025)


def test_allocator_spends_the_budget_proportionally() -> None:
    alloc = RateAllocator(100 / DAY, min_wait=60, max_wait=1e9, epoch="t", bins_per_octave=64)
    rng = random.Random(1)
    rates = [math.exp(rng.gauss(math.log(1 / DAY), 1)) for _ in range(1000)]
    for i, rate in enumerate(rates):
        alloc.register({}, f"h{i % 10}", rate)
    alloc.solve()
    planned = sum(1 / alloc.wait(f"h{i % 10}", r) for i, r in enumerate(rates))
    assert planned == pytest.approx(100 / DAY, rel=0.02)
    # every page gets the same expected number of changes per interval
    ratios = {round(r * alloc.wait("h0", r), 6) for r in rates[:50]}
    assert max(ratios) / min(ratios) < 1.02


def test_allocator_replaces_a_registration_and_clips() -> None:
    alloc = RateAllocator(10 / DAY, min_wait=3600, max_wait=10 * DAY, epoch="t")
    memory: dict[str, Any] = {}
    alloc.register(memory, "h", 1 / DAY)
    alloc.register(memory, "h", 2 / DAY)
    assert sum(n for n, _ in alloc._hosts["h"].values()) == 1
    assert memory["al"][:3] == ["t", "h", 2 / DAY]
    json.dumps(memory)
    assert alloc.wait("h", 1e-12) == 10 * DAY
    assert alloc.wait("h", 1.0) == 3600
    # another allocator's registration is not removed from this one
    other = RateAllocator(10 / DAY, epoch="u")
    other.register(memory, "h", 1 / DAY)
    assert sum(n for n, _ in other._hosts["h"].values()) == 1


def test_a_rate_moving_within_its_cell_leaves_the_same_histograms_as_a_remove_and_add() -> None:
    """Most revisits re-register a rate that moved by less than a bin: the
    allocator moves it within its cell.  Its histograms, URL counts and
    plan are those of removing the old rate and adding the new one."""
    rng = random.Random(7)
    moved = RateAllocator(50 / DAY, epoch="t", host_caps={"capped": 1 / DAY})
    general = RateAllocator(50 / DAY, epoch="t", host_caps={"capped": 1 / DAY})
    general._move = lambda *args: False  # type: ignore[method-assign]  # always the general path
    hosts = ["a", "b", "capped"]
    memories: list[tuple[dict[str, Any], dict[str, Any], str]] = [({}, {}, rng.choice(hosts)) for _ in range(60)]
    for step in range(600):
        m1, m2, host = memories[rng.randrange(len(memories))]
        rate = (1 + rng.random() * 0.05) * 2.0 ** rng.choice([-16, -15, -12]) if step % 7 else 0.0
        fallback = step % 11 == 0
        moved.register(m1, host, rate, fallback=fallback)
        general.register(m2, host, rate, fallback=fallback)
    assert moved._hosts == general._hosts and moved._global == general._global
    assert moved.urls() == general.urls() == len({id(m[0]) for m in memories if m[0]})
    assert moved._bound == general._bound == {"capped"}
    moved.solve()
    general.solve()
    assert moved.ratio == general.ratio


def test_water_filling_caps_a_host_and_gives_the_rest_to_others() -> None:
    cap = 10 / DAY
    alloc = RateAllocator(200 / DAY, min_wait=60, max_wait=1e9, host_caps={"small": cap}, epoch="t")
    for _ in range(100):
        alloc.register({}, "small", 1 / DAY)
        alloc.register({}, "big", 1 / DAY)
    alloc.solve()
    small = 100 / alloc.wait("small", 1 / DAY)
    big = 100 / alloc.wait("big", 1 / DAY)
    assert small == pytest.approx(cap, rel=0.01)
    assert small + big == pytest.approx(200 / DAY, rel=0.01)
    assert alloc.ratio_for("small") > alloc.ratio_for("big")
    # the capped host is reported as chronically overdue, by how much
    overdue = alloc.capped_hosts()
    assert set(overdue) == {"small"} and overdue["small"] > 1


def test_allocator_feedback_pulls_the_realised_rate_to_the_budget() -> None:
    alloc = RateAllocator(100 / DAY, epoch="t", control_window=DAY, solve_every=10)
    alloc.register({}, "h", 1 / DAY)
    for k in range(2000):  # 200 a day: twice the budget
        alloc.note_fetch(k * DAY / 200)
    assert alloc.correction < 0.6


def visit(change: ChangeState, overdue: float = 0.0, last_modified: str | None = None) -> Visit:
    return Visit(
        Outcome.VISITED,
        status=200,
        change=change,
        url="https://h.example/p",
        overdue=overdue,
        last_modified=last_modified,
    )


def drive(policy: Any, rate: float, visits: int, seed: int, start: float = 1.7e9) -> tuple[list[float], dict[str, Any]]:
    """Visit a Poisson page as the policy says; return the waits and the final memory."""
    rng = random.Random(seed)
    record: dict[str, Any] = {"visits": 0, "wait": None, "fetched": None, "discovered": start, "policy": {}}
    waits = []
    now = start
    for n in range(visits):
        if n:
            changed = rng.random() < 1 - math.exp(-rate * record["wait"])
            v = visit(ChangeState.CHANGED if changed else ChangeState.UNCHANGED)
        else:
            v = visit(ChangeState.CHANGED)
        plan = policy.plan(record, v)
        wait = plan.wait
        waits.append(wait)
        json.dumps(plan.memory)
        record = {"visits": n + 1, "wait": wait, "fetched": now, "discovered": start, "policy": plan.memory}
        now += wait
    return waits, record["policy"]


def test_precision_policy_targets_the_change_probability() -> None:
    rate = 1 / (2 * DAY)
    policy = PrecisionWaitPolicy(0.5, min_wait=60, max_wait=100 * DAY, prior=PopulationPrior(rate=1 / (20 * DAY)))
    logs = []
    for seed in range(20):  # 20 pages: one page's 24-visit window is a noisy estimate
        waits, memory = drive(policy, rate, 120, seed=seed)
        logs += [math.log(w) for w in waits[-30:]]
        assert len(memory["o"]) == RateEstimator().window
    target = math.log(2) / rate
    assert math.exp(sum(logs) / len(logs)) == pytest.approx(target, rel=0.15)


def test_proportional_policy_estimates_and_registers() -> None:
    alloc = RateAllocator(1 / DAY, min_wait=60, max_wait=100 * DAY, epoch="t")
    policy = ProportionalWaitPolicy(alloc)
    _, memory = drive(policy, 1 / DAY, 60, seed=3)
    assert memory["e"] == pytest.approx(1 / DAY, rel=0.5)
    assert memory["al"][1] == "h.example"
    # one URL holds the whole budget of one fetch a day (times the feedback correction): r* = λ/f,
    # once solved for the last estimate (a small crawl re-solves every MIN_PENDING fetches)
    alloc.solve()
    assert alloc.ratio == pytest.approx(memory["e"] * DAY / alloc.correction, rel=0.01)
    assert 0.5 <= alloc.correction <= 2.0


def test_last_modified_is_used_once_consistent() -> None:
    from email.utils import formatdate

    est = RateEstimator()
    memory: dict[str, Any] = {}
    est.observe(
        memory,
        DAY,
        visit(ChangeState.CHANGED, last_modified=formatdate(1000 + DAY - 3600, usegmt=True)),
        1000,
        1000 + DAY,
    )
    assert memory["o"][-1] == [3600, 2]
    # a Last-Modified older than the previous visit although the content changed: distrusted for good
    est.observe(
        memory, DAY, visit(ChangeState.CHANGED, last_modified=formatdate(500, usegmt=True)), 1000 + DAY, 1000 + 2 * DAY
    )
    est.observe(
        memory,
        DAY,
        visit(ChangeState.CHANGED, last_modified=formatdate(1000 + 3 * DAY - 60, usegmt=True)),
        1000 + 2 * DAY,
        1000 + 3 * DAY,
    )
    assert memory["lm"] == [2, 1]
    # and the exact age it gave is only "a change within that time" now
    assert [k for _, k in memory["o"]] == [1, 1, 1]


def test_noise_guard_holds_a_page_that_changes_at_every_fetch() -> None:
    alloc = RateAllocator(50 / DAY, min_wait=3600, max_wait=28 * DAY, epoch="t")
    policy = ProportionalWaitPolicy(alloc)
    record: dict[str, Any] = {"visits": 0, "wait": None, "fetched": None, "discovered": 0.0, "policy": {}}
    now, waits = 0.0, []
    for n in range(30):
        v = visit(ChangeState.CHANGED)
        plan = policy.plan(record, v)
        wait = plan.wait
        waits.append(wait)
        record = {"visits": n + 1, "wait": wait, "fetched": now, "discovered": 0.0, "policy": plan.memory}
        now += wait
    assert waits[-1] == 28 * DAY


def test_posterior_log_rate_variance_is_the_laplace_curvature() -> None:
    prior = math.log(1 / (7 * DAY))
    u, var = posterior_log_rate([], 0.0, 0, prior, 1.5)
    assert (u, var) == (pytest.approx(prior), pytest.approx(1.5**2))  # no data: the prior itself
    _, few = posterior_log_rate([DAY, 3 * DAY], 10 * DAY, 0, prior, 1.5)
    _, many = posterior_log_rate([DAY, 3 * DAY] * 10, 100 * DAY, 0, prior, 1.5)
    assert many < few < 1.5**2  # data narrow the posterior


def test_population_prior_learns_mean_and_spread_from_urls_with_few_visits() -> None:
    """Empirical Bayes over every URL: 3 visits each are enough for the population.

    Learning from mature URLs only would put the mean too high (fast pages
    have many visits first); EM on the Laplace posteriors recovers the mean,
    and a spread that is narrower than the truth by design (the Laplace
    variance misses the tail of all-changed histories; see PopulationPrior).
    """
    rng = random.Random(7)
    mu, sigma = math.log(1 / (14 * DAY)), 1.0
    interval = 14 * DAY
    estimator = RateEstimator()
    prior = PopulationPrior(min_count=50, epoch="t")
    memories = []
    for _ in range(2_000):
        lam = math.exp(rng.gauss(mu, sigma))
        obs = [[round(interval), int(rng.random() < 1 - math.exp(-lam * interval))] for _ in range(3)]
        memories.append({"o": obs})
    for _ in range(15):  # EM sweeps: each URL re-contributes under the current prior
        for memory in memories:
            prior.update(memory, *estimator.posterior(memory, prior.get()))
    learned_mu, learned_sigma = prior.get()
    assert prior.count == 2_000
    assert learned_mu == pytest.approx(mu, abs=0.2)
    assert 0.55 * sigma < learned_sigma < sigma
    for memory in memories:  # withdrawing every contribution leaves nothing behind
        prior.update(memory, None)
    assert prior.count == 0 and abs(prior.sum_modes) < 1e-6
    assert prior.get() == prior.fallback


def test_half_life_discounts_old_intervals() -> None:
    """Observations are consecutive intervals: the newest counts fully, older ones
    by 2^(−age/half-life), so a page that turned quiet is believed quiet sooner."""
    busy_then_quiet = {"o": [[round(DAY), 1]] * 12 + [[round(10 * DAY), 0]] * 6}
    prior = (math.log(1 / (7 * DAY)), 2.0)
    forgetful = RateEstimator(half_life=30 * DAY).estimate(busy_then_quiet, prior)
    steady = RateEstimator(half_life=None).estimate(busy_then_quiet, prior)
    assert forgetful < steady
    # without a discount the weights are all 1: the plain posterior mode
    assert steady == pytest.approx(posterior_mode_rate([DAY] * 12, 60 * DAY, 0, prior[0], prior[1]), rel=1e-6)


def test_only_caps_that_can_bind_are_solved_host_by_host() -> None:
    """Thousands of small hosts capped by politeness stay in the merged histogram:
    their demand can never reach their cap, so a solve does not loop over them."""
    allocator = RateAllocator(50.0, min_wait=3_600.0, max_wait=30 * DAY, epoch="t")
    for h in range(2_000):
        allocator.set_host_cap(f"small{h}.example", 0.4)
        for _ in range(5):
            allocator.register({}, f"small{h}.example", 1 / DAY)
    allocator.set_host_cap("big.example", 0.4)
    for _ in range(5_000):
        allocator.register({}, "big.example", 1 / 3_600)
    allocator.solve()
    assert allocator._bound == {"big.example"}
    assert set(allocator.capped_hosts()) == {"big.example"}
    # the big host gets its cap, the rest of the budget goes to the others
    big = sum(c[0] for c in allocator._hosts["big.example"].values())
    assert big / allocator.wait("big.example", 1 / 3_600) == pytest.approx(0.4, rel=0.05)
    # removing the cap merges the host back
    allocator.set_host_cap("big.example", None)
    assert allocator._bound == set()


def test_the_allocator_groups_urls_by_their_politeness_queue() -> None:
    """With ``ADAPTIVE_POLITENESS_KEY = "domain"`` the scheduler caps
    ``example.com``: URLs of ``a.example.com`` must be registered there too,
    or the cap never applies."""
    cap = 10 / DAY
    allocator = RateAllocator(1.0, min_wait=3_600.0, max_wait=30 * DAY, host_caps={"example.com": cap}, epoch="t")
    policy = ProportionalWaitPolicy(allocator)
    memories = []
    for i in range(200):
        verdict = Visit(
            Outcome.VISITED,
            status=200,
            change=ChangeState.CHANGED,
            url=f"http://a.example.com/{i}",
            queue="example.com",
            fetched=1.7e9,
        )
        memories.append(policy.plan({"discovered": 1.7e9}, verdict).memory or {})
    allocator.solve()
    assert {m[ALLOCATION][1] for m in memories} == {"example.com"}
    assert set(allocator._hosts) == {"example.com"}
    assert "example.com" in allocator.capped_hosts()
    # URLs nothing is known of count at the current fallback rate (B/N), not the one they were registered at
    fallback = allocator.fallback_rate()
    assert fallback and all(len(m[ALLOCATION]) == 4 for m in memories)
    planned = sum(1 / allocator.wait("example.com", fallback) for m in memories)
    assert planned == pytest.approx(cap, rel=0.05)
    # a verdict without a queue (the simulator before, old callers): the URL's host
    unqueued = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, url="http://B.example.com/x")
    assert (policy.plan({"discovered": 1.7e9}, unqueued).memory or {})[ALLOCATION][1] == "b.example.com"


def test_the_queue_comes_from_the_record_snapshot() -> None:
    record = UrlRecord(url="http://a.example.com/x", queue="example.com", request={}, next_ms=0)
    assert record.snapshot()["queue"] == "example.com"
    assert record_queue(record.snapshot(), record.url) == "example.com"
    assert record_queue({}, "http://a.example.com/x") == "a.example.com"


def test_a_budget_beyond_what_politeness_allows_reports_finite_factors() -> None:
    """The changing-web run's numbers: 10 hosts of 90 URLs, DOWNLOAD_DELAY 3
    (cap 1/3 fetch/s each), waits 10 s .. 1200 s, and a target of 400,000
    revisits a day (200,000 and the feedback loop at its upper limit, when
    it scaled the budget but not the caps): the plan cannot spend it.  The
    budget line printed "14731093773394522.0x too rare" (r* at e^-40)."""
    alloc = RateAllocator(400_000 / DAY, min_wait=10, max_wait=1200, control_window=60, epoch="t")
    rng = random.Random(3)
    for h in range(10):
        alloc.set_host_cap(f"h{h}", 1 / 3)
        for _ in range(90):
            alloc.register({}, f"h{h}", math.exp(rng.gauss(math.log(1 / 300), 1.5)))
    alloc.solve()
    assert math.isfinite(alloc.ratio) and alloc.ratio > 1e-6
    factors = alloc.capped_hosts()
    assert len(factors) == 10
    # bounded by URLs × fastest rate / cap = 90 × 0.1 × 3 = 27
    assert all(1 < f <= 27.001 for f in factors.values()), factors
    for h in range(10):
        assert 10 <= alloc.wait(f"h{h}", 1 / 300) <= 1200


def test_the_feedback_loop_does_not_wind_up_while_the_plan_is_saturated() -> None:
    """Politeness allows 2 fetches/s in all and the budget asks for 4: the
    realised rate stays at 2, and the correction must not climb to its
    limit (it would then overspend for windows once more capacity appears)."""
    alloc = RateAllocator(4.0, min_wait=10, max_wait=1200, control_window=60, solve_every=1, epoch="t")
    for h in range(2):
        alloc.set_host_cap(f"h{h}", 1.0)
        for _ in range(50):
            alloc.register({}, f"h{h}", 0.01)
    for k in range(2000):  # 2 a second for 1000 s
        alloc.note_fetch(1000.0 + k / 2)
    assert alloc.correction == pytest.approx(1.0)


def test_a_late_visit_takes_its_lateness_off_the_next_wait() -> None:
    """Issue 13: counted from a late fetch, each interval grows by the
    politeness backlog and the budget goes unspent; the next wait keeps the
    cadence the allocator planned (the lateness off, at most half of it)."""
    alloc = RateAllocator(1 / DAY, min_wait=60, max_wait=100 * DAY, epoch="t")
    policy = ProportionalWaitPolicy(alloc)
    _, memory = drive(policy, 1 / DAY, 20, seed=3)
    record = {"visits": 20, "wait": DAY, "fetched": 1.7e9, "discovered": 1.6e9, "policy": memory}
    late = visit(ChangeState.UNCHANGED, overdue=600.0)
    plan = policy.plan(record, late)
    assert plan.memory is not None
    planned = alloc.wait("h.example", plan.memory["e"])
    assert planned > 1200  # the lateness is within the credit
    assert plan.wait == pytest.approx(planned - 600.0)
    # on time: the plan as is
    record["policy"] = plan.memory
    plan = policy.plan(record, visit(ChangeState.UNCHANGED))
    assert plan.memory is not None and plan.wait == pytest.approx(alloc.wait("h.example", plan.memory["e"]))


def test_the_cadence_credit_is_bounded() -> None:
    from scrapy_adaptive.policies.rate import keep_cadence

    assert keep_cadence(100.0, 30.0, 10.0) == 70.0
    assert keep_cadence(100.0, 10 * DAY, 10.0) == 50.0  # days late (a restart): half the wait at most
    assert keep_cadence(100.0, 95.0, 60.0) == 60.0  # never below the minimum wait
    assert keep_cadence(10.0, 5.0, 10.0) == 10.0  # at the minimum already
    assert keep_cadence(100.0, None, 10.0) == 100.0


def test_a_held_change_a_probe_delivers_counts_in_the_interval_before_the_probe() -> None:
    """Issue 46: the learner holds a page's first difference back until a
    probe settles it; a probe that shows it was an edit delivers it.  The
    change belongs to the held visit's interval, not to the probe's second
    (which would read as a page changing every second); a held difference
    that was noise is that interval unchanged."""
    from scrapy_adaptive.change.noise_learner import HELD_BACK, HELD_CHANGE, PROBED

    def estimate(second: ChangeState, held: str | None) -> float:
        alloc = RateAllocator(100 / DAY, min_wait=1, max_wait=100 * DAY, epoch="t")
        policy = ProportionalWaitPolicy(alloc)
        record: dict[str, Any] = {"visits": 0, "discovered": 1.7e9, "policy": {}}
        now = 1.7e9
        steps: tuple[tuple[ChangeState, float, list[str]], ...] = ((ChangeState.CHANGED, 0, []), (second, 3600, []))
        if held is not None:
            steps = (
                (ChangeState.CHANGED, 0, []),
                (ChangeState.UNCHANGED, 3600, [HELD_BACK]),
                (
                    ChangeState.CHANGED if held == "edit" else ChangeState.UNCHANGED,
                    2,
                    [PROBED, *([HELD_CHANGE] if held == "edit" else [])],
                ),
            )
        for change, gap, note in steps:
            now += gap
            url = "https://h.example/p"
            v = Visit(Outcome.VISITED, status=200, change=change, url=url, fetched=now, annotations=tuple(note))
            plan = policy.plan(record, v)
            record = {"visits": record["visits"] + 1, "wait": plan.wait, "fetched": now, "policy": plan.memory}
        return float(record["policy"]["e"])

    assert estimate(ChangeState.UNCHANGED, held="edit") == pytest.approx(estimate(ChangeState.CHANGED, None))
    assert estimate(ChangeState.UNCHANGED, held="noise") == pytest.approx(estimate(ChangeState.UNCHANGED, None))


def test_the_feedback_loop_survives_a_long_pause() -> None:
    """(budget / realised) ** (gain · dt / window) overflowed when a fetch
    came thousands of windows after the last one (a restart days later, a
    page revisited after weeks: found by issue 13's liar test)."""
    alloc = RateAllocator(1.0, min_wait=1, max_wait=100 * DAY, epoch="t", control_window=10.0)
    for _ in range(50):
        alloc.register({}, "h", 0.1)
    for k in range(40):
        alloc.note_fetch(float(k))  # 1 a second: the budget
    alloc.note_fetch(1e7)  # then nothing for four months
    alloc.solve()
    assert 0.5 <= alloc.correction <= 2.0


def test_a_frozen_last_modified_loses_the_age_it_gave() -> None:
    """Issue 13's liars: a Last-Modified a week old that never moves while
    the content changes.  Its first-visit age counted as an exact week
    without change for as long as the observation stayed in the window, so
    the changes seen afterwards hardly moved the rate; once a changed visit
    shows the header inconsistent, the age is only "a change within a week"."""
    est = RateEstimator()
    frozen, t0 = formatdate(1.7e9 - 7 * DAY, usegmt=True), 1.7e9
    memory: dict[str, Any] = {}
    est.observe_age(memory, visit(ChangeState.CHANGED, last_modified=frozen), t0, 10.0)
    assert memory["o"] == [[round(7 * DAY), AGE]]
    for k in range(1, 4):  # changed at every visit, an hour apart
        est.observe(memory, 3600, visit(ChangeState.CHANGED, last_modified=frozen), t0 + (k - 1) * 3600, t0 + k * 3600)
    assert memory["lm"] == [0, 3]
    assert [kind for _, kind in memory["o"]] == [1, 1, 1, 1]
    assert est.estimate(memory, (math.log(1 / DAY), 2.0)) > 1 / (4 * 3600)


def test_a_first_visit_age_the_urls_own_changes_refute_is_set_aside() -> None:
    """A Poisson page changing every minute whose first visit showed an
    eight-minute-old Last-Modified (a deploy, or the quiet spell a first
    visit tends to land in): once six revisits have each found a change
    well under a minute old, the eight minutes no longer hold the rate at a
    third of the truth.  An age the URL's own changes find plausible still
    counts, and so does any age before the URL has seen a change."""
    est, prior = RateEstimator(half_life=None), (math.log(1 / 300), 1.5)
    own = [[45, EXACT], [50, EXACT], [40, EXACT], [55, EXACT], [48, EXACT], [52, EXACT]]
    refuted = {"o": [[480, AGE], *own]}
    assert age_tail(480, *est.posterior({"o": own}, prior)) < AGE_OUTLIER
    assert est.estimate(refuted, prior) == pytest.approx(est.estimate({"o": own}, prior))
    assert 1 / est.estimate(refuted, prior) < 60
    # as an exact age it would have counted for ever
    assert 1 / est.estimate({"o": [[480, EXACT], *own]}, prior) > 100
    plausible = {"o": [[70, AGE], *own]}
    assert (
        est.estimate({"o": own}, prior)
        > est.estimate(plausible, prior)
        > est.estimate({"o": [[70, EXACT], *own]}, prior)
    )
    # no change of its own yet: a three-year-old page starts slow, and stays slow while nothing changes
    old = {"o": [[3 * 365 * DAY, AGE], [3600, 0], [7200, 0]]}
    assert 1 / est.estimate(old, prior) > 100 * DAY
    # a censored change counts as the URL's own too
    assert est.estimate({"o": [[3 * 365 * DAY, AGE], [600, CHANGED], [300, CHANGED]]}, prior) > 1 / DAY


def test_a_first_visit_age_fades_once_the_url_was_watched_for_longer() -> None:
    """Every file of a site written at its deploy, minutes before the crawl:
    a static page's first visit shows a two-minute-old Last-Modified.  The
    age counts in full before any revisit, as a/(a + watched) of an exact
    age after: once the crawl has watched the page unchanged for 25
    minutes it is believed slower than the two minutes kept saying."""
    est, prior = RateEstimator(half_life=None), (math.log(1 / 300), 1.5)
    assert est.estimate({"o": [[120, AGE]]}, prior) == pytest.approx(est.estimate({"o": [[120, EXACT]]}, prior))
    watched = [[600, 0], [900, 0]]
    faded = est.estimate({"o": [[120, AGE], *watched]}, prior)
    assert faded < 0.7 * est.estimate({"o": [[120, EXACT], *watched]}, prior)
    # the weight is the age's share of the time it and the watching span
    tempered = posterior_log_rate([], 1500 + 120 * 120 / 1620, 120 / 1620, *prior)
    assert math.log(faded) == pytest.approx(tempered[0], abs=1e-4)


def test_a_change_in_the_second_of_the_previous_fetch_keeps_the_header_trusted() -> None:
    """HTTP dates have whole seconds: a change 0.3 s after a fetch carries
    a Last-Modified 0.6 s before it.  That is not a lie; counted as one, it
    took the exact ages from the fastest pages of the changing web."""
    est = RateEstimator()
    t0 = 1.7e9 + 0.6  # the previous fetch
    memory: dict[str, Any] = {}
    modified = formatdate(1.7e9, usegmt=True)  # the change came at t0 + 0.3
    est.observe(memory, 9.0, visit(ChangeState.CHANGED, last_modified=modified), t0, t0 + 9.0)
    assert memory["lm"] == [1, 0]
    assert memory["o"][-1][1] == EXACT


def test_age_tail_is_the_gamma_predictive() -> None:
    """k exact changes in T seconds: P(age ≥ a) = (T/(T + a))^k."""
    k, total, a = 6, 290.0, 480.0
    assert age_tail(a, math.log(k / total), 1 / k) == pytest.approx((total / (total + a)) ** k)
    assert age_tail(0.0, 0.0, 1.0) == 1.0


def _first_visit(policy: ProportionalWaitPolicy, url: str, now: float, modified: float | None) -> tuple[float, dict]:
    last_modified = None if modified is None else formatdate(modified, usegmt=True)
    v = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, url=url, fetched=now, queue="h")
    v = replace(v, last_modified=last_modified)
    plan = policy.plan({"visits": 0, "discovered": now, "policy": {}}, v)
    assert plan.memory is not None
    return plan.wait, plan.memory


def _populated_policy(t0: float, n: int = 20) -> ProportionalWaitPolicy:
    """A budgeted policy after *n* first visits without Last-Modified (a
    population for the budget and the typical rate)."""
    policy = ProportionalWaitPolicy(RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t"))
    for i in range(n):
        _first_visit(policy, f"https://h.example/u{i}", t0, None)
    return policy


def _check_revisit(
    policy: ProportionalWaitPolicy, url: str, state: dict, then: float, now: float, lied: bool, modified_ago: float = 1
) -> dict:
    """The first full revisit of a URL whose Last-Modified said a week: the
    content changed under the same header (a lie) or with it (honest,
    *modified_ago* seconds before the revisit)."""
    last_modified = formatdate(then - 7 * DAY if lied else now - modified_ago, usegmt=True)
    v = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, url=url, fetched=now, queue="h")
    v = replace(v, validation="verified", last_modified=last_modified)
    plan = policy.plan({"visits": 1, "fetched": then, "wait": now - then, "policy": state}, v)
    assert plan.memory is not None
    return plan.memory


def test_an_unchecked_old_last_modified_is_believed_as_far_as_the_population_says() -> None:
    """Issue 13's liars: a first visit whose Last-Modified claims a week held
    the page at a week's rate, so a header that never moves was not revisited
    (nor caught) in a 20-minute crawl.  Until its first revisit checks it, such
    a URL's rate mixes the header's with the population's by q, the share of
    this host's old headers caught lying: a first check on the population's
    time scale, later ones further apart where old headers keep proving
    honest, sooner where they lie."""
    t0 = 1.7e9
    alloc = RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t")
    policy = ProportionalWaitPolicy(alloc)
    uninformed = [_first_visit(policy, f"https://h.example/u{i}", t0, None)[0] for i in range(20)]
    typical = max(uninformed)
    week_old, state = _first_visit(policy, "https://h.example/old", t0, t0 - 7 * DAY)
    assert state["ua"] == 1
    assert week_old < 10 * typical < DAY  # before: about a week
    for honest in range(8):  # the host's old headers prove honest ...
        url = f"https://h.example/honest{honest}"
        _, st = _first_visit(policy, url, t0, t0 - 7 * DAY)
        assert "ua" not in _check_revisit(policy, url, st, t0, t0 + 600, lied=False)
    after_honest, _ = _first_visit(policy, "https://h.example/old2", t0 + 600, t0 - 7 * DAY)
    assert after_honest > 2 * week_old
    for liar in range(8):  # ... then as many lie
        url = f"https://h.example/liar{liar}"
        _, st = _first_visit(policy, url, t0, t0 - 7 * DAY)
        _check_revisit(policy, url, st, t0, t0 + 600, lied=True)
    after_lies, _ = _first_visit(policy, "https://h.example/old3", t0 + 600, t0 - 7 * DAY)
    assert after_lies < after_honest / 2
    assert policy.header_belief.lie_probability("h") == pytest.approx((8 + 2 * 9 / 18) / 18)


def test_a_hosts_lying_pages_do_not_make_its_files_checked_sooner() -> None:
    """Lying headers come from one generator (a template stamping a fixed
    date), not from the whole host: checks are also counted per sibling class
    (directory and extension).  On a host whose /p/*.html pages lie and whose
    images proved honest, a new old-dated image is believed nearly at its
    header's word while a new old-dated page is checked on the population's
    time scale (the changing web's images were downloaded in full about once
    each while their host's pages lied: 13 MB of the run's 23 MB of unchanged
    bodies)."""
    t0 = 1.7e9
    policy = ProportionalWaitPolicy(RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t"))
    for i in range(20):
        _first_visit(policy, f"https://h.example/u{i}", t0, None)
    for i in range(6):
        url = f"https://h.example/p/{i}.html"
        _, st = _first_visit(policy, url, t0, t0 - 7 * DAY)
        _check_revisit(policy, url, st, t0, t0 + 600, lied=True)
        url = f"https://h.example/img/{i}.jpg"
        _, st = _first_visit(policy, url, t0, t0 - 7 * DAY)
        # as fast as the caught pages: a lie would hide as much in either class
        _check_revisit(policy, url, st, t0, t0 + 600, lied=False, modified_ago=300)
    belief = policy.header_belief
    page_hidden, image_hidden = (
        belief.lie_rate(policy.typical_rate(), f"https://h.example/{p}") for p in ("p/9.html", "img/9.jpg")
    )
    assert image_hidden == pytest.approx(page_hidden, rel=0.5)
    page_q, image_q = (belief.lie_probability("h", f"https://h.example/{p}") for p in ("p/9.html", "img/9.jpg"))
    assert belief.lie_probability("h") == pytest.approx(0.5, abs=0.05)  # the host alone cannot tell them apart
    assert page_q > 0.7 and image_q < 0.25 and page_q > 3 * image_q
    page_wait, _ = _first_visit(policy, "https://h.example/p/9.html", t0 + 600, t0 - 7 * DAY)
    image_wait, _ = _first_visit(policy, "https://h.example/img/9.jpg", t0 + 600, t0 - 7 * DAY)
    assert image_wait > 2 * page_wait


def test_a_304_acted_on_does_not_count_as_a_check() -> None:
    """A revisit answered by a trusted 304 saw no content: the header was not
    checked, so the host's belief does not count it and the age stays
    unchecked, which makes the frontier verify the URL's next fetch."""
    from scrapy_adaptive.change.trust import TrustParams, url_trusted

    t0 = 1.7e9
    policy = ProportionalWaitPolicy(RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t"))
    _, state = _first_visit(policy, "https://h.example/p", t0, t0 - 7 * DAY)
    assert not url_trusted(None, TrustParams(), state)
    v = Visit(Outcome.VISITED, status=304, change=ChangeState.UNCHANGED, url="https://h.example/p", queue="h")
    v = replace(v, validation="trusted", fetched=t0 + 600, last_modified=formatdate(t0 - 7 * DAY, usegmt=True))
    plan = policy.plan({"visits": 1, "fetched": t0, "wait": 600, "policy": state}, v)
    assert policy.header_belief.counts == {}
    assert plan.memory is not None and plan.memory["ua"] == 1


def test_unchanged_checks_space_out_and_end_the_check() -> None:
    """An honest old page found unchanged at its checks: each multiplies its
    odds of a lie by e^(−λ₀t), so its next check comes further off (about
    doubling), until the header's claim dominates; then the check ends, counts
    as honest, and the URL's fetches may act on its validators again."""
    from scrapy_adaptive.change.trust import TrustParams, url_trusted

    t0 = 1.7e9
    alloc = RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t")
    policy = ProportionalWaitPolicy(alloc)
    for i in range(20):
        _first_visit(policy, f"https://h.example/u{i}", t0, None)
    url, frozen = "https://h.example/old", formatdate(t0 - 7 * DAY, usegmt=True)
    wait, state = _first_visit(policy, url, t0, t0 - 7 * DAY)
    waits, now, visits = [wait], t0, 1
    while "ua" in state and visits < 30:
        v = Visit(Outcome.VISITED, status=200, change=ChangeState.UNCHANGED, url=url, queue="h")
        v = replace(v, validation="verified", last_modified=frozen, fetched=now + wait)
        plan = policy.plan({"visits": visits, "fetched": now, "wait": wait, "policy": state}, v)
        wait = plan.wait
        now, visits = now + waits[-1], visits + 1
        assert plan.memory is not None
        state = plan.memory
        waits.append(wait)
    assert "ua" not in state and url_trusted(None, TrustParams(), state)
    assert 3 <= visits <= 12
    assert all(b > 1.3 * a for a, b in zip(waits[:-2], waits[1:-1]))
    assert policy.header_belief.counts["h"] == [1, 0]


def test_a_young_last_modified_is_not_checked_nor_counted() -> None:
    """Only an old claim (a rate below the population's typical one) is
    checked: a header saying "modified a minute ago" is believed as it is
    (it would cost fetches if it lied, not versions), so the URL's fetches
    are not forced to full downloads for it, and its honest revisit is not
    counted as evidence that the class's *old* headers are honest (fresh
    pages swamped the counts of a class whose only old headers lied)."""
    from scrapy_adaptive.change.trust import TrustParams, url_trusted

    t0 = 1.7e9
    policy = ProportionalWaitPolicy(RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t"))
    for i in range(20):
        _first_visit(policy, f"https://h.example/u{i}", t0, None)
    url = "https://h.example/p/fresh.html"
    _, state = _first_visit(policy, url, t0, t0 - 60)
    assert "ua" not in state and url_trusted(None, TrustParams(), state)
    assert "ua" not in _check_revisit(policy, url, state, t0, t0 + 600, lied=False)
    assert policy.header_belief.counts == {}
    _, old = _first_visit(policy, "https://h.example/p/old.html", t0, t0 - 7 * DAY)
    assert old["ua"] == 1


def test_capped_hosts_are_planned_at_their_cap_times_the_correction() -> None:
    """Issue 13's changing web: ten hosts capped at 1/3 fetch/s, a budget of
    87 % of that, and each host realising 72–90 % of its cap (a slot goes
    idle whenever nothing is due just then): planned at exactly their caps,
    the hosts could never be asked for more, and the loop, held by
    anti-windup, left 6 % of the budget unspent.  The caps the plan uses
    scale with the correction, so the loop can make capped hosts keep a
    small backlog; only a budget beyond every cap saturates the plan."""
    alloc = RateAllocator(2.9, min_wait=9, max_wait=1200, control_window=60, epoch="t")
    rng = random.Random(5)
    for h in range(10):
        alloc.set_host_cap(f"h{h}", 1 / 3)
        for _ in range(90):
            alloc.register({}, f"h{h}", math.exp(rng.gauss(math.log(1 / 100), 1.0)))
    t = 1000.0
    for _ in range(25):  # 25 windows; each host realises 83 % of what it is planned
        alloc.solve()
        realised = 0.83 * alloc.planned_rate()
        for _ in range(int(60 * realised)):
            t += 1 / realised
            alloc.note_fetch(t)
    assert 0.83 * alloc.planned_rate() == pytest.approx(2.9, rel=0.03)  # planned at 3.33 it realised 2.77
    assert alloc.planned_rate() > 10 / 3  # more than the caps: the hosts keep a backlog


def test_recheck_wait_follows_the_odds_of_a_lie_as_they_move() -> None:
    """A URL's first check is timed at its first visit, on the odds known
    then; asked again (the frontier does after a caught lie), the policy
    answers the wait those odds now give: sooner once its class's old
    headers were caught lying, and None once the URL's own check is over.
    The check that catches a lie says so on the verdict (``ageLie``)."""
    t0 = 1.7e9
    policy = _populated_policy(t0, 200)
    url = "https://h.example/p/waiting.html"
    planned, state = _first_visit(policy, url, t0, t0 - 7 * DAY)
    snapshot = {"url": url, "queue": "h", "fetched": t0, "policy": state}
    assert policy.recheck_wait(snapshot) == pytest.approx(planned, rel=0.01)
    for i in range(4):
        liar = f"https://h.example/p/{i}.html"
        _, st = _first_visit(policy, liar, t0, t0 - 7 * DAY)
        v = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, url=liar, fetched=t0 + 600, queue="h")
        v = replace(v, validation="verified", last_modified=formatdate(t0 - 7 * DAY, usegmt=True))
        plan = policy.plan({"visits": 1, "fetched": t0, "wait": 600, "policy": st}, v)
        assert "ageLie" in plan.notes and "ageLie" not in v.annotations  # the policy's word, not the verdict's
    sooner = policy.recheck_wait(snapshot)
    assert sooner is not None and sooner < 0.8 * planned
    fresh, _ = _first_visit(policy, "https://h.example/p/new.html", t0 + 600, t0 - 7 * DAY)
    assert sooner == pytest.approx(fresh, rel=0.05)  # as a sibling first visited now would be planned
    assert policy.recheck_wait({"url": url, "queue": "h", "fetched": t0, "policy": {"e": 0.001}}) is None


def test_a_lie_is_assumed_to_hide_the_rate_its_classs_caught_liars_showed() -> None:
    """The rate a lying header hides is learned from the liars caught in its
    class: pages behind one template change like each other, not like the
    crawl's typical URL, which falls as slow files are learned.  Until
    liars are caught it is λ₀; caught liars that change fast bring an
    unchecked sibling's first check sooner than λ₀ would, and make an
    unchanged check stronger evidence of honesty."""
    from scrapy_adaptive.policies.belief import HeaderBelief

    belief = HeaderBelief()
    typical = 1 / 600
    assert belief.lie_rate(typical, "http://h/p/1.html") == pytest.approx(typical)
    for _ in range(8):
        belief.note("h", True, "http://h/p/x.html")
        belief.note_liar_rate("http://h/p/x.html", 1 / 270)
    fast = belief.lie_rate(typical, "http://h/p/1.html")
    assert 1 / 300 < fast < 1 / 270
    assert belief.lie_rate(typical, "http://h/img/1.jpg") < fast  # another class: the crawl's, shrunk
    assert belief.rate("h", 1 / DAY, typical, url="http://h/p/1.html") > belief.rate("h", 1 / DAY, typical)
    saved = belief.state()
    again = HeaderBelief()
    again.restore(saved)
    assert again.lie_rate(typical, "http://h/p/1.html") == pytest.approx(fast)
    legacy = {k: v for k, v in saved.items() if not k.startswith("liar")}
    older = HeaderBelief()
    older.restore(legacy)  # a state saved before liars' rates were kept
    assert older.lie_rate(typical, "http://h/p/1.html") == pytest.approx(typical)


def test_before_any_liar_is_caught_a_lie_is_taken_to_hide_its_siblings_pace() -> None:
    """A header that never moves stands in front of pages its template
    serves: until a liar of its class is caught, the rate a lie would hide is
    the class's own pace (its revisited siblings' rates), not the whole
    crawl's.  On the changing web the lying pages sat among pages changing
    every few minutes while λ₀, pulled down by static pages and images,
    timed their first checks near the end of a 20-minute run."""
    t0 = 1.7e9
    policy = _populated_policy(t0)
    for directory, changed in (("fast", True), ("slow", False)):
        for i in range(8):
            url = f"https://h.example/{directory}/{i}.html"
            _, st = _first_visit(policy, url, t0, t0 - 120)
            change = ChangeState.CHANGED if changed else ChangeState.UNCHANGED
            last_modified = formatdate(t0 + 240 if changed else t0 - 120, usegmt=True)
            v = Visit(Outcome.VISITED, status=200, change=change, url=url, fetched=t0 + 300, queue="h")
            policy.plan(
                {"visits": 1, "fetched": t0, "wait": 300, "policy": st}, replace(v, last_modified=last_modified)
            )
    belief = policy.header_belief
    typical = policy.typical_rate()
    fast_hidden = belief.lie_rate(typical, "https://h.example/fast/x.html")
    slow_hidden = belief.lie_rate(typical, "https://h.example/slow/x.html")
    assert fast_hidden > 3 * slow_hidden
    assert belief.lie_rate(typical, "https://h.example/other/x.html") == pytest.approx(typical)
    fast_wait, _ = _first_visit(policy, "https://h.example/fast/9.html", t0 + 300, t0 - 7 * DAY)
    slow_wait, _ = _first_visit(policy, "https://h.example/slow/9.html", t0 + 300, t0 - 7 * DAY)
    assert slow_wait > 2 * fast_wait


def test_sibling_rates_are_replaced_not_added_and_survive_a_restart() -> None:
    from scrapy_adaptive.policies.belief import HeaderBelief

    belief = HeaderBelief(epoch="e1")
    memory: dict = {}
    belief.note_sibling(memory, "https://h.example/p/1.html", -5.0, 1e-3)
    belief.note_sibling(memory, "https://h.example/p/1.html", -4.0, 1e-3)
    assert belief.sibling_rates == {"h.example/p/*.html": [1.0, -4.0]}
    restored = HeaderBelief()
    restored.restore(json.loads(json.dumps(belief.state())))
    restored.note_sibling(memory, "https://h.example/p/1.html", None, 1e-3)  # withdrawn after the restart
    assert restored.sibling_rates == {}
    assert memory == {}
    older = {"total": [0, 0], "queues": {}, "classes": {}}  # saved before sibling rates were kept
    fresh = HeaderBelief()
    fresh.restore(older)
    fresh.note_sibling({"sr": ["e1", -4.0]}, "https://h.example/p/1.html", None, 1e-3)
    assert fresh.sibling_rates == {}


def test_the_class_is_planned_again_each_time_the_pace_a_lie_would_hide_doubles() -> None:
    """In a fresh crawl every old header's first check is planned at its
    first visit, before any sibling was revisited, so at the crawl's typical
    rate; once the class's revisited pages show a faster pace, its unchecked
    URLs are planned again (``agePace``), once per doubling."""
    from scrapy_adaptive.policies.belief import HeaderBelief

    belief = HeaderBelief()
    typical = 1 / 600
    url = "https://h.example/p/1.html"
    assert belief.note_sibling({}, url, None, typical) is False  # a first visit: the reference pace
    raised = [belief.note_sibling({}, f"https://h.example/p/{i}.html", math.log(1 / 60), typical) for i in range(12)]
    # the class's pace climbs from the typical 600 s towards 60 s: a few
    # doublings, each announced once
    assert 1 <= sum(raised) <= 4
    assert raised[0] is False or sum(raised) == 1 or raised.index(True) < 3
    assert belief.note_sibling({}, "https://h.example/p/x.html", math.log(1 / 60), typical) is False
    # a slower pace is only the new reference
    assert belief.note_sibling({}, "https://h.example/p/y.html", math.log(1 / 60000), typical) is False
    assert belief.note_sibling({}, "https://h.example/q/1.html", None, typical) is False  # another class


def test_a_faster_sibling_pace_replans_the_unchecked_through_the_verdict() -> None:
    """The revisit that doubles its class's pace says so on the verdict."""
    t0 = 1.7e9
    policy = _populated_policy(t0)
    old_url = "https://h.example/p/old.html"
    _, old = _first_visit(policy, old_url, t0, t0 - 7 * DAY)
    rate_before = policy.first_check_rate(old, "h", old_url, old["e"])
    before = policy.recheck_wait({"url": old_url, "policy": old})
    annotated = []
    for i in range(8):
        url = f"https://h.example/p/{i}.html"
        _, st = _first_visit(policy, url, t0, t0 - 60)
        v = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, url=url, fetched=t0 + 60, queue="h")
        v = replace(v, last_modified=formatdate(t0 + 50, usegmt=True))
        plan = policy.plan({"visits": 1, "fetched": t0, "wait": 60, "policy": st}, v)
        annotated.append("agePace" in plan.notes)
    assert any(annotated)
    # the check is timed at a rate four times higher; the wait shortens less,
    # as this small budget is now shared with eight fast pages
    assert policy.first_check_rate(old, "h", old_url, old["e"]) > 4 * rate_before
    after = policy.recheck_wait({"url": old_url, "policy": old})
    assert before is not None and after is not None and after < 0.9 * before


def test_allocator_with_no_shortest_wait_plans_finite_waits() -> None:
    """``ADAPTIVE_WAIT_MIN = 0`` (revisit as soon as politeness allows) is
    allowed: the solve still has a fastest rate and every wait is a number."""
    alloc = RateAllocator(1000 / DAY, min_wait=0.0, max_wait=10 * DAY, epoch="t")
    for i in range(100):
        alloc.register({}, "h", (i + 1) / DAY)
    alloc.solve()
    waits = [alloc.wait("h", (i + 1) / DAY, min_wait=0.0) for i in range(100)]
    assert all(0 <= w <= 10 * DAY for w in waits)
    assert sum(1 / w for w in waits) == pytest.approx(1000 / DAY, rel=0.05)


def test_an_old_header_whose_odds_of_a_lie_are_small_uses_its_validators_while_its_check_goes_on() -> None:
    """The check of a page claiming months without a change ends only once
    its claim dominates the mixture, its odds of a lie down to a hair; all
    that while its revisits were full downloads (static pages cost 2.5 times
    HttpCache's fetches).  The frontier asks the policy at each fetch
    (``header_doubtful``): once the odds are below VERIFY_ABOVE the URL's
    validators are used (its verification schedules still sample it), but
    never before its own first check, however honest its class's old
    headers proved (a lying page whose siblings were checked first would
    answer 304 and never be caught)."""
    from scrapy_adaptive.change.trust import VERIFY_ABOVE

    t0 = 1.7e9
    policy = ProportionalWaitPolicy(RateAllocator(2000 / DAY, min_wait=10, max_wait=30 * DAY, epoch="t"))
    for i in range(20):
        _first_visit(policy, f"https://h.example/u{i}", t0, None)
    for i in range(3):  # the host's old headers lied three times, on pages changing every minute
        policy.header_belief.note("h", True, f"https://h.example/l{i}")
        policy.header_belief.note_liar_rate(f"https://h.example/l{i}", 1 / 60)
    url, frozen = "https://h.example/old", formatdate(t0 - 90 * DAY, usegmt=True)
    wait, state = _first_visit(policy, url, t0, t0 - 90 * DAY)

    def doubtful(memory: dict[str, object]) -> bool:
        return policy.header_doubtful({"url": url, "queue": "h", "policy": memory})

    assert state["ua"] == 1 and doubtful(state)
    trusted_while_checked, now, visits = False, t0, 1
    while "ua" in state and visits < 40:
        v = Visit(Outcome.VISITED, status=200, change=ChangeState.UNCHANGED, url=url, queue="h")
        v = replace(v, validation="verified", last_modified=frozen, fetched=now + wait)
        plan = policy.plan({"visits": visits, "fetched": now, "wait": wait, "policy": state}, v)
        now, wait = now + wait, plan.wait
        visits += 1
        assert plan.memory is not None
        state = plan.memory
        if "ua" in state:
            q = policy.header_belief.url_lie_probability("h", float(state["ua"]), url)
            assert doubtful(state) is (q > VERIFY_ABOVE)
            trusted_while_checked |= q <= VERIFY_ABOVE
    assert trusted_while_checked and not doubtful(state)
    # an old header not checked once is verified, however honest its class proved
    other = "https://h.example/p/new.html"
    other_state = _first_visit(policy, other, t0, t0 - 90 * DAY)[1]
    for _ in range(200):
        policy.header_belief.note("h", False, "https://h.example/p/1.html")
    assert other_state["ua"] == 1
    assert policy.header_doubtful({"url": other, "queue": "h", "policy": other_state})
    # after one unchanged check of its own, the class's record lets it use its validators
    assert not policy.header_doubtful({"url": other, "queue": "h", "policy": {**other_state, "ua": 0.5}})
    # a policy with no such check: the stored state decides, as before
    from scrapy_adaptive.policies.fixed import FixedWaitPolicy

    assert FixedWaitPolicy.header_doubtful(FixedWaitPolicy.__new__(FixedWaitPolicy), {"policy": {"ua": 1}})


def test_an_overlap_behind_politeness_is_seen_by_the_loop_only_as_the_capacity() -> None:
    """A known defect, pinned (``docs/changing-web.md``, "What was tried",
    the budget under the union's overlap): a policy visiting half its URLs three times as often
    as the allocator plans (the union's sooner waits) asks for twice the
    budget; politeness lets the crawl realise 1.1 times it, so the feedback
    loop sees a 10 % excess, moves the correction by half its log a window,
    and the crawl spends its whole capacity for eight windows."""
    alloc = RateAllocator(1.0, min_wait=0.01, max_wait=1e7, epoch="t", control_window=600.0)
    rnd = random.Random(7)
    rates = [rnd.lognormvariate(math.log(0.01), 1.0) for _ in range(100)]
    for rate in rates:
        alloc.register({}, "h", rate)
    due = [(i * 0.5, i) for i in range(len(rates))]
    fetches: list[float] = []
    now, end = 0.0, 8 * alloc.control_window
    while now < end:
        t, i = heapq.heappop(due)
        now = max(t, (fetches[-1] + 1 / 1.1) if fetches else t)  # politeness: at most 1.1 fetches a second
        fetches.append(now)
        alloc.note_fetch(now)
        planned = alloc.wait("h", rates[i])
        heapq.heappush(due, (now + (planned / 3 if i % 2 else planned), i))
    width = alloc.control_window
    spent = [sum(1 for t in fetches if k * width <= t < (k + 1) * width) / width for k in range(8)]
    assert min(spent[1:]) > 1.08  # at the capacity, not the budget
    assert alloc.correction > 0.6  # still short of the 0.5 that would spend the budget
