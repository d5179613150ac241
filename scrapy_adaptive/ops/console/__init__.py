"""See and steer the frontier: ``scrapy frontier report|url|seed|forget|export``.

* :mod:`.api`: :class:`~.api.FrontierConsole`, the questions and orders,
  over an opened :class:`~scrapy_adaptive.frontier.Frontier` (no Scrapy);
* :mod:`.html`: the one-file HTML report (inline SVG charts);
* :mod:`.control`: the running crawl's control channel (a Unix socket in
  the state folder) and its client;
* :mod:`.command`: the thin Scrapy command (the ``scrapy.commands`` entry
  point), which imports the rest only when run.

Importing this package imports nothing.
"""
