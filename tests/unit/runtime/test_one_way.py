"""A visit's verdict flows one way: fetch result, verdict, plan, record.

The downloader leaves a fetch result, change detection judges it into a
verdict, the policy stack returns a plan, and the frontier records the
verdict and the plan in one call.  These tests hold the shape: one caller
of the frontier's update, verdict and plan two frozen values that meet only
there (no layer writing into the verdict after the judging layer made it,
the policy's decision its own value), and requests that carry the URL's
fingerprint, not a copy of its record.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.settings import Settings

from scrapy_adaptive import meta
from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Visit
from scrapy_adaptive.model import Plan, RecordView, UrlRecord
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.stack import build_policy, builtin_policies
from scrapy_adaptive.policies.union import UnionWaitPolicy
from tests.unit.integration.test_scheduler import Pages, build, drain, in_loop

PACKAGE = Path(__file__).resolve().parents[3] / "scrapy_adaptive"


def calls(method: str) -> list[tuple[str, int, str]]:
    """Every ``<something>.method(...)`` call in the package: (module, line, receiver)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
                receiver = ast.unparse(node.func.value)
                found.append((str(path.relative_to(PACKAGE)), node.lineno, receiver))
    return found


def test_only_the_verdict_path_updates_the_frontier() -> None:
    """The live visit, a lapsed lease and a stored request that cannot be
    rebuilt all reach :meth:`Frontier.update` through ``Verdicts.settle``."""
    callers = {(module, receiver) for module, _, receiver in calls("update") if "frontier" in receiver.lower()}
    assert callers == {("runtime/verdicts.py", "self.frontier")}


def test_no_layer_reads_the_record_from_the_request() -> None:
    """``adaptive_record`` is a view for the user's code; ours asks the frontier."""
    reads = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                key = ast.unparse(node.slice)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                key = ast.unparse(node.args[0]) if node.args else ""
            else:
                continue
            if key in ("meta.RECORD", "RECORD", repr(meta.RECORD)):
                reads.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert reads == []


@pytest.mark.parametrize("name", sorted(builtin_policies()))
def test_a_policys_plan_leaves_the_verdict_as_it_came(name: str) -> None:
    policy = build_policy(builtin_policies()[name], WaitParams(), name)
    record = UrlRecord("http://a.example/x", "a.example", {}, 0, visits=3, fetched=1_000.0, wait=600.0)
    record.history = [[400.0, "changed", 200], [1_000.0, "unchanged", 200]]
    visit = Visit(
        Outcome.VISITED, status=200, change=ChangeState.CHANGED, url=record.url, queue="a.example", fetched=1_600.0
    )
    before = copy.deepcopy(visit)
    plan = policy.plan(record.view(), visit)
    assert plan.wait > 0
    assert dataclasses.asdict(visit) == dataclasses.asdict(before)


def test_the_verdict_and_the_plan_are_two_frozen_values() -> None:
    """Issue 49: the judges' verdict and the policy's plan are values no
    layer writes into, and each concept has one name: the wait, the
    policy's memory and its hint credit are the plan's, not the verdict's."""
    visit = Visit(Outcome.VISITED, status=200, annotations=("notModified",))
    plan = Plan(60.0, {"e": 1e-6}, 0.25, ("agePace",))
    for value, name in ((visit, "change"), (visit, "annotations"), (plan, "wait"), (plan, "memory")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)
    assert not {f.name for f in dataclasses.fields(Visit)} & {"wait", "policy_state", "hint_base", "memory", "notes"}
    assert [f.name for f in dataclasses.fields(Plan)] == ["wait", "memory", "hint_base", "notes"]
    assert isinstance(visit.annotations, tuple) and isinstance(plan.notes, tuple)


@pytest.mark.parametrize("policy_class", [BurstWaitPolicy, UnionWaitPolicy])
def test_a_rate_policys_plan_says_its_memory_and_hint_credit_and_leaves_the_verdict_equal_to_itself(
    policy_class: type[BurstWaitPolicy] | type[UnionWaitPolicy],
) -> None:
    """A hint-brought revisit of a URL with memory: the plan carries all the
    policy has to say (a wait, the new memory, the hint's credit), and the
    verdict it was given is the same value after as before."""
    policy = policy_class.from_params(WaitParams())
    url, then = "http://a.example/x", 1_700_000_000.0
    history = {
        "url": url,
        "queue": "a.example",
        "visits": 2,
        "fetched": then,
        "wait": 86_400.0,
        "policy": {"o": [[86_400, 0]], "e": 1e-6},
        "hint": {"t": then + 100, "m": None, "s": "sitemap", "c": [9, 1, 0], "g": [9, 1, 0]},
    }
    visit = Visit(
        Outcome.VISITED,
        status=200,
        change=ChangeState.UNCHANGED,
        url=url,
        queue="a.example",
        fetched=then + 3_600,
        annotations=("notModified",),
    )
    before = copy.deepcopy(visit)
    plan = policy.plan(history, visit)
    assert plan.wait > 0 and plan.memory is not None and plan.memory["o"][-1][:2] == [3_600, 0]  # observed
    assert plan.hint_base is not None and plan.hint_base > 0
    assert visit == before and dataclasses.asdict(visit) == dataclasses.asdict(before)
    assert history["policy"] == {"o": [[86_400, 0]], "e": 1e-6}  # the record's memory too: the plan has its own


def test_only_a_visit_has_a_plan() -> None:
    """A visit is recorded with its policy's plan; a retry, a failure or a
    disregarded URL has none (its outcome times it), and the frontier
    refuses the two mixed up before it takes anything back."""
    f = Frontier(MemoryStore())
    url = "http://a.example/x"
    f.add(url.encode(), url, "a.example", {"url": url})
    issued = f.next()
    assert issued is not None
    with pytest.raises(ValueError, match="needs its policy's plan"):
        f.update(issued.fp, Visit(Outcome.VISITED, status=200), None)
    with pytest.raises(ValueError, match="has no plan"):
        f.update(issued.fp, Visit(Outcome.RETRY, reason="timeout"), Plan(60.0))
    record = f.update(issued.fp, Visit(Outcome.VISITED, status=200), Plan(60.0, {"k": 1}))
    assert record is not None and record.wait == 60.0 and record.policy == {"k": 1}


def test_an_unreadable_sitemap_backs_off_in_the_policy_stack() -> None:
    settings = Settings({"ADAPTIVE_WAIT_DEFAULT": 100.0, "ADAPTIVE_WAIT_MIN": 1.0, "ADAPTIVE_WAIT_MAX": 1_000.0})
    stack = load_wait_policy(AdaptiveConfig.from_settings(settings))
    broken = Visit(Outcome.VISITED, status=500, url="http://a.example/sitemap.xml", annotations=("signalUnreadable",))
    assert [stack.plan({"wait": w}, broken).wait for w in (None, 300.0, 900.0)] == [200.0, 600.0, 1_000.0]


def test_the_record_view_is_a_read_only_copy_that_cannot_change_the_record() -> None:
    record = UrlRecord("http://a.example/x", "a.example", {}, 0, policy={"k": 1}, history=[[1.0, "changed", 200]])
    view = record.view()
    assert isinstance(view, RecordView) and dict(view) == record.snapshot()
    view["policy"]["k"] = 2
    view["history"][0][1] = "unchanged"
    assert record.policy == {"k": 1} and record.history == [[1.0, "changed", 200]]
    with pytest.raises(TypeError):
        view["visits"] = 9  # type: ignore[index]
    with pytest.raises(KeyError):
        view["request"]  # the stored request is the frontier's, not an evaluator's


@in_loop
def test_a_request_carries_the_fingerprint_and_a_view_and_the_verdict_is_not_written_into(tmp_path: Path) -> None:
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    try:
        scheduler.enqueue_request(Request("http://a.example/x"))
        (request,) = drain(scheduler)
        assert meta.FP in request.meta and isinstance(request.meta[meta.RECORD], RecordView)
        assert request.meta[meta.RECORD]["visits"] == 0
        verdicts = scheduler.verdicts
        assert verdicts is not None
        visit = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest="exact:sha1:1")
        before = copy.deepcopy(visit)
        recorded = verdicts.commit(request, visit)
        assert recorded is not None
        assert dataclasses.asdict(visit) == dataclasses.asdict(before)  # the judging layer's object, untouched
        done = recorded.visit
        assert (done.url, done.queue, done.fetched is not None) == (request.url, "a.example", True)
        assert recorded.plan is not None and recorded.plan.wait == recorded.record.wait  # the policy's, beside it
        assert request.meta[meta.RECORD]["visits"] == 1  # the view shows the record as the visit left it
    finally:
        scheduler.close("finished")
