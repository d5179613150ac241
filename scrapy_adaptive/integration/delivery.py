"""Old import path of :mod:`scrapy_adaptive.runtime.delivery` (the sink
signals are also ``scrapy_adaptive.SINK_OPENED`` and ``SINK_CLOSED``)."""

from ..runtime.delivery import SINK_CLOSED, SINK_OPENED, Delivery, DurableSink

__all__ = ["SINK_CLOSED", "SINK_OPENED", "Delivery", "DurableSink"]
