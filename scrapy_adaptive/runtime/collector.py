"""Python's garbage collector set for a crawl that runs for months.

A crawl's process holds two kinds of objects: what lives as long as the
crawl (Scrapy, the project, the frontier's tables, the policies' aggregates)
and what one page allocates and drops.  Reference counting frees most of the
latter; the cyclic collector exists for the rest, and by default it runs a
young collection every 700 container allocations, a few per page, each
scanning what survived so far, and full collections that scan everything.
Measured on a crawl (docs/benchmarks.md, "End to end"), the collector then
takes a tenth of the process's CPU.  Two constants take most of that away:

* :data:`FREEZE`: everything alive when the frontier opens is moved out of
  the collector's sight (``gc.freeze()``), so full collections scan what the
  crawl allocated since;
* :data:`THRESHOLD`: the youngest generation is collected every that many
  container allocations (a dozen pages or so), not every 700: the same
  garbage is found, a few pages later, in far fewer scans.

A project still setting ``ADAPTIVE_GC_FREEZE`` or ``ADAPTIVE_GC_THRESHOLD``
is told at start-up that they are constants.

Both act on the whole process (the project's code too), once: a second crawl
in the same process keeps the first's freeze, and a threshold the project
set higher is kept.
"""

from __future__ import annotations

import gc
import logging

from ..config.spec import counted

logger = logging.getLogger(__name__)

#: Freeze what lives when the frontier opens.  A constant, not a setting: the
#: freeze only hides long-lived objects from the collector's scans (what it
#: saves: docs/benchmarks.md, "End to end"), and what lives then (Scrapy, the
#: project, the frontier's tables) lives for the crawl, so the scans it skips
#: had nothing to find: no crawl is better off without it.
FREEZE = True
#: The youngest generation's threshold (Python's is 700).  A constant, not a
#: setting: the same garbage is found a dozen pages later, and a project that
#: wants fewer collections still can, since a higher threshold it set is kept.
THRESHOLD = 10_000


def tune(*, freeze: bool = FREEZE, threshold: int = THRESHOLD) -> None:
    """Freeze what lives now (*freeze*) and raise the youngest generation's
    threshold to *threshold* (0: Python's own is kept)."""
    if freeze and not gc.get_freeze_count():
        # what lives now lives for the crawl: collections scan per-page garbage only
        gc.collect()
        gc.freeze()
    young, *older = gc.get_threshold()
    if threshold and young < threshold:
        gc.set_threshold(threshold, *older)
        logger.debug(
            "The garbage collector's youngest generation is collected every %s.", counted(threshold, "allocation")
        )
