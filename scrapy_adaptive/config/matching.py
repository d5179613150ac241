"""Which rule applies to a URL: one matcher for every "first match wins" list.

Digest rules (``ADAPTIVE_DIGEST_RULES``) and wait policies
(``ADAPTIVE_WAIT_POLICIES``) are both lists of dicts tried in order; an
entry applies when *all* the criteria it names match:

* ``content_type``: a glob or list of globs on the media type
  (``"text/*"``, ``"image/png"``), parameters such as ``charset`` ignored;
* ``hosts``: a glob or list of globs on the host name (``"*.example.com"``);
* ``url``: a regular expression searched in the URL.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .patterns import UserPattern
from .spec import ConfigError

MATCH_KEYS = ("content_type", "hosts", "url")


#: a crawl sees a few content types, each asked for several times a visit
#: (its policy, its digest rule, its stats and log line)
@functools.lru_cache(maxsize=256)
def media_type(content_type: str | None) -> str:
    """``"Text/HTML; charset=utf-8"`` -> ``"text/html"``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def _globs(value: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key!r} must be a non-empty string or list of strings, not {value!r}.")
    return tuple(v.lower() for v in value)


@dataclass(frozen=True)
class Matcher:
    """The criteria of one list entry; an empty matcher matches everything."""

    content_types: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    url: UserPattern | None = None

    @classmethod
    def parse(cls, entry: dict[str, Any], where: str, *, required: bool = True, catch_all: str = "") -> Matcher:
        """Build from an entry; *where* names the setting and index in errors,
        *catch_all* the settings for what applies to everything else."""
        content_types = _globs(entry["content_type"], where, "content_type") if "content_type" in entry else ()
        hosts = _globs(entry["hosts"], where, "hosts") if "hosts" in entry else ()
        url = None
        if "url" in entry:
            if not isinstance(entry["url"], str):
                raise ConfigError(f"{where}: 'url' ({entry['url']!r}) must be a regular expression, as a string.")
            url = UserPattern(entry["url"], f"{where}: 'url' ({entry['url']!r})")
        if required and not (content_types or hosts or url):
            hint = f"; {catch_all} apply to everything else" if catch_all else ""
            raise ConfigError(f"{where} names none of {', '.join(MATCH_KEYS)}: it would match everything{hint}.")
        return cls(content_types, hosts, url)

    def matches(self, url: str, host: str, content_type: str | None) -> bool:
        if self.content_types:  # asked at every visit: a loop, not any()
            mt = media_type(content_type)
            for g in self.content_types:
                if fnmatchcase(mt, g):
                    break
            else:
                return False
        if self.hosts and not any(fnmatchcase(host.lower(), g) for g in self.hosts):
            return False
        if self.url is None:
            return True
        return bool(self.url.search(url, on=url, fallback="URLs it cannot finish on are taken as not matching"))


def check_entries(value: Any, setting: str) -> list[dict[str, Any]]:
    """The setting's value as a list of dicts (JSON strings accepted, as
    from ``-s NAME='[...]'``), or a :class:`ConfigError` naming it."""
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ConfigError(f"{setting} is not valid JSON: {exc}") from None
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(e, dict) for e in value):
        raise ConfigError(f"{setting} must be a list of dicts, not {value!r}.")
    return [dict(e) for e in value]
