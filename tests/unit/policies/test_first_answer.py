"""A URL's first answer is a prior on its rate (issue 37, item 2).

The policies built directly, no crawl: a first visit whose answer says
"slow" (an old Last-Modified, a sitemap date, a long lifetime granted by
its caching headers) gets a longer first wait from the default policy; the
URL's own visits then overturn it; an answer that says nothing leaves the
first wait as it was.
"""

from __future__ import annotations

from email.utils import formatdate
from typing import Any

import pytest

from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.estimator import AGE, FRESH, RateEstimator
from scrapy_adaptive.policies.memory import OBSERVATIONS
from scrapy_adaptive.policies.snapback import WAIT
from scrapy_adaptive.policies.union import UnionWaitPolicy

CHANGED, UNCHANGED = ChangeState.CHANGED, ChangeState.UNCHANGED
HOUR, DAY = 3_600.0, 86_400.0
T0 = 1_700_000_000.0


def union() -> UnionWaitPolicy:
    return UnionWaitPolicy.from_params(WaitParams(initial=DAY, minimum=HOUR, maximum=365 * DAY))


class Page:
    """One URL's record, visited through a policy."""

    def __init__(self, policy: Any, url: str = "https://a.example/p/1.html") -> None:
        self.policy, self.url = policy, url
        self.record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}

    def visit(self, now: float, change: ChangeState, **answer: Any) -> float:
        verdict = Visit(
            Outcome.VISITED, status=200, change=change, url=self.url, queue="a.example", fetched=now, **answer
        )
        plan = self.policy.plan(dict(self.record), verdict)
        if plan.memory is not None:
            self.record["policy"] = plan.memory
        self.record.update(visits=self.record["visits"] + 1, fetched=now, wait=plan.wait)
        return plan.wait


def first_wait(policy: UnionWaitPolicy | None = None, **answer: Any) -> float:
    return Page(policy or union()).visit(T0, CHANGED, **answer)


YEAR_OLD = {"last_modified": formatdate(T0 - 365 * DAY, usegmt=True)}


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(YEAR_OLD, id="last-modified a year ago"),
        pytest.param({"claimed_modified": T0 - 365 * DAY}, id="sitemap lastmod a year ago"),
        pytest.param({"freshness": 30 * DAY}, id="max-age of 30 days"),
    ],
)
def test_a_first_answer_that_says_slow_lengthens_the_first_wait(answer: dict[str, Any]) -> None:
    """The snap-back part's fixed first wait no longer overrules it (the union takes the sooner)."""
    plain = first_wait()
    assert first_wait(**answer) > 1.5 * plain


def test_an_answer_that_says_nothing_leaves_the_first_wait_as_it_was() -> None:
    policy = union()
    page = Page(policy)
    wait = page.visit(T0, CHANGED)
    assert page.record["policy"][WAIT] == policy.snap.initial
    assert wait == pytest.approx(first_wait())


def test_an_answer_that_says_fast_shortens_through_the_rate_part_only() -> None:
    """A young Last-Modified shortens the wait (the burst part's), never the snap-back part's start."""
    policy = union()
    page = Page(policy)
    young = page.visit(T0, CHANGED, last_modified=formatdate(T0 - 2 * HOUR, usegmt=True))
    assert young < first_wait()
    assert page.record["policy"][WAIT] == policy.snap.initial


def test_the_prior_is_updated_by_the_urls_own_visits() -> None:
    """Evidence, not a rule: a page whose first answer said "a year old" but
    that changes at every visit comes back to a short wait."""
    page = Page(union())
    wait = page.visit(T0, CHANGED, **YEAR_OLD)
    now = T0
    for _ in range(6):
        now += wait
        modified = formatdate(now - 60, usegmt=True)
        wait = page.visit(now, CHANGED, last_modified=modified)
    assert wait < first_wait() / 2


def test_the_belief_grows_as_the_crawls_old_headers_prove_honest() -> None:
    """How far an old header is believed is learned (belief.py): on a host
    whose earlier old-dated pages kept their dates through their checks, a
    new one starts further off than on a fresh crawl."""
    policy = union()
    fresh_crawl = first_wait(union(), **YEAR_OLD)
    for i in range(20):  # old-dated pages, each checked until its claim stands, each honest
        page = Page(policy, f"https://a.example/p/{i}.html")
        now = T0
        wait = page.visit(now, CHANGED, **YEAR_OLD)
        for _ in range(8):
            now += wait
            wait = page.visit(now, UNCHANGED, **YEAR_OLD)
    later = Page(policy, "https://a.example/p/new.html").visit(T0 + 400 * DAY, CHANGED, **YEAR_OLD)
    assert policy.header_belief.lie_probability("a.example") < 0.2
    assert later > fresh_crawl


def test_the_estimator_takes_a_granted_lifetime_as_an_unchanged_interval() -> None:
    estimator, prior = RateEstimator(), (-11.0, 2.0)
    plain: dict[str, Any] = {}
    cached: dict[str, Any] = {}
    visit = Visit(Outcome.VISITED, status=200, change=CHANGED, freshness=30 * DAY)
    assert estimator.observe_age(cached, visit, T0, HOUR)
    assert cached[OBSERVATIONS] == [[round(30 * DAY), FRESH]]
    assert estimator.posterior(cached, prior)[0] < estimator.posterior(plain, prior)[0]
    # both pieces of evidence at once, an age and a lifetime
    both: dict[str, Any] = {}
    visit = Visit(Outcome.VISITED, status=200, change=CHANGED, freshness=DAY, claimed_modified=T0 - 10 * DAY)
    assert estimator.observe_age(both, visit, T0, HOUR)
    assert [kind for _, kind in both[OBSERVATIONS]] == [AGE, FRESH]


@pytest.mark.parametrize("lifetime", [0.0, 60.0, float("inf"), float("nan")])
def test_a_lifetime_too_short_to_act_on_or_unusable_is_no_evidence(lifetime: float) -> None:
    memory: dict[str, Any] = {}
    visit = Visit(Outcome.VISITED, status=200, change=CHANGED, freshness=lifetime)
    assert not RateEstimator().observe_age(memory, visit, T0, HOUR)
    assert OBSERVATIONS not in memory


def test_a_promise_the_urls_visits_break_is_set_aside() -> None:
    """A lifetime of a year, then a change at every hourly visit: the
    posterior follows the visits, as it does for an implausible age."""
    estimator, prior = RateEstimator(), (-11.0, 2.0)
    memory: dict[str, Any] = {}
    estimator.observe_age(memory, Visit(Outcome.VISITED, change=CHANGED, freshness=365 * DAY), T0, HOUR)
    alone: dict[str, Any] = {}
    for k in range(1, 6):
        for m in (memory, alone):
            estimator.observe(m, HOUR, Visit(Outcome.VISITED, change=CHANGED), T0 + (k - 1) * HOUR, T0 + k * HOUR)
    assert estimator.posterior(memory, prior)[0] == pytest.approx(estimator.posterior(alone, prior)[0])
