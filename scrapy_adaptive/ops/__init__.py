"""Running a crawl for months: reports, progress, crawl log and the console.

* :mod:`.reporting`: the periodic summary and ``report.html``;
* :mod:`.progress`: hourly series kept in the frontier's meta;
* :mod:`.crawllog`: the Heritrix-style crawl log, one line per visit;
* :mod:`.console`: ``scrapy frontier report|url|seed|forget|export``.
"""
