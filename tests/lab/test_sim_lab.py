"""The policy simulator and the trace replay, at toy sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.replay import hindsight_optimum, load_trace
from bench.sim.engine import DETECTIONS, RunConfig, simulate
from bench.sim.intensity import Piecewise
from bench.sim.lab import run_policy
from bench.sim.lineup import POLICIES, LabContext
from bench.sim.metrics import optimum_recall
from bench.sim.world import DAY, WEEK, build_world, preset


def small(name: str, **kw: float) -> object:
    spec = preset(name, scale=0.02, days=kw.pop("days", 90.0), seed=int(kw.pop("seed", 3)))
    return build_world(spec)


def test_optimum_formula_matches_the_notes() -> None:
    assert optimum_recall(1, 1) == pytest.approx(0.632, abs=1e-3)
    assert optimum_recall(1, 2) == pytest.approx(0.787, abs=1e-3)
    assert optimum_recall(1, 0.5) == pytest.approx(0.432, abs=1e-3)


def test_piecewise_hazard_and_inverse() -> None:
    weekly = Piecewise([0.0, 2 * DAY], [0.0, 2.0], period=WEEK, origin=100.0)
    assert weekly.cumulative(100.0 + WEEK) == pytest.approx(10 * DAY)
    assert weekly.inverse(weekly.cumulative(100.0 + 3 * DAY)) == pytest.approx(100.0 + 3 * DAY)
    # no hazard in the first two days of the week: the inverse skips them
    assert weekly.inverse(10 * DAY + 1.0) == pytest.approx(100.0 + WEEK + 2 * DAY + 0.5)
    assert weekly.cumulative(weekly.inverse(10 * DAY)) == pytest.approx(10 * DAY)


def test_same_seed_same_numbers() -> None:
    a = run_policy("proportional", small("poisson"), 1.0, RunConfig(), calibrate_rules=False)
    b = run_policy("proportional", small("poisson"), 1.0, RunConfig(), calibrate_rules=False)
    assert (a.revisits, a.captured, a.changes) == (b.revisits, b.captured, b.changes)
    c = run_policy("proportional", small("poisson", seed=4), 1.0, RunConfig(), calibrate_rules=False)
    assert (c.revisits, c.captured) != (a.revisits, a.captured)


def test_proportional_beats_uniform_on_a_poisson_world_and_is_polite() -> None:
    world = small("poisson", days=120.0)
    results = {n: run_policy(n, world, 1.0, RunConfig(), calibrate_rules=False) for n in ("uniform", "proportional")}
    uni, prop = results["uniform"], results["proportional"]
    assert prop.efficiency > uni.efficiency + 0.05
    assert prop.recall > uni.recall
    for r in results.values():
        assert r.violations == 0
        assert abs(r.budget_error or 0) < 0.1


def test_crawl_delays_are_honoured() -> None:
    spec = preset("polite", scale=0.02, days=30.0, seed=5)
    spec.crawl_delay_share = 1.0
    world = build_world(spec)
    result = simulate(world, POLICIES["proportional"](LabContext(world, 5 * world.total_rate())), RunConfig())
    assert result.violations == 0
    per_host_limit = len(world.hosts) * (30 * DAY / spec.crawl_delay + 1)
    assert result.revisits + result.first_visits <= per_host_limit


def test_raw_detection_sees_noise_pages_change_every_time() -> None:
    spec = preset("noise", scale=0.01, days=40.0, seed=2)
    spec.mix = {"poisson": 0.5, "noise": 0.5}
    world = build_world(spec)
    ctx = LabContext(world, world.total_rate(), min_wait=6 * 3600.0)
    normal = simulate(world, POLICIES["heritrix"](ctx), RunConfig(detection="normalised"))
    raw = simulate(world, POLICIES["heritrix"](ctx), RunConfig(detection="raw"))
    assert raw.by_kind["noise"]["revisits_per_page_day"] > 3 * normal.by_kind["noise"]["revisits_per_page_day"]
    guarded = simulate(world, POLICIES["proportional"](ctx), RunConfig(detection="raw"))
    assert guarded.noise_fetches_per_day is not None and guarded.noise_fetches_per_day < 0.5


def test_learned_detection_probes_twice_then_sees_noise_pages_as_their_content() -> None:
    spec = preset("noise", scale=0.01, days=40.0, seed=2)
    spec.mix = {"poisson": 0.5, "noise": 0.5}
    world = build_world(spec)
    ctx = LabContext(world, world.total_rate(), min_wait=6 * 3600.0)
    runs = {d: simulate(world, POLICIES["proportional"](ctx), RunConfig(detection=d)) for d in DETECTIONS}
    noise = {d: r.by_kind["noise"] for d, r in runs.items()}
    # half the pages are noise: raw detection gives them 79 % of the revisits
    # (recall 0.36 in all), learning 62 % (0.45), an operator's rule 46 % (0.47)
    assert runs["learned"].recall > runs["raw"].recall + 0.05
    assert noise["learned"]["revisit_share"] < noise["raw"]["revisit_share"] - 0.1
    assert noise["learned"]["precision"] > noise["raw"]["precision"]
    # the probes: at most two revisits per page more than with an operator's rule
    assert runs["learned"].revisits <= runs["normalised"].revisits + 2 * len(world.pages)
    with pytest.raises(ValueError, match="detection must be one of"):
        simulate(world, POLICIES["proportional"](ctx), RunConfig(detection="fuzzy"))


def write_trace(path: Path) -> None:
    day = int(DAY)
    docs = [
        {"doc": "A/Terms", "service": "A", "versions": [0, 3 * day, 6 * day, 9 * day, 40 * day]},
        {"doc": "A/Privacy", "service": "A", "versions": [day, 50 * day]},
        {"doc": "B/Terms", "service": "B", "versions": [0] + [k * day + 3600 for k in range(20, 30)]},
    ]
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")


def test_hindsight_optimum_is_periodic_and_bounded(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_trace(trace)
    world = load_trace(str(trace))
    changes = sum(len(p.changes) for p in world.pages)
    low, high = hindsight_optimum(world, 5), hindsight_optimum(world, 40)
    assert 0 < low.recall < high.recall <= 1
    assert low.revisits == pytest.approx(5)
    assert high.captured <= changes


def test_stale_seconds_runs_from_the_first_change_after_a_visit_to_the_next_visit() -> None:
    """Visits at 0 and 6 of a document changing at 5 and 7, watched until 10:
    stale from 5 to 6 and from 7 to 10."""
    from bench.replay import _stale_seconds

    assert _stale_seconds([5.0, 7.0], [0.0, 6.0], 10.0) == pytest.approx(4.0)
    assert _stale_seconds([], [0.0], 10.0) == 0.0
    assert _stale_seconds([1.0, 2.0, 3.0], [0.0], 10.0) == pytest.approx(9.0)


def test_hindsight_optimum_for_freshness_beats_the_versions_one_on_freshness(tmp_path: Path) -> None:
    """Chosen for freshness, the same periodic schedules keep the copies current
    at least as long as the ones chosen for versions, at the same revisits,
    and more revisits never keep them staler."""
    trace = tmp_path / "t.jsonl"
    write_trace(trace)
    world = load_trace(str(trace))
    for budget in (3, 10, 40):
        fresh = hindsight_optimum(world, budget, objective="freshness")
        versions = hindsight_optimum(world, budget)
        assert fresh.revisits == pytest.approx(versions.revisits)
        assert 0 < versions.freshness <= fresh.freshness + 1e-9 <= 1 + 1e-9
        assert fresh.observed == pytest.approx(sum(world.end - p.discovered for p in world.pages))
    assert (
        hindsight_optimum(world, 3, objective="freshness").freshness
        <= hindsight_optimum(world, 40, objective="freshness").freshness
    )
    with pytest.raises(ValueError, match="objective"):
        hindsight_optimum(world, 3, objective="recall")


def test_median_capture_delay_of_a_hand_made_trace(tmp_path: Path) -> None:
    """Two documents visited every 24 h; each revisit captures the version live then:
    A: 14 h (10 h version at 24 h), 22 h (the 26 h version at 48 h; 25 h overwritten, 70 h never fetched);
    B: 23 h (1 h at 24 h), 1 h (47 h at 48 h).  Median 18 h, mean 15 h, in both replays."""
    from bench.fastreplay import as_world, read_docs
    from bench.fastreplay import simulate as fast_simulate
    from scrapy_adaptive.policies.fixed import FixedWaitPolicy

    h = 3600
    trace = tmp_path / "delays.jsonl"
    docs = [
        {"doc": "A", "service": "a", "versions": [0, 10 * h, 25 * h, 26 * h, 70 * h]},
        {"doc": "B", "service": "b", "versions": [0, 1 * h, 47 * h]},
    ]
    trace.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    fast = fast_simulate(as_world(read_docs(str(trace))), FixedWaitPolicy(24 * h))
    assert (fast.revisits, fast.captured) == (4, 4)
    assert fast.delay_h == pytest.approx(18.0)
    full = simulate(load_trace(str(trace)), FixedWaitPolicy(24 * h), RunConfig())
    assert (full.revisits, full.captured, full.changes) == (4, 4, 6)
    assert full.median_capture_delay_h == pytest.approx(18.0, abs=0.01)
    assert full.capture_delay_h == pytest.approx(15.0, abs=0.01)


def test_fast_replay_through_the_real_frontier_matches_the_fast_one_for_a_rule(tmp_path: Path) -> None:
    """The check ``--frontier`` is for: a rule's figures at equal fetches agree between the two replays."""
    from bench.fastreplay import main as fast_main

    trace = tmp_path / "t.jsonl"
    write_trace(trace)
    reports = []
    for extra in ([], ["--frontier"]):
        out = tmp_path / f"out{len(extra)}.json"
        args = ["--trace", str(trace), "--budget-factor", "2", "--policies", "uniform,union", "--procs", "1"]
        assert fast_main([*args, "--json", str(out), *extra]) == 0
        reports.append(json.loads(out.read_text()))
    fast, real = (r["sources"]["t"]["2"] for r in reports)
    assert reports[1]["frontier"] and real["union"]["exact"] and real["uniform"]["exact"]
    assert real["uniform"]["recall"] == pytest.approx(fast["uniform"]["recall"], abs=0.1)


def test_fast_replay_tables_divide_the_default_by_the_best_held_and_fitted_peer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.fastreplay import main as fast_main

    trace, out = tmp_path / "t.jsonl", tmp_path / "out.json"
    write_trace(trace)
    policies = "union,snapback,paced-heritrix,stormcrawler,heritrix"
    assert fast_main(["--trace", str(trace), "--budget-factor", "2", "--policies", policies, "--procs", "1",
                      "--json", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    assert report["held"] == ["snapback", "paced-heritrix"] and report["fitted"] == ["stormcrawler", "heritrix"]
    row = report["sources"]["t"]["2"]
    assert all(row[p]["delay_h"] is not None for p in policies.split(","))
    capsys.readouterr()
    assert fast_main(["--render", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    held = max(("snapback", "paced-heritrix"), key=lambda p: row[p]["recall"] if row[p]["exact"] else -1)
    cells = [c.strip() for c in table[2].split("|")]
    assert cells[1:3] == ["t", "2×"] and cells[4].endswith(f"({held})")
    assert cells[5].strip("*") == f"{row['union']['recall'] / row[held]['recall']:.2f}"
