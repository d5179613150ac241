"""The crawl's runtime: what carries a visit's verdict to the frontier and
the user's items to durable storage, below the Scrapy adapter.

* :mod:`.assembly`: the state folder, its store, the frontier and what
  works on it, built once at open; :mod:`.tasks`, :mod:`.schedule_opening`:
  the once-a-second tick's work; :mod:`.schedule_entries`: schedules kept in
  the state folder; :mod:`.spiderstate`: ``spider.state`` as JSON there;
* :mod:`.verdicts`: a visit's verdict completed and recorded, the one path
  from the middlewares to the frontier (:class:`~.verdicts.FrontierServices`);
* :mod:`.delivery`, :mod:`.sink_failure`: versions confirmed once their items
  are durable, and a sink that cannot write;
* :mod:`.issued_requests`, :mod:`.request_hints`: the requests out for download, and
  the change hints they carry;
* :mod:`.stop_grace`: how long a stop waits for a hung download;
* :mod:`.wiring`: how a component gets its settings and the frontier;
* :mod:`.crawllog`: one line per visit; :mod:`.changes`, :mod:`.changelog`:
  change events out of the outbox, and their history.
"""
