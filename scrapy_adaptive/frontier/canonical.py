"""Canonical URLs: several spellings of one page, one record (off by default).

Sites answer the same page under several URLs: ``www.example.com`` and
``example.com``, ``/About`` and ``/about``, ``/docs/`` and ``/docs``,
``/docs/index.html`` and ``/docs/``.  Scrapy's fingerprint tells them apart,
so each spelling would get its own record, its own visits and its own
versions.  ``ADAPTIVE_CANONICAL`` names, per host, which spellings are one
(seed 002, section 3.5):

* ``"www"``: ``www.`` and the bare host are one site;
* ``"case"``: paths are case-insensitive (the query keeps its case);
* ``"slash"``: a trailing slash does not matter (``/docs/`` = ``/docs``);
* ``"index"``: ``index.html``, ``index.htm``, ``index.php``, ``index.asp``,
  ``default.asp``, ``default.aspx``, ``default.htm`` name their directory.

The setting is a list of option names applied to every host, or a dict from
host (a glob, matched with and without ``www.``; ``"*"`` for every other
host) to such a list.  Only the URL's *identity* is canonical: the frontier
keeps one record under the fingerprint of the canonical form (Scrapy's own
canonicalisation, w3lib's ``canonicalize_url``, still applies on top) and
fetches the first spelling it was given.  Changing the setting on an
existing state changes identities: the URLs are then new.

Pure: no Scrapy (w3lib only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..config.spec import ConfigError

SETTING = "ADAPTIVE_CANONICAL"
OPTIONS = ("www", "case", "slash", "index")
#: directory index documents ("index": they name their directory)
INDEX_NAMES = frozenset(
    ("index.html", "index.htm", "index.php", "index.asp", "default.asp", "default.aspx", "default.htm")
)


def _options(value: Any, where: str) -> frozenset[str]:
    if isinstance(value, str):  # "www,slash" as Scrapy's lists are written after -s (or spaces)
        value = value.replace(",", " ").split()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} ({value!r}) must be a list of option names ({', '.join(OPTIONS)}).")
    unknown = [v for v in value if v not in OPTIONS]
    if unknown:
        raise ConfigError(f"{where}: unknown option(s) {', '.join(map(repr, unknown))}; use {', '.join(OPTIONS)}.")
    return frozenset(value)


def _bare(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


@dataclass(frozen=True)
class Canonical:
    """The canonical form of URLs, by host; :meth:`url` is the one function."""

    #: (host glob, options), in the setting's order; ``"*"`` last
    rules: tuple[tuple[str, frozenset[str]], ...] = ()

    @classmethod
    def from_setting(cls, value: Any) -> Canonical:
        """Parse ``ADAPTIVE_CANONICAL`` (None: off); raise :class:`ConfigError`."""
        if value is None or value == "" or value == [] or value == {}:
            return cls()
        if isinstance(value, str) and value.lstrip().startswith(("[", "{")):
            import json

            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ConfigError(f"{SETTING} is not valid JSON: {exc}") from None
        if not isinstance(value, Mapping):
            return cls((("*", _options(value, SETTING)),))
        rules = []
        for host, options in value.items():
            if not isinstance(host, str) or not host:
                raise ConfigError(f"{SETTING}: the key {host!r} must be a host name or glob (or '*').")
            rules.append((host.lower(), _options(options, f"{SETTING}[{host!r}]")))
        rules.sort(key=lambda rule: rule[0] == "*")  # the catch-all decides last
        return cls(tuple(rules))

    def __bool__(self) -> bool:
        return any(options for _, options in self.rules)

    def options_for(self, host: str) -> frozenset[str]:
        """The options that apply to *host* (lower case)."""
        for glob, options in self.rules:
            if fnmatchcase(host, glob) or fnmatchcase(_bare(host), glob):
                return options
        return frozenset()

    def url(self, url: str) -> str:
        """*url* in its canonical spelling (itself when no option applies).

        >>> c = Canonical.from_setting(["www", "case", "slash", "index"])
        >>> c.url("http://www.Example.com/Docs/Index.HTML?Q=1")
        'http://example.com/docs?Q=1'
        >>> c.url("http://example.com/docs/"), c.url("http://example.com/")
        ('http://example.com/docs', 'http://example.com/')
        """
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        options = self.options_for(host)
        if not options:
            return url
        netloc = parts.netloc
        if "www" in options and host.startswith("www."):
            netloc = netloc.lower().replace(host, _bare(host), 1)
        path = parts.path or "/"
        if "case" in options:
            path = path.lower()
        if "index" in options:
            head, _, last = path.rpartition("/")
            if last.lower() in INDEX_NAMES:
                path = head + "/"
        if "slash" in options and len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"
        return urlunsplit((parts.scheme, netloc, path, parts.query, parts.fragment))
