"""Wait policies: the thesis's rule, the stack, overrides and validation."""

from __future__ import annotations

import logging
import math
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.model import Plan
from scrapy_adaptive.policies import (
    BurstWaitPolicy,
    ConstantWaitPolicy,
    FixedWaitPolicy,
    HeritrixWaitPolicy,
    PolicyStack,
    UnionWaitPolicy,
    WaitParams,
    load_wait_policy,
)
from scrapy_adaptive.policies.base import WaitPolicy, decides

CHANGED, UNCHANGED, UNKNOWN = ChangeState.CHANGED, ChangeState.UNCHANGED, ChangeState.UNKNOWN


def config(**values: object) -> AdaptiveConfig:
    """Settings for the stack tests, on Heritrix's rule (its numbers are exact)."""
    values.setdefault("ADAPTIVE_WAIT_POLICY", "scrapy_adaptive.policies.HeritrixWaitPolicy")
    return AdaptiveConfig.from_settings(Settings(values))


def test_the_default_policy_is_the_union_policy_on_one_shared_allocator() -> None:
    stack = load_wait_policy(AdaptiveConfig.from_settings(Settings({"ADAPTIVE_WAIT_INITIAL": 10_000})))
    assert isinstance(stack.catch_all, UnionWaitPolicy)
    assert isinstance(stack.catch_all.burst, BurstWaitPolicy)
    allocator = stack.params.crawl.allocator
    assert allocator.budget is None  # no ADAPTIVE_BUDGET: visits at the target precision
    assert allocator.target_ratio == pytest.approx(math.log(2))
    # until the population prior is learned, the first revisit comes after ADAPTIVE_WAIT_INITIAL
    assert stack.next_wait({"visits": 0}, visit(content_type="application/pdf")) == pytest.approx(10_000)
    budgeted = load_wait_policy(AdaptiveConfig.from_settings(Settings({"ADAPTIVE_BUDGET": 2_000})))
    assert budgeted.params.crawl.allocator.budget == pytest.approx(2_000 / 86_400)
    assert budgeted.params.crawl.pace.budget == pytest.approx(2_000 / 86_400)  # one budget, both families


def test_target_precision_is_validated() -> None:
    with pytest.raises(ConfigError, match="ADAPTIVE_TARGET_PRECISION"):
        AdaptiveConfig.from_settings(Settings({"ADAPTIVE_TARGET_PRECISION": 1.0}))
    stack = load_wait_policy(AdaptiveConfig.from_settings(Settings({"ADAPTIVE_TARGET_PRECISION": 0.2})))
    assert stack.params.crawl.allocator.target_ratio == pytest.approx(-math.log(0.8))


def visit(change: ChangeState = CHANGED, **kw: Any) -> Visit:
    kw.setdefault("last_modified", "Tue, 01 Jan 2030 00:00:00 GMT")
    kw.setdefault("url", "http://example.com/page")
    kw.setdefault("content_type", "text/html")
    return Visit(Outcome.VISITED, change=change, status=200, **kw)


PARAMS = WaitParams(initial=100, default=1000, minimum=10, maximum=10_000)


def test_a_policy_writes_a_wait_or_a_plan() -> None:
    """A project's policy that needs only a wait writes next_wait and its
    plan is that wait alone; one with memory writes plan.  A subclass whose
    own next_wait its inherited plan would never call is refused where it is
    written, not ignored by the crawl."""

    class Hourly(WaitPolicy):
        def next_wait(self, history: Any, v: Visit) -> float:
            return 3600.0

    assert Hourly().plan({}, visit()) == Plan(3600.0) and decides(Hourly)
    assert not decides(WaitPolicy)
    with pytest.raises(NotImplementedError):
        WaitPolicy().next_wait({}, visit())
    # the plan's wait, for a caller that wants nothing more (two policies: each call learns)
    wait = UnionWaitPolicy.from_params(WaitParams()).next_wait({}, visit())
    assert wait == UnionWaitPolicy.from_params(WaitParams()).plan({}, visit()).wait
    with pytest.raises(TypeError, match="override plan instead"):

        class Halved(UnionWaitPolicy):
            def next_wait(self, history: Any, v: Visit) -> float:
                return super().next_wait(history, v) / 2


def test_first_visit_gets_the_initial_wait() -> None:
    policy = HeritrixWaitPolicy(PARAMS)
    assert policy.next_wait({"visits": 0, "wait": None}, visit()) == 100


def test_changed_divides_and_unchanged_multiplies_the_last_wait() -> None:
    policy = HeritrixWaitPolicy(PARAMS)
    assert policy.next_wait({"visits": 3, "wait": 300}, visit(CHANGED)) == pytest.approx(200)
    assert policy.next_wait({"visits": 3, "wait": 300}, visit(UNCHANGED)) == pytest.approx(450)


def test_unknown_gets_the_fixed_default() -> None:
    assert HeritrixWaitPolicy(PARAMS).next_wait({"visits": 3, "wait": 300}, visit(UNKNOWN)) == 1000


def test_waits_are_clamped() -> None:
    policy = HeritrixWaitPolicy(PARAMS)
    assert policy.next_wait({"visits": 9, "wait": 12}, visit(CHANGED)) == 10
    assert policy.next_wait({"visits": 9, "wait": 9000}, visit(UNCHANGED)) == 10_000


def test_overdue_time_is_added_before_the_factor_when_asked() -> None:
    on = HeritrixWaitPolicy(WaitParams(**{**PARAMS.__dict__, "use_overdue": True}))
    off = HeritrixWaitPolicy(PARAMS)
    assert on.next_wait({"visits": 2, "wait": 300}, visit(UNCHANGED, overdue=100)) == pytest.approx(600)
    assert off.next_wait({"visits": 2, "wait": 300}, visit(UNCHANGED, overdue=100)) == pytest.approx(450)


def test_initial_wait_is_halved_without_last_modified_and_scaled_by_depth() -> None:
    params = WaitParams(initial=100, default=1000, minimum=1, maximum=10_000, depth_factor=2.0)
    policy = HeritrixWaitPolicy(params)
    assert policy.next_wait({"visits": 0}, visit(last_modified=None)) == 50
    assert policy.next_wait({"visits": 0}, visit(depth=3)) == 800


def test_heritrix_rule_settles_at_one_change_in_two_visits() -> None:
    """ln 1.5 / (ln 1.5 + ln 1.5) = 0.5: alternating outcomes keep the wait."""
    policy = HeritrixWaitPolicy(PARAMS)
    wait = 300.0
    for change in [CHANGED, UNCHANGED] * 10:
        wait = policy.next_wait({"visits": 5, "wait": wait}, visit(change))
    assert wait == pytest.approx(300)


def test_the_default_stack_is_text_images_then_everything_else() -> None:
    stack = load_wait_policy(config(ADAPTIVE_WAIT_INITIAL=1000, ADAPTIVE_WAIT_MIN=1))
    first = {"visits": 0}
    assert stack.next_wait(first, visit(content_type="text/html; charset=utf-8")) == 500
    assert stack.next_wait(first, visit(content_type="image/png")) == 2000
    assert stack.next_wait(first, visit(content_type="application/pdf")) == 1000
    assert isinstance(stack.catch_all, HeritrixWaitPolicy)


def test_thesis_defaults_are_the_catch_all() -> None:
    stack = load_wait_policy(config())
    p = stack.params
    assert (p.changed_factor, p.unchanged_factor, p.maximum, p.default) == (1.5, 1.5, 2_419_200, 259_200)


def test_entries_match_hosts_and_url_patterns_first_match_decides() -> None:
    stack = load_wait_policy(
        config(
            ADAPTIVE_WAIT_MIN=1,
            ADAPTIVE_WAIT_POLICIES=[
                {"hosts": "*.news.example", "initial": 60, "max": 600},
                {"url": r"/archive/", "initial": 86_400},
                {"content_type": "text/*", "initial": 7200},
            ],
        )
    )
    first = {"visits": 0}
    assert stack.next_wait(first, visit(url="http://www.news.example/a")) == 60
    assert stack.next_wait(first, visit(url="http://example.com/archive/2020")) == 86_400
    assert stack.next_wait(first, visit(url="http://example.com/x")) == 7200
    # an entry inherits the numbers it does not set from the catch-all
    assert stack.next_wait({"visits": 2, "wait": 1000}, visit(UNCHANGED, url="http://a.news.example/")) == 600


def test_an_entry_may_name_its_own_policy_class() -> None:
    stack = load_wait_policy(
        config(
            ADAPTIVE_WAIT_POLICIES=[
                {"content_type": "image/*", "policy": "scrapy_adaptive.policies.ConstantWaitPolicy", "default": 5000}
            ]
        )
    )
    assert isinstance(stack.entries[0][1], ConstantWaitPolicy)
    assert stack.next_wait({"visits": 4, "wait": 10}, visit(content_type="image/gif")) == 5000


def test_a_request_override_replaces_the_numbers() -> None:
    stack = load_wait_policy(config(ADAPTIVE_WAIT_MIN=1))
    policy = stack.with_overrides({"initial": 42})
    assert policy.next_wait({"visits": 0}, visit()) == 42
    assert stack.with_overrides({"initial": 42}) is policy  # cached


def test_request_overrides_keep_a_bounded_number_of_policies(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spider giving each URL its own numbers must not keep a policy per URL
    for months: the least recently used go, and come back rebuilt, alike."""
    from scrapy_adaptive.policies import stack as stack_module

    monkeypatch.setattr(stack_module, "OVERRIDES_KEPT", 3)
    stack = load_wait_policy(config(ADAPTIVE_WAIT_MIN=1))
    first = stack.with_overrides({"initial": 40})
    for initial in (41, 42, 40, 43):  # 40 used again: 41 is the oldest now
        stack.with_overrides({"initial": initial})
    assert len(stack._overrides) == 3
    assert stack.with_overrides({"initial": 40}) is first  # kept: used recently
    rebuilt = stack.with_overrides({"initial": 41})
    assert rebuilt.next_wait({"visits": 0}, visit()) == 41 and len(stack._overrides) == 3


def test_a_bad_request_override_is_reported_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    stack = load_wait_policy(config())
    assert stack.with_overrides({"initial": "soon"}) is stack
    assert "meta['adaptive_wait_policy']: 'initial' ('soon') must be a number" in caplog.text


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"min": 1e308, "max": 1e308}, "'min' (1e+308) must be at most 315360000 seconds (10 years)"),
        ({"unchanged_factor": 1e9}, "'unchanged_factor' (1000000000.0) must be at most 1000"),
        ({"min": True}, "'min' (True) must be a number of seconds"),
        ({"use_overdue": "yes"}, "'use_overdue' ('yes') must be true or false"),
        ({"bogus": 1}, "unknown key(s) 'bogus'"),
    ],
)
def test_a_request_override_is_held_to_the_settings_bounds(
    override: dict[str, Any], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The same limits as the settings it stands for: a URL given a wait of
    1e308 s was never due again, and shown as "failed or disregarded"."""
    stack = load_wait_policy(config())
    assert stack.with_overrides(override) is stack
    assert message in caplog.text
    # given the request's URL (as the crawl does), the line names it, whatever the fault
    assert stack.with_overrides({**override, "initial": 7}, "http://h/p") is stack
    assert f"meta['adaptive_wait_policy'] of http://h/p: {message}" in caplog.text


def test_an_override_names_only_a_declared_or_built_in_policy(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's meta comes back from the state folder: a policy it names
    is looked up among the settings' and the built-ins, never imported."""
    marker = tmp_path / "ran"
    (tmp_path / "evil_override_policy.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('ran')\n"
        "from scrapy_adaptive.policies import ConstantWaitPolicy\n"
        "class P(ConstantWaitPolicy):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    stack = load_wait_policy(
        config(
            ADAPTIVE_WAIT_MIN=1,
            ADAPTIVE_WAIT_POLICIES=[
                {"content_type": "image/*", "policy": "scrapy_adaptive.policies.burst.BurstWaitPolicy"}
            ],
        )
    )
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        assert stack.with_overrides({"policy": "evil_override_policy.P"}, "http://example.com/a") is stack
    assert stack.with_overrides({"policy": "evil_override_policy.P", "initial": 5}, "http://example.com/b") is stack
    assert not marker.exists() and "evil_override_policy" not in sys.modules
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings  # once per name, not per request
    assert "http://example.com/a" in warnings[0].getMessage()
    assert "'evil_override_policy.P'" in warnings[0].getMessage()
    # the settings' own policies and the built-ins, by path or short name
    for name, cls in [
        ("scrapy_adaptive.policies.HeritrixWaitPolicy", HeritrixWaitPolicy),  # ADAPTIVE_WAIT_POLICY
        ("scrapy_adaptive.policies.burst.BurstWaitPolicy", BurstWaitPolicy),  # an entry's
        ("ConstantWaitPolicy", ConstantWaitPolicy),
        ("scrapy_adaptive.policies.FixedWaitPolicy", FixedWaitPolicy),
        ("scrapy_adaptive.policies.fixed.FixedWaitPolicy", FixedWaitPolicy),
    ]:
        policy = stack.with_overrides({"policy": name, "initial": 42})
        assert type(getattr(policy, "policy", None)) is cls, name  # under the crawl's schedules (policies/schedules.py)
    assert stack.with_overrides({"policy": "WaitPolicy"}, "http://example.com/c") is stack  # abstract
    assert stack.with_overrides({"policy": ["a"]}, "http://example.com/d") is stack


def test_overrides_ignored_are_counted_per_request() -> None:
    from scrapy import Request

    from scrapy_adaptive.runtime.verdicts import Verdicts

    class Stats:
        def __init__(self) -> None:
            self.values: dict[str, int] = {}

        def inc_value(self, key: str, count: int = 1) -> None:
            self.values[key] = self.values.get(key, 0) + count

    stats = Stats()
    stack = load_wait_policy(config())
    verdicts = Verdicts(None, stack, None, stats, on_store_error=lambda exc: None)  # type: ignore[arg-type]
    for url in ("http://example.com/a", "http://example.com/b"):
        request = Request(url, meta={"adaptive_wait_policy": {"policy": "os.system"}})
        verdicts._plan(request, {}, Visit(Outcome.VISITED, url=url))  # the stack plans
    other = Request(
        "http://example.com/c", meta={"adaptive_wait_policy": {"policy": "FixedWaitPolicy", "default": 7200}}
    )
    assert verdicts._plan(other, {}, Visit(Outcome.VISITED, url=other.url)).wait == 7200  # its own policy plans
    assert stats.values == {"adaptive/wait_policy/overrides_ignored": 2}


class NeedsMore(ConstantWaitPolicy):
    """A policy whose ``__init__`` wants more than ``from_params`` gives it."""

    def __init__(self, params: WaitParams, extra: int) -> None:
        super().__init__(params)


def test_a_policy_class_that_cannot_be_built_is_refused_naming_the_setting() -> None:
    path = f"{__name__}.NeedsMore"
    here = re.escape(__name__)
    with pytest.raises(ConfigError, match=rf"^ADAPTIVE_WAIT_POLICY \('{here}\.NeedsMore'\) cannot be built"):
        load_wait_policy(config(ADAPTIVE_WAIT_POLICY=path))
    with pytest.raises(ConfigError, match=rf"^ADAPTIVE_WAIT_POLICIES\[0\]\['policy'\] \('{here}\."):
        load_wait_policy(config(ADAPTIVE_WAIT_POLICIES=[{"hosts": "a", "policy": path}]))


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"ADAPTIVE_WAIT_POLICIES": [{"initial": 5}]}, "ADAPTIVE_WAIT_POLICIES[0] names none of"),
        (
            {"ADAPTIVE_WAIT_POLICIES": [{"policy": "nowhere.Policy"}]},
            "ADAPTIVE_WAIT_POLICIES[0] names none of content_type, hosts, url: it would match everything; "
            "ADAPTIVE_WAIT_POLICY and the ADAPTIVE_WAIT_* settings apply to everything else.",
        ),
        ({"ADAPTIVE_WAIT_POLICIES": [{"url": "(", "initial": 5}]}, "ADAPTIVE_WAIT_POLICIES[0]: 'url' ('(')"),
        ({"ADAPTIVE_WAIT_POLICIES": [{"hosts": "a", "speed": 5}]}, "unknown key(s) speed"),
        ({"ADAPTIVE_WAIT_POLICIES": [{"hosts": "a", "initial": "x"}]}, "'initial' ('x') must be a number"),
        ({"ADAPTIVE_WAIT_POLICIES": [{"hosts": "a", "min": 9, "max": 1}]}, "'max' (1.0) must not be lower"),
        ({"ADAPTIVE_WAIT_POLICIES": "{nope"}, "ADAPTIVE_WAIT_POLICIES is not valid JSON"),
        ({"ADAPTIVE_WAIT_POLICIES": {"a": 1}}, "ADAPTIVE_WAIT_POLICIES must be a list of dicts"),
        ({"ADAPTIVE_WAIT_POLICY": "nowhere.Policy"}, "ADAPTIVE_WAIT_POLICY ('nowhere.Policy') cannot be imported"),
        ({"ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.config.settings.AdaptiveConfig"}, "must name a WaitPolicy subclass"),
        (
            {"ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.base.WaitPolicy"},
            "ADAPTIVE_WAIT_POLICY ('scrapy_adaptive.policies.base.WaitPolicy') must name a concrete WaitPolicy",
        ),
        (
            {"ADAPTIVE_WAIT_POLICIES": [{"hosts": "a", "policy": "scrapy_adaptive.policies.WaitPolicy"}]},
            "ADAPTIVE_WAIT_POLICIES[0]['policy'] ('scrapy_adaptive.policies.WaitPolicy') must name a concrete",
        ),
        ({"ADAPTIVE_WAIT_CHANGED_FACTOR": 0}, "ADAPTIVE_WAIT_CHANGED_FACTOR (0.0) must be a finite number > 0."),
    ],
)
def test_bad_policy_settings_name_the_setting(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_wait_policy(config(**values))
    assert message in str(info.value)


def test_policies_from_the_command_line_as_json() -> None:
    stack = load_wait_policy(config(ADAPTIVE_WAIT_POLICIES='[{"content_type": "text/*", "initial": 9}]'))
    assert isinstance(stack, PolicyStack) and stack.next_wait({"visits": 0}, visit()) == 3600  # clamped to min


def test_budgeted_policies_of_one_stack_share_one_allocator_and_the_budget_setting() -> None:
    from scrapy_adaptive.policies import ProportionalWaitPolicy

    stack = load_wait_policy(
        config(
            ADAPTIVE_WAIT_POLICY="scrapy_adaptive.policies.ProportionalWaitPolicy",
            ADAPTIVE_BUDGET=86_400,
            ADAPTIVE_WAIT_POLICIES=[{"content_type": "image/*", "max": 10_000_000}],
        )
    )
    policies = [stack.catch_all, *(p for _, p in stack.entries)]
    assert all(isinstance(p, ProportionalWaitPolicy) for p in policies)
    allocators = {id(p.allocator) for p in policies}  # type: ignore[attr-defined]
    assert len(allocators) == 1
    assert stack.params.crawl.allocator.budget == pytest.approx(1.0)  # 86,400/day = 1/s


@pytest.mark.parametrize("entry_policy", [None, "scrapy_adaptive.policies.ConstantWaitPolicy"])
@pytest.mark.parametrize("catch_all", ["BurstWaitPolicy", "ProportionalWaitPolicy", "PrecisionWaitPolicy"])
def test_an_entry_acts_only_on_the_urls_it_matches(catch_all: str, entry_policy: str | None) -> None:
    """The crawl-wide rate machinery (one allocator, shared beliefs) must not
    carry an entry's bounds into the catch-all, whichever is built first."""
    entry: dict[str, object] = {"url": "nomatch-xyz", "min": 5, "max": 30}
    if entry_policy:
        entry["policy"] = entry_policy
    stack = load_wait_policy(
        config(
            ADAPTIVE_WAIT_POLICY=f"scrapy_adaptive.policies.{catch_all}",
            ADAPTIVE_WAIT_MIN=300,
            ADAPTIVE_WAIT_INITIAL=600,
            ADAPTIVE_WAIT_POLICIES=[entry],
        )
    )
    for n in range(3):
        wait = stack.next_wait({"visits": 0}, visit(url=f"http://example.com/page-{n}", last_modified=None))
        assert wait >= 300, wait  # the catch-all's floor, not the entry's 30 s ceiling
    assert stack.next_wait({"visits": 0}, visit(url="http://example.com/page", last_modified=None)) == pytest.approx(
        600, rel=0.5
    )
    matched = stack.next_wait({"visits": 0}, visit(url="http://example.com/nomatch-xyz", last_modified=None))
    assert 5 <= matched <= 30, matched


def test_a_bad_budget_names_the_setting() -> None:
    with pytest.raises(ConfigError, match=r"ADAPTIVE_BUDGET \(-5.0\) must be a number of revisits per day > 0."):
        config(ADAPTIVE_BUDGET=-5)


def test_the_policies_import_nothing_from_scrapy() -> None:
    """Policies are pure: the crawler and the simulator run the same classes."""
    import ast
    from pathlib import Path

    import scrapy_adaptive.policies

    package = Path(scrapy_adaptive.policies.__file__).parent
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            assert not [n for n in names if n == "scrapy" or n.startswith("scrapy.")], path.name


class RaisesKeyError(UnionWaitPolicy):
    """A project's policy that cannot be built from the wait settings alone."""

    @classmethod
    def from_params(cls, params: Any) -> RaisesKeyError:
        raise KeyError("my_config")


def test_a_projects_policy_that_fails_to_import_or_build_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only TypeError and ValueError were refused by name: a KeyError from a
    project's ``from_params``, or a module that raises as it is imported,
    left Scrapy's "Engine slot not assigned" wall of tracebacks."""
    with pytest.raises(ConfigError) as built:
        load_wait_policy(config(ADAPTIVE_WAIT_POLICY=f"{__name__}.RaisesKeyError"))
    assert str(built.value) == (
        f"ADAPTIVE_WAIT_POLICY ('{__name__}.RaisesKeyError') cannot be built from its wait settings: "
        "KeyError: 'my_config'"
    )
    (tmp_path / "broken_policy_module.py").write_text("raise RuntimeError('half-written module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as imported:
        load_wait_policy(config(ADAPTIVE_WAIT_POLICIES=[{"hosts": "a", "policy": "broken_policy_module.P"}]))
    assert str(imported.value) == (
        "ADAPTIVE_WAIT_POLICIES[0]['policy'] ('broken_policy_module.P') cannot be imported: "
        "RuntimeError: half-written module"
    )
