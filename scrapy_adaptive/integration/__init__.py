"""The Scrapy adapter: the scheduler, the middlewares, feed storage, request
serialization, the engine adapter and the start-up checks.

The scheduler assembles the crawl's runtime at open (:mod:`.assembly`) and
runs its once-a-second tasks (:mod:`.tasks`); the verdicts, delivery and
stop grace it hands requests to are :mod:`scrapy_adaptive.runtime`'s.
Below :mod:`scrapy_adaptive.runtime` everything is plain Python, tested
without a crawler.  :mod:`.engine` is the one module that touches a private
part of Scrapy.
"""
