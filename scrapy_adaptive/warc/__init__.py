"""WARC output (``ADAPTIVE_WARC_DIR``, the ``warc`` extra).

* :mod:`.writer`: the files, rotation and repair after a kill;
* :mod:`.digests`, :mod:`.fleetdigests`: the capture index that decides
  ``response`` or ``revisit`` (one crawl's, a fleet's);
* :mod:`.capture`: one transaction as the writer takes it.

The downloader middleware that hands it every transaction as sent is the
adapter's (:mod:`scrapy_adaptive.integration.downloadermiddlewares.warc`,
``scrapy_adaptive.WarcMiddleware``); :mod:`.middleware` is its old path.
"""
