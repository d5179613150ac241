"""How the crawl's components find their settings and the frontier.

Each component configures itself in ``from_crawler`` from the crawl's one
typed configuration, :func:`crawl_config`, parsed once per crawler and
shared by every component (a setting read in two places could be read
two ways).  The frontier exists only once the scheduler has opened its
state folder, so the components that hand it verdicts connect to
:data:`FRONTIER_OPENED` and get the frontier's services with it: data
flows from the scheduler to them through a signal, and nothing calls into
a middleware from outside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ..config.settings import AdaptiveConfig
from ..config.spec import ConfigError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: sent by the scheduler once its frontier is open, with ``services`` (the
#: :class:`~.verdicts.FrontierServices` verdicts go to), ``console`` (the
#: :class:`~..ops.console.api.FrontierConsole`, whose report a component may
#: add a section to), ``spider_state`` (the state folder's
#: :class:`~.spiderstate.SpiderStateFile`) and ``changes`` (the
#: :class:`~.changes.ChangeEvents` drain, None with events off); never sent when the start is
#: refused, so the components stay out of the way then
FRONTIER_OPENED = object()

_CONFIGS: WeakKeyDictionary[Crawler, AdaptiveConfig | ConfigError] = WeakKeyDictionary()


def crawl_config(crawler: Crawler, *, strict: bool = False) -> AdaptiveConfig | None:
    """The crawl's parsed ``ADAPTIVE_*`` settings, parsed once per crawler.

    None when they are refused (*strict*: the :class:`ConfigError` is
    raised): the scheduler says why, once, and stops the crawl; a component
    then keeps its defaults and is never handed the frontier.
    """
    if crawler not in _CONFIGS:
        try:
            _CONFIGS[crawler] = AdaptiveConfig.from_settings(crawler.settings)
        except ConfigError as exc:
            _CONFIGS[crawler] = exc
    config = _CONFIGS[crawler]
    if isinstance(config, ConfigError):
        if strict:
            raise config
        return None
    return config
