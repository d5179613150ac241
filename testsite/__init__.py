"""Local HTTP test sites for the demo, the tests and the benchmarks.

Not part of the ``scrapy_adaptive`` wheel: this is the repository's own
tooling, imported from the repository root (pytest's rootdir, ``python -m``
run there, or a child process given ``PYTHONPATH``).  Everything here binds
loopback addresses only and every server stops by itself.

The pieces, each written once:

* :mod:`testsite.serving`: the server side: refuse non-loopback hosts, listen
  on a free port (or a given one) per host, print one ``READY {json}`` line,
  run a Twisted reactor until SIGTERM, stdin EOF, the parent's death or
  ``--max-seconds``; answer a request later without blocking the others.
* :mod:`testsite.process`: the client side: :class:`~testsite.process.SiteProcess`
  starts such a server as a child process, waits (bounded) for its ready
  line and stops it.
* :mod:`testsite.httputil`: HTTP dates, ``ETag`` matching, conditional
  request evaluation (304 or not) and ``robots.txt``.
* :mod:`testsite.schedule`: when a page changes (never, periodically, as a
  Poisson process), as a pure function of a clock: wall seconds for the demo
  and the benchmarks' churning site, the hit count for pages that change
  every N requests.
* :mod:`testsite.demo`: the sample project's demo site
  (``python -m testsite.demo``, started by ``scripts/demo.sh``).

The sites built on them: ``testsite.demo``, ``tests/mockserver.py`` (the
tests' deterministic server), and ``bench/e2e_site.py``.
"""
