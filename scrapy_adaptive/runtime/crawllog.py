"""The crawl log: one line per visit, in the spirit of Heritrix's crawl.log.

``<state dir>/crawl.log``, columns separated by single spaces::

    2026-11-21T05:31:28.123Z 200 5123 http://127.0.0.1:8731/news/ text/html exact:sha1:3f2a…
        0.012s wt:45s,3vis,1ver,ov:0.3s unchanged

(one line in the file)

time (UTC), status (``-`` when no response: then the outcome is in the
annotations), size in bytes (``-`` unknown), URL, media type (``-``),
digest (``-``), fetch duration, and annotations: ``wt:`` the wait until
the next visit, visits, versions, ``ov:`` how overdue the visit was, the
change state, plus ``notModified`` / ``midFetchAbort`` / ``redirect`` /
``retry`` / ``failed`` / ``disregarded`` where they apply, and
``duplicate:otherUrl`` when the WARC writer archived the body as a revisit of
another URL's capture (``ADAPTIVE_WARC_DEDUP_ACROSS_URLS``).

Rotated by size (``ADAPTIVE_CRAWL_LOG_MAX_BYTES``, keeping
``ADAPTIVE_CRAWL_LOG_BACKUPS`` old files) so a crawl that never ends cannot
fill the disk with it.  A log that cannot be written is reported once and
then skipped: it never stops the crawl (the records are the truth).
"""

from __future__ import annotations

import functools
import logging
import re
import time

from ..config.matching import media_type
from ..model import Plan, UrlRecord, Visit
from .rotation import RotatingFile

logger = logging.getLogger(__name__)


def duration_text(seconds: float | None) -> str:
    """A short duration for humans: ``0.012s``, ``45s``, ``3h2m``, ``2d4h``."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.3g}s"
    if seconds < 3600:
        return f"{seconds:.0f}s"
    hours, rest = divmod(int(seconds), 3600)
    if hours < 48:
        return f"{hours}h{rest // 60}m"
    return f"{hours // 24}d{hours % 24}h"


#: whitespace would split a column (a URL Scrapy let through with a space,
#: an error message with a newline): never written raw
_WHITESPACE = re.compile(r"\s")


def _url_column(url: str) -> str:
    """*url* as one column: its whitespace percent-encoded, as a URL may carry it."""
    return _WHITESPACE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8")), url)


def _word(text: str) -> str:
    """*text* as one word of a column: whitespace becomes ``_``."""
    return _WHITESPACE.sub("_", text)


@functools.lru_cache(maxsize=4)
def _second_stamp(second: int) -> str:
    """The UTC stamp of one whole second (a crawl logs many lines a second)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def format_line(record: UrlRecord, visit: Visit, plan: Plan | None, now: float) -> str:
    """One visit's line: the verdict, the policy's *plan* (its wait, its
    notes after the verdict's annotations; None for a verdict that is not a
    visit: ``wt:-``) and the record; its version count is the record's, the
    versions awaiting the delivery of their items included, so ``changed``
    never shows the count from before the change."""
    stamp = _second_stamp(int(now)) + f".{int(now % 1 * 1000):03d}Z"
    notes = [f"wt:{duration_text(plan.wait)}" if plan is not None else "wt:-", f"{record.visits}vis"]
    notes.append(f"{record.versions}ver")
    if visit.overdue is not None:
        notes.append(f"ov:{duration_text(visit.overdue)}")
    annotations = [visit.change.value] if record.outcome == "visited" else [str(record.outcome)]
    annotations += visit.annotations
    if plan is not None:
        annotations += plan.notes
    annotations += record.notes
    # the fetch's duration as the frontier measured it, if the verdict had none
    duration = record.duration if visit.duration is None and record.outcome == "visited" else visit.duration
    if record.outcome != "visited" and visit.reason:
        annotations.append(_word(visit.reason)[:120])
    # the URL and the media type rarely hold whitespace: searched, not rewritten, at each line
    url = record.url
    if _WHITESPACE.search(url):
        url = _url_column(url)
    kind = media_type(visit.content_type)
    if _WHITESPACE.search(kind):
        kind = _word(kind)
    return " ".join(
        [
            stamp,
            str(visit.status) if visit.status is not None else "-",
            str(visit.size) if visit.size is not None else "-",
            url,
            kind or "-",
            visit.digest or "-",
            duration_text(duration),
            ",".join(notes),
            ",".join(annotations),
        ]
    )


class CrawlLog:
    """Appends visit lines to a size-rotated file (:class:`~.rotation.RotatingFile`)."""

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        self.path = path
        self._file = RotatingFile(path, max_bytes, backups)
        self._broken = False

    def write(self, record: UrlRecord, visit: Visit, plan: Plan | None, now: float | None = None) -> None:
        if self._broken:
            return
        line = format_line(record, visit, plan, time.time() if now is None else now) + "\n"
        try:
            self._file.append(line.encode("utf-8"))
        except OSError as exc:
            self._broken = True
            logger.error("The crawl log %s cannot be written (%s); it is skipped from now on.", self.path, exc)

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # each line was written through as it came
