"""Start-up warnings about Scrapy settings that work against an adaptive crawl.

Said once, when the scheduler is built (so they reach ``LOG_FILE`` too):
misspelt ``ADAPTIVE_*`` names (with the closest valid one), components that
undo revisiting (scrapy-deltafetch), answer revisits from
a stale copy (HttpCache), or stack a second politeness on the frontier's
(AutoThrottle, a lower per-domain concurrency), unpickle the job folder
(Scrapy's SpiderState, enabled by the project), and Scrapy's queue settings
the frontier replaces (:data:`REPLACED_BY_FRONTIER`), which would otherwise
be ignored without a word.

Refused, by :func:`require_components` and :func:`require_extras`: a
scheduler without the components its verdicts need (``SCHEDULER`` set
without the add-on), a LevelDB state without plyvel, and a WARC folder
without warcio.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from typing import TYPE_CHECKING

from scrapy.extensions.spiderstate import SpiderState
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

from ..change.rules import DigestRules
from ..config.notify import notify_channels
from ..config.settings import unknown_settings
from ..config.spec import ConfigError, counted
from ..frontier.canonical import Canonical
from ..policies import PolicyStack, load_wait_policy
from ..runtime.changes import feed_format
from ..runtime.notify import checked_channels
from ..runtime.wiring import crawl_config
from ..store.leveldb import PLYVEL_MISSING
from ..warc.writer import EXTRA_MESSAGE
from .components import (
    DELTAFETCH_MESSAGE,
    SCRAPY_SPIDER_STATE,
    TOOK_OVER_SETTING,
    VERDICT_COMPONENTS,
    WARC_MIDDLEWARE,
    is_deltafetch,
)
from .engine import EVENT_ITEM_PROCESSOR, ChangeEventProcessor
from .feedfile import feed_warnings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from ..config.settings import AdaptiveConfig

logger = logging.getLogger(__name__)

#: Scrapy's scheduler settings the frontier takes the place of: set by the
#: project, each is named at start (the frontier's queues and duplicate
#: check are its own, so a value there changes nothing)
REPLACED_BY_FRONTIER = {
    "SCHEDULER_DISK_QUEUE": "the frontier keeps every URL in its own store (LevelDB or Redis), and equal "
    "priorities go first in, first out",
    "SCHEDULER_MEMORY_QUEUE": "the frontier keeps every URL in its own store (LevelDB or Redis), and equal "
    "priorities go first in, first out",
    "SCHEDULER_PRIORITY_QUEUE": "the frontier keeps one queue per host (ADAPTIVE_POLITENESS_KEY), "
    "ordered by the time of next visit",
    "DUPEFILTER_CLASS": "the frontier knows every URL by its request fingerprint (ADAPTIVE_CANONICAL) "
    "and revisits it, where a duplicate filter would drop it",
}


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
    messages += [
        f"{name}: ignored by scrapy-adaptive's scheduler: {why}. Remove it from your settings to silence this."
        for name, why in REPLACED_BY_FRONTIER.items()
        if (settings.getpriority(name) or 0) > SETTINGS_PRIORITIES["default"]
    ]
    if any(issubclass(c, SpiderState) for c in enabled_components(settings, "EXTENSIONS")):
        messages.append(
            "EXTENSIONS: Scrapy's SpiderState is enabled: it unpickles JOBDIR/spider.state at every start, so "
            "whoever can write the job folder runs code in this crawl (the file is refused while it exists). "
            "Put scrapy_adaptive.JsonSpiderState in its place, which keeps spider.state as JSON in the state folder "
            "(the add-on does, unless EXTENSIONS names SpiderState): EXTENSIONS = "
            f'{{"{SCRAPY_SPIDER_STATE}": None, "scrapy_adaptive.JsonSpiderState": 0}}.'
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


def enabled_components(settings: BaseSettings, name: str) -> list[type]:
    """The classes *name* (``DOWNLOADER_MIDDLEWARES``, ...) enables, its
    ``_BASE`` included; a path that does not load is left to Scrapy to say."""
    classes = []
    for component in build_component_list(settings.getwithbase(name)):
        try:
            loaded = load_object(component) if isinstance(component, str) else component
        except (ImportError, AttributeError, NameError, ValueError):
            continue
        if isinstance(loaded, type):
            classes.append(loaded)
    return classes


def require_components(settings: BaseSettings, config: AdaptiveConfig) -> None:
    """Refuse a crawl whose scheduler would record nothing: ``SCHEDULER``
    set without the add-on, or one of the add-on's verdict components set
    to None (:data:`~.components.VERDICT_COMPONENTS`).  Such a crawl fetches and
    scrapes as usual but keeps no visit, no version and no crawl log, which
    nobody notices until the history is needed.  A subclass counts as the
    component."""
    needed = dict(VERDICT_COMPONENTS)
    if config.warc_dir is not None:
        needed["DOWNLOADER_MIDDLEWARES"] += tuple(WARC_MIDDLEWARE)
    missing = []
    for name, components in needed.items():
        enabled = enabled_components(settings, name)
        lacking = [c.__name__ for c in components if not any(issubclass(e, c) for e in enabled)]
        if lacking:
            missing.append(f"{', '.join(lacking)} ({name})")
    if missing:
        raise ConfigError(
            f"SCHEDULER is scrapy-adaptive's AdaptiveScheduler, but components its verdicts need are not enabled: "
            f"{'; '.join(missing)}, so no visit would be recorded. Enable them with "
            "ADDONS = {'scrapy_adaptive.Addon': 0} in settings.py instead of setting SCHEDULER alone, and do not "
            'set them to None (or list them yourself: docs/politeness.md, "Without the add-on").'
        )


def require_item_processor(settings: BaseSettings, config: AdaptiveConfig) -> None:
    """Refuse ``ADAPTIVE_CHANGES_AS_ITEMS`` when Scrapy's item processor
    cannot take the events: the add-on sets ``ITEM_PROCESSOR`` to
    :class:`~.engine.ChangeEventProcessor`, but a project that set its own
    (or runs without the add-on) would see the events pile up in the state
    and never reach its pipelines.  A subclass counts."""
    if not config.changes_as_items:
        return
    named = settings.get("ITEM_PROCESSOR")
    try:
        processor = load_object(named) if isinstance(named, str) else named
    except (ImportError, AttributeError, NameError, ValueError):
        processor = None  # Scrapy says why when it builds it
    if not (isinstance(processor, type) and issubclass(processor, ChangeEventProcessor)):
        raise ConfigError(
            f"ADAPTIVE_CHANGES_AS_ITEMS needs ITEM_PROCESSOR = {EVENT_ITEM_PROCESSOR!r} (or a subclass of it), "
            f"but it is {named!r}, so no change event would reach the item pipelines. Remove ITEM_PROCESSOR from "
            "the settings (the add-on sets it), or make your processor a subclass of ChangeEventProcessor."
        )


def require_extras(config: AdaptiveConfig) -> None:
    """Refuse a crawl whose state or WARC output cannot be written (plyvel
    for LevelDB, warcio missing) before anything of the state folder is
    opened or created: refused once the frontier is open, the crawl had
    already made its state folder."""
    if PLYVEL_MISSING and (config.store_url is None or config.warc_dir is not None):
        raise ConfigError(PLYVEL_MISSING)
    if config.warc_dir is None:
        return
    try:
        import warcio  # noqa: F401
    except ImportError:
        raise ConfigError(EXTRA_MESSAGE) from None


def checked_settings(crawler: Crawler) -> tuple[AdaptiveConfig, PolicyStack, Canonical]:
    """The crawl's settings parsed, its wait policies and URL canonicalisation
    built, and everything else a bad setting could break checked, before
    anything of the JOBDIR is opened (:class:`ConfigError`, one line)."""
    config = crawl_config(crawler, strict=True)
    assert config is not None
    policy = load_wait_policy(config)
    canonical = Canonical.from_setting(config.canonical)
    # built again by the visit middleware at open: checked here, so a bad rule is refused first
    DigestRules.from_settings(config.digest_rules, config.digest_default, config.digest_max_size)
    if config.changes_feed is not None:
        feed_format(config.changes_feed)  # one that cannot be appended to
    channels = notify_channels(config.notify)
    if channels:
        checked_channels(channels)  # apprise installed, and every URL one it can send to
    require_components(crawler.settings, config)
    require_item_processor(crawler.settings, config)
    require_extras(config)
    return config, policy, canonical
