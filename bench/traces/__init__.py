"""Real change histories: traces derived from public git-scraping repositories.

A git-scraping repository commits a page, feed or API answer whenever a
scheduled scraper sees it change, so its history *is* a change history:
each tracked file is a document and each commit that changes it is a
version, stamped with the commit time (``SOURCES.md`` and
``manifest.json`` say where each committed trace came from and how it was
derived).  Only timestamps are committed, never the repositories' content.
``lab/`` holds the JSON reports of the replay runs that ``docs/lab/`` quotes
(``--render`` prints their tables again).
"""
