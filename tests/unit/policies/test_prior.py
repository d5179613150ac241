"""The population prior, crawl-wide and per kind of content."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from scrapy_adaptive.model import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.prior import KIND_WEIGHT, PopulationPrior, content_kind
from scrapy_adaptive.policies.rate import PrecisionWaitPolicy

DAY = 86_400.0
PAGE, IMAGE = math.log(1 / DAY), math.log(1 / (100 * DAY))


def filled(pages: int, images: int) -> tuple[PopulationPrior, list[dict[str, Any]]]:
    """A prior learned from *pages* pages changing daily and *images* images
    changing every hundred days (each contribution's variance 0.25)."""
    prior = PopulationPrior(min_count=50, epoch="t")
    memories = []
    for i in range(pages + images):
        memory: dict[str, Any] = {}
        prior.update(memory, PAGE if i < pages else IMAGE, 0.25, "page" if i < pages else "image")
        memories.append(memory)
    return prior, memories


@pytest.mark.parametrize(
    ("content_type", "kind"),
    [
        ("image/jpeg", "image"),
        ("IMAGE/SVG+XML", "image"),
        ("text/html; charset=utf-8", "page"),
        ("application/xhtml+xml", "page"),
        ("text/css", "stylesheet"),
        ("application/javascript", "script"),
        ("text/javascript; charset=utf-8", "script"),
        ("application/pdf", None),
        (None, None),
        ("", None),
    ],
)
def test_content_kind(content_type: str | None, kind: str | None) -> None:
    assert content_kind(content_type) == kind


def test_a_kind_learns_its_own_prior_shrunk_towards_the_crawls() -> None:
    prior, _ = filled(300, 150)
    crawl_mean, crawl_sd = prior.get()
    assert crawl_mean == pytest.approx((300 * PAGE + 150 * IMAGE) / 450)
    image_mean, image_sd = prior.get(kind="image")
    page_mean, _ = prior.get(kind="page")
    # the kind's 150 URLs and KIND_WEIGHT URLs at the crawl-wide mean
    assert image_mean == pytest.approx((150 * IMAGE + KIND_WEIGHT * crawl_mean) / (150 + KIND_WEIGHT))
    assert IMAGE < image_mean < crawl_mean < page_mean < PAGE
    # a kind's spread is its own (the crawl's two modes are far apart), plus the pseudo-URLs' share
    assert 0.5 < image_sd < crawl_sd
    # a kind nothing contributed to, and no kind at all: the crawl-wide prior
    assert prior.get(kind="script") == prior.get() == (crawl_mean, crawl_sd)


def test_a_kind_few_urls_have_shown_starts_from_the_crawl_wide_prior() -> None:
    prior, _ = filled(300, 2)
    crawl_mean, _ = prior.get()
    image_mean, _ = prior.get(kind="image")
    assert abs(image_mean - crawl_mean) < 0.1 * abs(IMAGE - crawl_mean)


def test_before_the_prior_is_learned_every_kind_has_the_fallback() -> None:
    prior, _ = filled(10, 30)
    assert not prior.learned
    assert prior.get(kind="image") == prior.get() == prior.fallback
    assert prior.get(1 / 60, kind="image") == (math.log(1 / 60), prior.fallback[1])


def test_contributions_move_with_their_kind_and_withdraw_exactly() -> None:
    prior, memories = filled(100, 100)
    assert memories[0]["pp"] == ["t", round(PAGE, 6), 0.25, "page"]
    before = prior.get(kind="image")
    prior.update(memories[0], PAGE, 0.25, "image")  # its Content-Type changed
    assert prior.kinds["page"][0] == 99 and prior.kinds["image"][0] == 101 and prior.count == 200
    prior.update(memories[0], PAGE, 0.25, "page")
    assert prior.get(kind="image") == pytest.approx(before)
    for memory in memories:
        prior.update(memory, None)
    assert prior.count == 0 and prior.kinds == {}
    # a contribution saved without a kind (before kinds were kept) leaves the kinds alone
    old = {"pp": ["t", PAGE, 0.25]}
    prior._add(PAGE, 0.25, 1, None)
    prior.update(old, IMAGE, 0.25, "image")
    assert prior.count == 1 and prior.kinds["image"][0] == 1


def test_kinds_survive_a_restart_and_an_old_state_restores_without_them() -> None:
    prior, memories = filled(300, 150)
    state = json.loads(json.dumps(prior.state()))
    again = PopulationPrior(min_count=50)
    again.restore(state)
    assert again.get(kind="image") == pytest.approx(prior.get(kind="image"))
    again.update(memories[-1], None)  # same epoch: the saved contribution is replaced exactly
    assert again.kinds["image"][0] == 149
    legacy = PopulationPrior(min_count=50)
    legacy.restore({key: state[key] for key in ("epoch", "n", "s1", "s2")})
    assert legacy.kinds == {} and legacy.get(kind="image") == pytest.approx(prior.get())


def image_visit(change: ChangeState, content_type: str | None, fetched: float) -> Visit:
    return Visit(
        Outcome.VISITED,
        status=200,
        change=change,
        url="https://h.example/img/1.jpg",
        content_type=content_type,
        fetched=fetched,
    )


def estimate_after_unchanged_visits(content_type: str, visits: int) -> tuple[float, dict[str, Any]]:
    """A URL's estimate after its first visit and *visits* unchanged revisits
    (each a 304 without a Content-Type) a day apart, in a crawl of pages and images."""
    prior, _ = filled(300, 150)
    policy = PrecisionWaitPolicy(0.5, min_wait=60, max_wait=1000 * DAY, prior=prior)
    start = 1.7e9
    record: dict[str, Any] = {"visits": 0, "fetched": None, "discovered": start, "policy": {}}
    for n in range(visits + 1):
        first = n == 0
        now = start + n * DAY
        v = image_visit(ChangeState.CHANGED if first else ChangeState.UNCHANGED, content_type if first else None, now)
        plan = policy.plan(record, v)
        record = {
            "visits": n + 1,
            "fetched": now,
            "wait": DAY,
            "discovered": start,
            "policy": plan.memory,
            "content_type": content_type,
        }
    return float(record["policy"]["e"]), record["policy"]


def test_a_never_changing_image_leaves_the_crawl_wide_prior_sooner() -> None:
    """Three unchanged days: an image is believed slower than a page with the
    same visits, since its kind's prior is the images' (which mostly never
    change), and it keeps its kind on visits whose answer had no Content-Type."""
    image, memory = estimate_after_unchanged_visits("image/jpeg", 3)
    other, _ = estimate_after_unchanged_visits("application/pdf", 3)
    page, _ = estimate_after_unchanged_visits("text/html", 3)
    assert memory["pp"][3] == "image"
    assert image < other / 3 < page / 3
