"""Configuration: every ``ADAPTIVE_*`` setting in one spec table.

* :mod:`.spec`: the kinds of values and how each is parsed and checked;
* :mod:`.table`: the table itself (name, default, kind, help);
* :mod:`.settings`: :class:`~.settings.AdaptiveConfig`, the typed, frozen
  configuration read once per crawler, and the start-up checks;
* :mod:`.matching`: URL / host / content-type patterns of the entries of
  ``ADAPTIVE_WAIT_POLICIES`` and ``ADAPTIVE_DIGEST_RULES``.

Imports no Scrapy: the simulator and the console read it too.
"""
