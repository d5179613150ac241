"""Old import path of :mod:`scrapy_adaptive.runtime.sinkfail` (also
``scrapy_adaptive.SINK_FAILED`` and ``scrapy_adaptive.SinkError``)."""

from ..runtime.sinkfail import SINK_FAILED, SinkError

__all__ = ["SINK_FAILED", "SinkError"]
