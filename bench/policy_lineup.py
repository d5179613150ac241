"""Exploratory policy variants for the fast replay (not part of the lab's line-up)."""

from __future__ import annotations

from scrapy_adaptive.policies.stormcrawler import StormCrawlerWaitPolicy

from .sim.lineup import LabContext, _scaled, register


def _sc(d: float, i: float):
    def make(ctx: LabContext):
        initial, default, lo, hi = _scaled(ctx)
        return StormCrawlerWaitPolicy(initial=initial, minimum=lo, maximum=hi, default=default, decrement=d, increment=i)

    return make


for _d in (0.3, 0.5, 0.7, 0.9):
    for _i in (0.25, 0.5, 1.0):
        register(f"sc-{_d}-{_i}", _sc(_d, _i))
