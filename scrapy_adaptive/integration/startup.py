"""Start-up warnings about Scrapy settings that work against an adaptive crawl.

Said once, when the scheduler is built (so they reach ``LOG_FILE`` too):
misspelt ``ADAPTIVE_*`` names (with the closest valid one), components that
undo revisiting (scrapy-deltafetch), answer revisits from
a stale copy (HttpCache), or stack a second politeness on the frontier's
(AutoThrottle, a lower per-domain concurrency).
"""

from __future__ import annotations

import json
import logging
import os
import struct
from typing import TYPE_CHECKING

from ..addon import DELTAFETCH_MESSAGE, TOOK_OVER_SETTING, is_deltafetch
from ..config.settings import unknown_settings
from ..config.spec import ConfigError, counted
from ..warc.writer import EXTRA_MESSAGE
from .feedfile import feed_warnings

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from ..config.settings import AdaptiveConfig

logger = logging.getLogger(__name__)


def settings_warnings(settings: BaseSettings, config: AdaptiveConfig) -> list[str]:
    """The warnings *settings* deserve, as messages."""
    messages = unknown_settings(settings) + config.warnings()
    if settings.getbool(TOOK_OVER_SETTING):
        messages.append(DELTAFETCH_MESSAGE)
    elif any(is_deltafetch(k) and v is not None for k, v in settings.getdict("SPIDER_MIDDLEWARES").items()):
        messages.append(
            "scrapy-deltafetch's DeltaFetch is enabled: it drops every request for a page that produced items "
            "before, so those pages are never revisited. Use ADDONS = {'scrapy_adaptive.Addon': 0}, which "
            "disables it, or remove it from SPIDER_MIDDLEWARES."
        )
    if settings.getbool("HTTPCACHE_ENABLED"):
        messages.append(
            "HTTPCACHE_ENABLED: Scrapy's HTTP cache answers revisits from its stored copy, so changes are not "
            "seen until the copy expires, and its conditional requests fight scrapy-adaptive's. Disable it for "
            "adaptive crawls."
        )
    if settings.getbool("AUTOTHROTTLE_ENABLED"):
        messages.append(
            "AUTOTHROTTLE_ENABLED: AutoThrottle's delays apply in the downloader on top of the frontier's "
            "politeness (ADAPTIVE_DELAY_FACTOR × fetch time, clamped to ADAPTIVE_MIN_DELAY..MAX_DELAY), "
            "which already adapts to slow hosts. Disable one of them unless you want both."
        )
    per_domain = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
    if config.host_valence > per_domain:
        messages.append(
            f"ADAPTIVE_HOST_VALENCE ({config.host_valence}) is above CONCURRENT_REQUESTS_PER_DOMAIN "
            f"({per_domain}): the downloader will hold the extra requests back."
        )
    if config.delivery:
        messages += feed_warnings(settings)
    return messages


def warn_about_settings(settings: BaseSettings, config: AdaptiveConfig) -> None:
    for message in settings_warnings(settings, config):
        logger.warning("%s", message)


def remove_empty_spider_state(jobdir: str | None) -> None:
    """Removes an empty ``JOBDIR/spider.state``, saying so.

    Scrapy's SpiderState extension cannot read an empty file (EOFError at
    every start) and then fails to save the state at close, truncating the
    file again: the JOBDIR stays broken for good.  Refused starts of earlier
    versions left such files.  Removed, the spider starts with an empty
    state, as on a new JOBDIR, and the file is written whole at close.
    """
    if not jobdir:
        return
    path = os.path.join(jobdir, "spider.state")
    try:
        if os.path.getsize(path) != 0:
            return
        os.unlink(path)
    except OSError:
        return
    logger.warning(
        "%s was empty (an interrupted write, or a refused start of an earlier scrapy-adaptive): removed, so the "
        "spider starts with an empty state instead of failing to read it.",
        path,
    )


#: where Scrapy's own scheduler keeps its pending requests in a JOBDIR
SCRAPY_QUEUE_DIR = "requests.queue"


def scrapy_queue_size(jobdir: str) -> int:
    """Requests pending in Scrapy's own scheduler queue under *jobdir*, counted
    without reading a request: a LIFO disk queue file starts with its count
    (4 bytes, big-endian), a FIFO one keeps it in ``info.json``.  Best effort:
    what cannot be read counts 0."""
    total = 0
    for root, _dirs, files in os.walk(os.path.join(jobdir, SCRAPY_QUEUE_DIR)):
        for name in files:
            path = os.path.join(root, name)
            try:
                if name == "info.json":
                    with open(path, encoding="utf-8") as f:
                        total += int(json.load(f).get("size", 0))
                elif name != "active.json" and not name.startswith("q"):
                    with open(path, "rb") as f:
                        head = f.read(4)
                    total += struct.unpack(">L", head)[0] if len(head) == 4 else 0
            except (OSError, ValueError, TypeError, AttributeError, struct.error):
                continue
    return total


def note_scrapy_queue(jobdir: str | None) -> None:
    """Says that a JOBDIR written by Scrapy's own scheduler still holds requests
    the adaptive frontier will not take.

    Those requests are pickled; reading them would let a state folder run
    code, so they are left where they are.  A link-following spider finds
    most of them again; the warning says how to add the others.
    """
    if not jobdir:
        return
    pending = scrapy_queue_size(jobdir)
    if pending <= 0:
        return
    logger.warning(
        "%s holds %s pending in Scrapy's own scheduler queue (%s, from a run without scrapy-adaptive). "
        "scrapy-adaptive does not read that queue: its requests are pickled, and reading a state folder must not "
        "run code. The start requests and every link the spider follows are crawled as usual; a pending URL the "
        "crawl does not find again can be added with `scrapy frontier seed URL`. The queue is left as it was "
        "(delete %s to silence this).",
        jobdir,
        counted(pending, "request"),
        SCRAPY_QUEUE_DIR,
        os.path.join(jobdir, SCRAPY_QUEUE_DIR),
    )


def require_extras(config: AdaptiveConfig) -> None:
    """Refuse a crawl whose WARC output cannot be written (warcio missing)
    before anything of the state folder is opened or created: refused once
    the frontier is open, the crawl had already made its state folder."""
    if config.warc_dir is None:
        return
    try:
        import warcio  # noqa: F401
    except ImportError:
        raise ConfigError(EXTRA_MESSAGE) from None
