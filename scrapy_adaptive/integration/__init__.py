"""The Scrapy adapter: the scheduler, the middlewares, feed storage, request
serialization, the engine adapter and the start-up checks.

The scheduler has the crawl's runtime assembled at open
(:mod:`scrapy_adaptive.runtime.assembly`, with the console and the summary
built by :mod:`scrapy_adaptive.ops.assembly`) and runs its once-a-second
tasks (:mod:`scrapy_adaptive.runtime.tasks`); the verdicts, delivery and
stop grace it hands requests to are the runtime's too.
Below :mod:`scrapy_adaptive.runtime` everything is plain Python, tested
without a crawler.  :mod:`.engine` is the one module that touches a private
part of Scrapy.
"""
