"""Change events to chat, mail and webhooks: ``ADAPTIVE_NOTIFY`` (the ``notify`` extra).

The channels are Apprise URLs (:mod:`..config.notify` parses the
setting); Apprise is the library that knows how to talk to Slack, Matrix,
ntfy, mail, plain webhooks and a hundred more, so this module only decides
what to say, when, and what to do when a channel does not take it.

**At least once, without holding up the feed.**  A channel can be down for
hours; the outbox must not wait for it, or the changes feed, the history
and the pipelines would stop with it, and keeping the events in memory
would grow without bound.  So the :class:`Notifier` is one more durable
sink of the drain (:class:`~.changes.ChangeEvents`), written like the feed
and the history: each channel has a **spool** in the state folder
(``notify/<channel>.jsonl``), the events it wants are appended to it,
flushed and fsynced before the outbox lets them go (a spool that cannot be
written stops the crawl like a full feed, the events waiting in the
outbox).  A sender then takes them out of the spool: the events of a
``batch`` window in one message per channel, sent in a thread (Apprise
blocks), and the spool's ``.sent`` offset moved past them only once the
channel accepted the message.  A ``kill -9`` at any moment loses none: an
event not in the spool is still in the outbox, one in the spool past the
offset is sent at the next start; one may be sent twice (killed between the
channel's answer and the offset's write), never zero times.

**A channel that refuses** (an HTTP 500, a wrong token, no answer within
:data:`SEND_TIMEOUT`) is said in one WARNING line naming it, credentials
masked (Apprise's own ``privacy`` form), with Apprise's reason; its events
stay in its spool and are tried again after :data:`RETRY_FIRST` seconds,
doubling up to :data:`RETRY_MAX` (a refusal after that is said again once
per :data:`RETRY_MAX`).  Its spool grows on disk meanwhile, up to
:data:`MAX_SPOOL_BYTES` (about 200,000 events); past that, new events are not
queued for it (said once, ``adaptive/notify/dropped``): the feed and the
history still have them.  Other channels and the drain go on.

At the crawl's close the last events leave the outbox into the spools, and
what each working channel has left is sent at once (the batch window is
not waited out), for at most :data:`CLOSE_WAIT` seconds; the rest is sent
at the next start.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred

from ..change.events import event_of
from ..change.fields import field_words
from ..change.text_diff import changed_lines
from ..config.notify import NOTIFY, NotifyChannel, masked
from ..config.spec import ConfigError, counted, duration_text
from .changelog import json_line
from .sink_failure import EVENTS_AGAIN, drop_partial_line, sink_error

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: the folder of the spools, in the state folder
SPOOL_FOLDER = "notify"
#: a channel's spool stops taking events past this size (64 MiB, about 200,000 events)
MAX_SPOOL_BYTES = 64 * 2**20
#: bytes of a spool read for one message
READ_BYTES = 1 << 20
#: events in one message at most (the rest go in the next, at once)
MAX_MESSAGE_EVENTS = 50
#: characters of a message's body at most: under the smallest limits of
#: the common services (Telegram's and ntfy's 4,096), "→" counting one
MAX_BODY_CHARS = 3500
#: characters of a field's old or new value said
VALUE_CHARS = 100
#: changed lines of a text diff said per event
TEXT_LINES = 2
#: characters of one event's line at most
MAX_LINE_CHARS = 400
#: seconds before the first retry of a refused message (then doubling)
RETRY_FIRST = 2.0
#: seconds between retries at most
RETRY_MAX = 600.0
#: seconds Apprise may take over one message (its own connect and read
#: timeouts are shorter; this bounds a service that trickles)
SEND_TIMEOUT = 60.0
#: seconds the close waits for the last messages
CLOSE_WAIT = 10.0
#: seconds between two looks at the channels while the close waits
CLOSE_POLL = 0.05

MISSING = f"{NOTIFY} is set but apprise is not installed: pip install scrapy-adaptive[notify]"

#: one message's answer: accepted, or refused and why
Answer = tuple[bool, str]
#: sends a message (Apprise URL, title, body) without blocking; fires with its :data:`Answer`
Sender = Callable[[str, str, str], "Deferred[Answer]"]


# -- what a message says --------------------------------------------------------


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_changes(event: Mapping[str, Any], only: tuple[str, ...] = ()) -> str:
    """``price 9.50 → 8.00`` (items mode): the fields of the items that
    changed, with the old and new values the rule keeps, item by item when
    more than one changed; *only*: just those fields.  Empty without a diff."""
    diff = event.get("fields")
    if not isinstance(diff, Mapping):
        return ""
    parts = []
    changed = [e for e in diff.get("changed") or [] if isinstance(e, Mapping)]
    for entry in changed:
        said = field_words(entry, only=only, width=VALUE_CHARS)
        if said:
            prefix = f"item {entry.get('item')}: " if len(changed) > 1 else ""
            parts.append(prefix + ", ".join(said))
    for key, sign in (("added", "+"), ("removed", "−")):
        items = diff.get(key) or []
        if items and not only:
            parts.append(f"{sign}{counted(len(items), 'item')}")
    return "; ".join(parts)


def text_changes(event: Mapping[str, Any]) -> str:
    """With ``ADAPTIVE_TEXT_DIFF``, the first changed lines of the page's
    text (``-Price 10 EUR / +Price 11 EUR``); empty without a diff."""
    diff = event.get("text_diff")
    if not isinstance(diff, str) or not diff:
        return ""
    return " / ".join(changed_lines(diff, most=TEXT_LINES, width=VALUE_CHARS))


def event_line(event: Mapping[str, Any], only: tuple[str, ...] = ()) -> str:
    """One event as a message's line: what happened, then the URL
    (``changed: price 9.50 → 8.00 — http://…``)."""
    kind, url = event.get("kind"), event.get("url")
    if kind in ("changed", "back"):
        detail = field_changes(event, only) or text_changes(event)
        what = f"{kind}: {detail}" if detail else str(kind)
    elif kind == "gone":
        what = f"gone ({event.get('status')})"
    elif kind == "moved":
        what = f"moved to {event.get('location')}"
    else:
        what = str(kind)
    return _cut(f"{what} — {url}", MAX_LINE_CHARS)


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    #: the events it says
    events: int


def compose(events: list[Mapping[str, Any]], only: tuple[str, ...] = ()) -> Message:
    """One message of the first *events* that fit (:data:`MAX_MESSAGE_EVENTS`,
    :data:`MAX_BODY_CHARS`; at least one); ``events`` says how many."""
    lines: list[str] = []
    size = 0
    for event in events[:MAX_MESSAGE_EVENTS]:
        line = event_line(event, only)
        if lines and size + len(line) + 1 > MAX_BODY_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
    said = events[: len(lines)]
    kinds: dict[str, int] = {}
    for event in said:
        kinds[str(event.get("kind"))] = kinds.get(str(event.get("kind")), 0) + 1
    hosts = {urlsplit(str(event.get("url"))).netloc for event in said}
    where = next(iter(hosts)) if len(hosts) == 1 else counted(len(hosts), "site")
    summary = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    title = f"{counted(len(said), 'change')} on {where}: {summary}"
    return Message(title, "\n".join(lines), len(said))


# -- a channel's spool -----------------------------------------------------------


class Spool:
    """One channel's events not yet accepted: appended to ``<name>.jsonl``,
    the offset of the first not accepted in ``<name>.sent``.  Emptied once
    everything in it was accepted (the offset is reset first: a kill in
    between sends the events again, never loses them)."""

    def __init__(self, folder: str, name: str) -> None:
        self.path = os.path.join(folder, name + ".jsonl")
        self.offset_path = os.path.join(folder, name + ".sent")
        drop_partial_line(self.path)  # a kill mid-append: those events are still in the outbox
        self.size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
        self.sent = self._read_offset()

    def _read_offset(self) -> int:
        try:
            with open(self.offset_path, "rb") as file:
                sent = int(file.read().strip() or 0)
        except FileNotFoundError:
            return 0
        except ValueError:
            logger.warning("The offset %s is garbled; its spool's events are all sent again.", self.offset_path)
            return 0
        # past the end: the spool was changed by hand, so all of it is sent
        return sent if 0 <= sent <= self.size else 0

    @property
    def unsent(self) -> int:
        """Bytes of events not accepted yet."""
        return self.size - self.sent

    def append(self, events: list[dict[str, Any]]) -> None:
        """Append *events* and make them durable; a
        :class:`~.sink_failure.SinkError` naming the file when it cannot."""
        data = b"".join(json_line(event) for event in events)
        try:
            with open(self.path, "ab") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
        except OSError as exc:
            raise sink_error("notification spool", self.path, exc, EVENTS_AGAIN) from None
        self.size += len(data)

    def read(self, limit: int = READ_BYTES) -> list[tuple[int, dict[str, Any] | None]]:
        """The events after the offset (up to *limit* bytes, at least one
        line), each with the offset just past it; a garbled line is None."""
        try:
            file = open(self.path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:  # a temporary state folder, removed at the close
            return []
        with file:
            file.seek(self.sent)
            data = file.read(max(limit, 1))
            while not data.endswith(b"\n") and b"\n" not in data and len(data) < self.unsent:
                more = file.read(limit)  # one line longer than the limit
                if not more:
                    break
                data += more
        rows: list[tuple[int, dict[str, Any] | None]] = []
        end = self.sent
        for line in data.split(b"\n")[:-1]:
            end += len(line) + 1
            try:
                event = event_of(json.loads(line))
            except ValueError:
                event = None
            rows.append((end, event))
        return rows

    def accept(self, end: int) -> None:
        """Everything before *end* was accepted: the offset moves past it,
        durably; the spool is emptied once nothing is left in it."""
        self.sent = max(self.sent, min(end, self.size))
        if self.sent < self.size:
            self._write_offset(self.sent)
            return
        self._write_offset(0)  # first: a kill before the truncation sends them again
        with open(self.path, "r+b") as file:
            file.truncate(0)
            os.fsync(file.fileno())
        self.size = self.sent = 0

    def _write_offset(self, value: int) -> None:
        temporary = self.offset_path + ".tmp"
        with open(temporary, "wb") as file:
            file.write(b"%d\n" % value)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.offset_path)

    def events_left(self) -> int:
        """How many events are not accepted yet (counted from the file)."""
        if not self.unsent or not os.path.exists(self.path):
            return 0
        with open(self.path, "rb") as file:
            file.seek(self.sent)
            return sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(1 << 20), b""))


# -- sending ----------------------------------------------------------------------


@dataclass
class Channel:
    """One ``ADAPTIVE_NOTIFY`` entry at work: its spool and its sending state."""

    spec: NotifyChannel
    #: the Apprise URL as the log shows it, credentials masked
    name: str
    spool: Spool
    #: when the oldest unsent event was first seen (monotonic; None: none waits)
    waiting_since: float | None = None
    #: a message is on its way
    busy: bool = False
    #: no new try before this (monotonic): a refusal's back-off
    retry_at: float = 0.0
    #: refusals in a row
    refusals: int = 0
    #: its spool was full this run, and that was said
    full: bool = False


class Notifier:
    """The channels of ``ADAPTIVE_NOTIFY``: one more durable sink of the
    drain (:meth:`write`), and the sender of what the spools hold (:meth:`run`)."""

    def __init__(
        self,
        channels: list[Channel],
        stats: StatsCollector,
        *,
        send: Sender,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.channels = channels
        self.stats = stats
        self.send = send
        self.clock = clock

    @classmethod
    def open(cls, specs: tuple[NotifyChannel, ...], state_path: str, stats: StatsCollector) -> Notifier:
        """The channels of *specs*, their spools in *state_path*, sending with Apprise in threads."""
        names = checked_channels(specs)
        folder = os.path.join(state_path, SPOOL_FOLDER)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        channels = [Channel(spec, name, Spool(folder, spool_name(spec.to))) for spec, name in zip(specs, names)]
        known = {os.path.basename(channel.spool.path) for channel in channels}
        for left in sorted(n for n in os.listdir(folder) if n.endswith(".jsonl") and n not in known):
            if os.path.getsize(os.path.join(folder, left)):
                logger.warning(
                    "The notification spool %s belongs to a channel no longer in %s; its events are not sent "
                    "(delete the file once you no longer need them).",
                    os.path.join(folder, left),
                    NOTIFY,
                )
        for channel in channels:
            if channel.spool.unsent:
                logger.info(
                    "%s for %s wait from the last run; they are sent now.",
                    counted(channel.spool.events_left(), "change event"),
                    channel.name,
                )
        return cls(channels, stats, send=threaded_apprise)

    # -- the drain's sink --------------------------------------------------------

    def write(self, events: list[dict[str, Any]]) -> None:
        """Queue each channel the events it wants, durably (raises a
        :class:`~.sink_failure.SinkError` when a spool cannot be written)."""
        for channel in self.channels:
            wanted = [event for event in events if channel.spec.wants(event)]
            if not wanted:
                continue
            if channel.spool.size >= MAX_SPOOL_BYTES:
                self.stats.inc_value("adaptive/notify/dropped", len(wanted))
                if not channel.full:
                    channel.full = True
                    logger.warning(
                        "The notifications waiting for %s fill their spool (%s); newer change events are not "
                        "queued for it (the changes feed and the history still have them).",
                        channel.name,
                        channel.spool.path,
                    )
                continue
            channel.spool.append(wanted)
            self.stats.inc_value("adaptive/notify/queued", len(wanted))

    def close(self) -> None:
        """Nothing is held open: each append opens its spool."""

    # -- the sender ----------------------------------------------------------------

    def run(self, *, now_all: bool = False) -> None:
        """Send each channel's message that is due (*now_all*: without
        waiting out the batch window, as at the close)."""
        now = self.clock()
        for channel in self.channels:
            self._maybe_send(channel, now, now_all)

    def _maybe_send(self, channel: Channel, now: float, now_all: bool) -> None:
        if channel.busy:
            return
        if not channel.spool.unsent:
            channel.waiting_since = None
            return
        if channel.waiting_since is None:
            channel.waiting_since = now
        if now < channel.retry_at or (not now_all and now - channel.waiting_since < channel.spec.batch):
            return
        rows = channel.spool.read()
        if not rows:  # its file is gone (a temporary state folder at the close)
            return
        events = [event for _, event in rows if event is not None]
        if not events:  # garbled lines only: nothing to say
            self.stats.inc_value("adaptive/notify/garbled", len(rows))
            channel.spool.accept(rows[-1][0] if rows else channel.spool.size)
            return
        message = compose(events, channel.spec.fields)
        # the offset past the last event said (garbled lines before it go with it)
        said = 0
        end = channel.spool.sent
        for offset, event in rows:
            if event is not None:
                if said == message.events:
                    break
                said += 1
            end = offset
        channel.busy = True
        try:
            answer = self.send(channel.spec.to, message.title, message.body)
        except Exception as exc:  # a sender that raises at once: a refusal like any other
            self._answered(channel, end, message.events, (False, f"{type(exc).__name__}: {exc}"))
            return
        answer.addCallbacks(
            lambda result: self._answered(channel, end, message.events, result),
            lambda failure: self._answered(channel, end, message.events, (False, failure.getErrorMessage())),
        )

    def _answered(self, channel: Channel, end: int, events: int, answer: Answer) -> None:
        channel.busy = False
        accepted, reason = answer
        now = self.clock()
        if not accepted:
            channel.refusals += 1
            delay = min(RETRY_MAX, RETRY_FIRST * 2 ** (channel.refusals - 1))
            channel.retry_at = now + delay
            self.stats.inc_value("adaptive/notify/refused")
            if channel.refusals == 1 or delay == RETRY_MAX:
                logger.warning(
                    "The notification channel %s refused a message of %s (%s); they stay in the state folder and "
                    "are sent again in %s.",
                    channel.name,
                    counted(events, "change event"),
                    reason or "no reason given",
                    duration_text(delay),
                )
            return
        try:
            channel.spool.accept(end)
        except OSError as exc:  # said; the events are sent again, at least once
            logger.error(
                "Cannot record that %s accepted its notifications (%s): they are sent again.", channel.name, exc
            )
        if channel.refusals:
            logger.info("The notification channel %s accepts messages again.", channel.name)
        channel.refusals = 0
        channel.retry_at = 0.0
        self.stats.inc_value("adaptive/notify/messages")
        self.stats.inc_value("adaptive/notify/sent", events)
        if not channel.spool.unsent:
            channel.waiting_since = None

    def finish(self, reactor: Any, wait: float = CLOSE_WAIT) -> Deferred[None]:
        """Send what the working channels have left, without waiting out
        the batch windows, for at most *wait* seconds; fires once done (the
        rest waits in the spools for the next start)."""
        done: Deferred[None] = Deferred()
        deadline = self.clock() + wait

        def look() -> None:
            self.run(now_all=True)
            now = self.clock()
            sending = any(c.busy or (c.spool.unsent and now >= c.retry_at) for c in self.channels)
            if sending and now < deadline:
                reactor.callLater(CLOSE_POLL, look)
                return
            self._left()
            done.callback(None)

        look()
        return done

    def _left(self) -> None:
        left = sum(channel.spool.events_left() for channel in self.channels)
        if left:
            self.stats.set_value("adaptive/notify/waiting", left)
            logger.info(
                "%s not notified yet wait in the state folder; they are sent at the next start.",
                counted(left, "change event"),
            )


def spool_name(to: str) -> str:
    """A channel's spool name: a digest of its Apprise URL (which holds its credentials)."""
    import hashlib

    return hashlib.sha256(to.encode("utf-8")).hexdigest()[:16]


# -- Apprise --------------------------------------------------------------------------


def _apprise() -> Any:
    try:
        import apprise
    except ImportError:
        raise ConfigError(MISSING) from None
    return apprise


def checked_channels(specs: tuple[NotifyChannel, ...]) -> list[str]:
    """Each channel's name as the log shows it (Apprise's masked form), or a
    :class:`ConfigError` naming the entry Apprise cannot send to (or
    Apprise missing)."""
    names = []
    with _apprise_quiet():
        apprise = _apprise()
        for spec in specs:
            plugin = apprise.Apprise.instantiate(spec.to)
            if plugin is None:
                raise ConfigError(
                    f"{spec.where} ({masked(spec.to)}) is not an Apprise URL Apprise can send to (see its list of "
                    "services: https://github.com/caronc/apprise/wiki)."
                )
            names.append(plugin.url(privacy=True).split("?")[0])
    return names


_quiet_lock = threading.Lock()
_quiet_count = 0
#: the loggers a send writes to: Apprise's, and urllib3's (its debug lines name the URL)
_QUIET_LOGGERS = ("apprise", "urllib3.connectionpool")


@contextmanager
def _apprise_quiet() -> Iterator[None]:
    """Apprise's own log lines (and urllib3's under it) stay out of the
    crawl's log while this package sends: Apprise's warning is said in the
    channel's one line, and the debug lines may show a service's URL with
    its token.  They do not propagate (Apprise's handlers, which give the
    reason of a refusal, still get them)."""
    global _quiet_count
    with _quiet_lock:
        if _quiet_count == 0:
            for name in _QUIET_LOGGERS:
                logging.getLogger(name).propagate = False
        _quiet_count += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_count -= 1
            if _quiet_count == 0:
                for name in _QUIET_LOGGERS:
                    logging.getLogger(name).propagate = True


def apprise_send(to: str, title: str, body: str) -> Answer:
    """Send one message with Apprise (blocking: run it in a thread)."""
    with _apprise_quiet():
        apprise = _apprise()
        sender = apprise.Apprise()
        if not sender.add(to):
            return False, "Apprise cannot use this URL"
        result = sender.notify(body=body, title=title, body_format=apprise.NotifyFormat.TEXT, timeout=SEND_TIMEOUT)
    if result:
        return True, ""
    reasons = [entry.message for entry in result.logs() if entry.level in ("WARNING", "ERROR", "CRITICAL")]
    return False, reasons[-1] if reasons else f"Apprise says {getattr(result.status, 'name', result.status)}"


def threaded_apprise(to: str, title: str, body: str) -> Deferred[Answer]:
    """:func:`apprise_send` in a daemon thread of its own: the reactor goes
    on, and a service that never answers holds neither the reactor's
    thread pool (Scrapy resolves names in it) nor the process's exit."""
    from twisted.internet import reactor

    answer: Deferred[Answer] = Deferred()

    def work() -> None:
        try:
            result = apprise_send(to, title, body)
        except Exception as exc:
            result = (False, f"{type(exc).__name__}: {exc}")
        reactor.callFromThread(answer.callback, result)  # type: ignore[attr-defined]

    threading.Thread(target=work, name="scrapy-adaptive notify", daemon=True).start()
    return answer
