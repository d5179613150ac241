"""Running a crawl for months: reports, progress and the console.

* :mod:`.reporting`: the periodic summary and ``report.html``;
* :mod:`.progress`: hourly series kept in the frontier's meta;
* :mod:`.pace`, :mod:`.humanize`: where the revisit budget comes from, and
  the report's words for durations, sizes and times;
* :mod:`.console`: ``scrapy frontier report|url|seed|forget|export|schedule``.

The crawl log, written with each verdict, is :mod:`scrapy_adaptive.runtime.crawllog`.
"""
