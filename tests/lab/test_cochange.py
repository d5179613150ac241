"""The co-change lab (bench.cochange): the lift, the companions' moved visits, the sampler by service.

Hand-made histories of a few documents, so that every figure can be
worked out by hand; the one replay through the command line is a few
seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cochange
from bench.fastreplay import as_world, read_docs, resolve, run_once
from bench.fastreplay import main as fast_main
from bench.fastreplay import simulate as fast_simulate
from bench.replay_corpus import subsample
from bench.sim.world import DAY, HOUR
from scrapy_adaptive.policies.fixed import FixedWaitPolicy


def _trace(path: Path, docs: list[tuple[str, str, list[float]]]) -> str:
    path.write_text("".join(json.dumps({"doc": d, "service": s, "versions": v}) + "\n" for d, s, v in docs))
    return str(path)


def test_lift_of_two_documents_changing_at_the_same_instants(tmp_path: Path) -> None:
    """Every change of A has B's within the hour (1.0); at a random moment of their common
    30 days, B has a version within the hour for 1 h at each end and 2 h at each of 10 and
    20 days: 6 h of 720, so the lift is 120.  A document alone in its service counts for nothing."""
    days = [0.0, 10 * DAY, 20 * DAY, 30 * DAY]
    path = _trace(tmp_path / "t.jsonl", [("A", "s", days), ("B", "s", days), ("C", "alone", [0.0, 5 * DAY])])
    after, anytime, n = cochange.lift(path, HOUR)
    assert n == 6
    assert after == pytest.approx(1.0)
    assert anytime == pytest.approx(6 / 720)
    assert cochange.lift(_trace(tmp_path / "u.jsonl", [("C", "alone", [0.0, DAY])]), HOUR)[2] == 0


def test_a_pull_captures_the_sibling_minutes_after_its_sibling_s_change(tmp_path: Path) -> None:
    """Both documents change at 47 h; A is visited every 24 h from 0, B from 12 h.  Alone,
    the fixed rule captures B's version at 60 h (13 h late); with the pulls A's visit at 48 h
    pulls B to 48 h 10 min (1 h 10 min late), one more revisit, counted as a moved one."""
    path = _trace(tmp_path / "t.jsonl", [("A", "s", [0.0, 47 * HOUR, 100 * HOUR]), ("B", "s", [12 * HOUR, 47 * HOUR])])
    world = as_world(read_docs(path))
    plain = fast_simulate(world, FixedWaitPolicy(DAY))
    assert (plain.revisits, plain.captured, plain.moved) == (7, 2, 0)
    assert plain.delay_h == pytest.approx((1 + 13) / 2)
    pulled = fast_simulate(world, FixedWaitPolicy(DAY), companion=cochange.SiblingPulls(world))
    assert (pulled.revisits, pulled.captured, pulled.moved, pulled.moved_hits) == (8, 2, 1, 1)
    assert pulled.delay_h == pytest.approx((1 + 1 + 1 / 6) / 2)


def test_without_siblings_every_design_is_the_default_to_the_fetch(tmp_path: Path) -> None:
    docs = [(f"d{i}", f"s{i}", [k * (1 + i) * DAY + i * HOUR for k in range(12)]) for i in range(6)]
    world = as_world(read_docs(_trace(tmp_path / "t.jsonl", docs)))
    rho = 2 * 72 / sum(world.end - p.discovered for p in world.pages)
    base = run_once("union", world, rho, 1.0)
    for design in cochange.DESIGNS:
        assert run_once(f"union+{design}", world, rho, 1.0) == base
    assert resolve("union+pairs") == ("union", cochange.PairPulls)
    with pytest.raises(KeyError):
        resolve("union+nothing")


def _bound(companion: cochange._Companion, n: int) -> tuple[list[float], list[float | None]]:
    due: list[float] = [100 * HOUR] * n
    last: list[float | None] = [0.0] * n
    companion.bind(due, last)
    return due, last


def test_pairs_keep_pulling_the_sibling_that_changed_with_it_and_drop_the_other(tmp_path: Path) -> None:
    """Two warm-up triggers of A pull B and C; B's pulled visits found a change, C's did not:
    the third trigger pulls B alone, while the naive design, at its service's 50 %, pulls both."""
    docs = [("A", "s", [0.0, DAY]), ("B", "s", [0.0, DAY]), ("C", "s", [0.0, DAY])]
    world = as_world(read_docs(_trace(tmp_path / "t.jsonl", docs)))
    pairs, naive = cochange.PairPulls(world), cochange.SiblingPulls(world)
    for design in (pairs, naive):
        _bound(design, 3)
        for k in range(2):
            now = (10 + k) * HOUR
            assert [j for j, _ in design.visited(0, now, True, False)] == [1, 2]
            design.visited(1, now + 600, True, True)
            design.visited(2, now + 600, False, True)
    assert pairs.visited(0, 20 * HOUR, True, False) == [(1, 20 * HOUR + cochange.PULL_AFTER)]
    assert [j for j, _ in naive.visited(0, 20 * HOUR, True, False)] == [1, 2]
    assert pairs.visited(0, 21 * HOUR, False, False) == []  # no change found: no trigger


def test_evidence_shortens_a_sibling_s_plan_by_what_the_group_s_change_adds(tmp_path: Path) -> None:
    """Sibling B was fetched at 0 and is planned at 100 h; at 50 h half its p* (½, no visit of its
    own yet) is still to come: 0.25.  With nothing learnt (q = ½) it is visited 10 min later.
    Three moved visits of B that found nothing: the first form (q their raw share, ⅕) shrinks the
    rest of the wait by ⅕ ÷ ¼, to 10 h; the form that takes off what B's own rate would have found
    (½ a visit, a whole planned wait each: 1.5) has q = 0 and leaves the plan alone.  Three that
    all found a change give it q = (3 − 1.5 + 1) ÷ 5 = ½: B is pulled."""
    world = as_world(read_docs(_trace(tmp_path / "t.jsonl", [("A", "s", [0.0, DAY]), ("B", "s", [0.0, DAY])])))
    raw, net, hits = (cochange.BurstEvidence(world, raw) for raw in (True, False, False))
    for evidence in (raw, net, hits):
        _bound(evidence, 2)
        assert evidence.visited(0, 50 * HOUR, True, False) == [(1, 50 * HOUR + cochange.PULL_AFTER)]
        for _ in range(3):
            evidence.visited(1, 50 * HOUR, evidence is hits, True)
    ((page, when),) = raw.visited(0, 50 * HOUR, True, False)
    assert page == 1 and when == pytest.approx(60 * HOUR)
    assert net.visited(0, 50 * HOUR, True, False) == []
    assert hits.visited(0, 50 * HOUR, True, False) == [(1, 50 * HOUR + cochange.PULL_AFTER)]


def test_the_sample_by_service_keeps_every_sibling() -> None:
    rows = [{"doc": f"{s}/{d}", "service": s, "versions": [0.0, 1.0]} for s in "abcdefgh" for d in range(3)]
    drawn = subsample(rows, 0, 10, seed=1, by="service")
    services = {r["service"] for r in drawn}
    assert len(drawn) == 3 * len(services) and 2 <= len(services) < 8
    assert len(subsample(rows, 0, 10, seed=1)) == 5  # by document: stops at the cap, siblings split


def test_the_design_table_divides_each_design_by_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    day = DAY
    docs = [
        ("A/1", "A", [0.0] + [k * 3 * day for k in range(1, 20)]),
        ("A/2", "A", [0.0] + [k * 3 * day + 60 for k in range(1, 20)]),
        ("B/1", "B", [0.0] + [k * 5 * day + 7 * HOUR for k in range(1, 12)]),
    ]
    trace, out = _trace(tmp_path / "t.jsonl", docs), tmp_path / "out.json"
    assert fast_main(["--trace", trace, "--budget-factor", "2", "--policies", "union,union+pulls", "--procs", "1",
                      "--json", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    cell = report["sources"]["t"]["2"]
    assert 0 < cell["union+pulls"]["moved_share"] < 1
    capsys.readouterr()
    assert cochange.main(["table", str(out)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| t |"))
    ratio = cell["union+pulls"]["recall"] / cell["union"]["recall"]
    assert f"| {ratio:.3f} · " in row
