"""What the crawl knows of each host besides its queue of URLs.

* :mod:`.facts`: robots.txt ``Crawl-delay``, validator trust, soft-404s and
  parked pages, hint track records, stored with the host's counters;
* :mod:`.hints`: change hints (sitemap ``lastmod``, feed entries) and the
  arithmetic of their sources' track records;
* :mod:`.crawltime`: how long a host takes to crawl once (per-host capacity);
* :mod:`.capacity`: how often politeness lets each host be fetched, for a
  budgeted policy.

Pure: no Scrapy, no Twisted.
"""
