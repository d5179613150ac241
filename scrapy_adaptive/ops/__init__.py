"""Running a crawl for months: reports, progress and the console.

* :mod:`.reporting`: the periodic summary and ``report.html``;
* :mod:`.progress`: hourly series kept in the frontier's meta;
* :mod:`.assembly`: the console and the summary, built on a crawl's runtime;
* :mod:`.pace`: where the revisit budget comes from, in the report's words;
* :mod:`.console`: ``scrapy frontier report|url|seed|forget|export|schedule``.

The crawl log, written with each verdict, is :mod:`scrapy_adaptive.runtime.crawllog`.
"""
