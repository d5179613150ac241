"""Old import path of :mod:`scrapy_adaptive.runtime.sink_failure` (also
``scrapy_adaptive.SINK_FAILED`` and ``scrapy_adaptive.SinkError``)."""

from ..runtime.sink_failure import SINK_FAILED, SinkError

__all__ = ["SINK_FAILED", "SinkError"]
