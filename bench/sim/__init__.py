"""A deterministic revisit-policy simulator driving the real frontier.

Synthetic worlds of pages whose change times are drawn up front
(:mod:`.world`), an event loop that runs :class:`~scrapy_adaptive.frontier.
Frontier` over a :class:`~scrapy_adaptive.frontier.MemoryStore` on a fake
clock with any :class:`~scrapy_adaptive.policies.base.WaitPolicy`
(:mod:`.engine`), metrics against the analytical optimum (:mod:`.metrics`),
the policy line-up with oracles and budget calibration (:mod:`.lineup`),
and hand-written SVG plots (:mod:`.svg`).  ``python -m bench.sim --help``.
"""
