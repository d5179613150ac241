"""Notifications: what a message says, the channels' spools (real files),
batching, refusals and their back-off, with a sender that answers as told
(the real one, Apprise to a real webhook, is tests/e2e/test_notify.py)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred, fail, succeed

from scrapy_adaptive.change.events import FIELDS
from scrapy_adaptive.config.notify import notify_channels
from scrapy_adaptive.runtime import notify as notify_module
from scrapy_adaptive.runtime.notify import (
    MAX_BODY_CHARS,
    MAX_MESSAGE_EVENTS,
    RETRY_FIRST,
    Answer,
    Channel,
    Notifier,
    Spool,
    checked_channels,
    compose,
    event_line,
    spool_name,
)
from scrapy_adaptive.runtime.sink_failure import SinkError
from tests.unit.runtime.test_changes import drain, frontier, put

HOOK = "json://127.0.0.1:9/hook"
URL = "http://shop.example/p/42"


def changed(price: tuple[str, str] = ("9.50", "8.00"), url: str = URL) -> dict[str, Any]:
    diff = {"changed": [{"item": "SKU-42", "fields": ["name", "price"], "values": {"price": list(price)}}],
            "added": [], "removed": []}  # fmt: skip
    return {"kind": "changed", "url": url, "time": 1.0, "version": 2, "fields": diff}


def test_a_line_says_what_happened_then_the_url() -> None:
    assert event_line(changed()) == f"changed: name, price 9.50 → 8.00 — {URL}"
    assert event_line(changed(), ("price",)) == f"changed: price 9.50 → 8.00 — {URL}"
    two = changed()
    two["fields"]["changed"].append({"item": "SKU-7", "fields": ["stock"]})
    two["fields"]["added"] = ["SKU-9"]
    assert event_line(two) == f"changed: item SKU-42: name, price 9.50 → 8.00; item SKU-7: stock; +1 item — {URL}"
    assert event_line({"kind": "changed", "url": URL, "fields": None}) == f"changed — {URL}"
    text = "@@ -1 +1 @@\n-Price 10 EUR\n+Price 11 EUR"
    assert event_line({"kind": "changed", "url": URL, "text_diff": text}) == (
        f"changed: -Price 10 EUR / +Price 11 EUR — {URL}"
    )
    assert event_line({"kind": "gone", "url": URL, "status": 404}) == f"gone (404) — {URL}"
    assert event_line({"kind": "moved", "url": URL, "location": URL + "b"}) == f"moved to {URL}b — {URL}"
    assert event_line({"kind": "new", "url": URL}) == f"new — {URL}"
    assert len(event_line({"kind": "new", "url": URL + "x" * 1000})) == notify_module.MAX_LINE_CHARS


def test_a_message_is_bounded_in_events_and_characters() -> None:
    many = [{"kind": "new", "url": f"http://shop.example/p/{i}"} for i in range(MAX_MESSAGE_EVENTS + 10)]
    message = compose(many)
    assert message.events == MAX_MESSAGE_EVENTS and len(message.body.splitlines()) == MAX_MESSAGE_EVENTS
    assert message.title == f"{MAX_MESSAGE_EVENTS} changes on shop.example: {MAX_MESSAGE_EVENTS} new"
    long = [{"kind": "new", "url": f"http://{i}.example/" + "x" * 300} for i in range(40)]
    message = compose(long)
    assert len(message.body) <= MAX_BODY_CHARS and 0 < message.events < 40
    assert message.title.startswith(f"{message.events} changes on {message.events} sites: ")
    assert compose([changed()]).title == "1 change on shop.example: 1 changed"


def test_a_spool_keeps_what_was_not_accepted_across_a_reopen(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path), "c")
    spool.append([{"kind": "new", "url": f"http://a/{i}"} for i in range(3)])
    rows = spool.read()
    assert [event["url"] for _, event in rows] == ["http://a/0", "http://a/1", "http://a/2"]  # type: ignore[index]
    spool.accept(rows[0][0])
    again = Spool(str(tmp_path), "c")  # a kill, a restart
    assert [event["url"] for _, event in again.read()] == ["http://a/1", "http://a/2"]  # type: ignore[index]
    again.accept(again.read()[-1][0])
    assert again.size == again.sent == 0 and os.path.getsize(again.path) == 0  # emptied once all is accepted
    assert Spool(str(tmp_path), "c").unsent == 0


def test_a_spool_whose_file_is_gone_has_nothing_to_send(tmp_path: Path) -> None:
    """A temporary state folder is removed at the close, its queues with it."""
    spool = Spool(str(tmp_path), "c")
    spool.append([{"kind": "new", "url": "http://a/0"}])
    os.remove(spool.path)
    assert spool.read() == [] and spool.events_left() == 0


def test_a_spool_cut_by_a_kill_or_changed_by_hand_loses_nothing(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path), "c")
    spool.append([{"kind": "new", "url": "http://a/0"}])
    with open(spool.path, "ab") as file:
        file.write(b'{"kind":"ne')  # a kill mid-append: the event is still in the outbox
    Path(spool.offset_path).write_text("999\n")  # past the end: sent again, all of it
    again = Spool(str(tmp_path), "c")
    assert again.sent == 0 and [event for _, event in again.read()] == [{**dict.fromkeys(EVENT), "kind": "new",
                                                                         "url": "http://a/0"}]  # fmt: skip


EVENT = FIELDS


class Sender:
    """Answers each message as its script says (the last one repeated); keeps them."""

    def __init__(self, *answers: Answer | Deferred[Answer]) -> None:
        self.answers = list(answers) or [(True, "")]
        self.sent: list[tuple[str, str, str]] = []

    def __call__(self, to: str, title: str, body: str) -> Deferred[Answer]:
        self.sent.append((to, title, body))
        answer = self.answers[min(len(self.sent), len(self.answers)) - 1]
        return answer if isinstance(answer, Deferred) else succeed(answer)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def notifier(tmp_path: Path, setting: Any, sender: Sender, clock: Clock) -> Notifier:
    specs = notify_channels(setting)
    tmp_path.mkdir(exist_ok=True)
    channels = [Channel(spec, spec.to, Spool(str(tmp_path), spool_name(spec.to))) for spec in specs]
    return Notifier(channels, MemoryStatsCollector(get_crawler()), send=sender, clock=clock)


def test_events_within_the_batch_window_go_in_one_message(tmp_path: Path) -> None:
    sender, clock = Sender(), Clock()
    n = notifier(tmp_path, [{"to": HOOK, "batch": 10}], sender, clock)
    n.write([{"kind": "new", "url": URL}])
    n.run()
    clock.t += 5
    n.write([changed()])
    n.run()
    assert sender.sent == []
    clock.t += 5
    n.run()
    assert len(sender.sent) == 1 and sender.sent[0][2] == f"new — {URL}\nchanged: name, price 9.50 → 8.00 — {URL}"
    assert n.stats.get_value("adaptive/notify/sent") == 2 and n.stats.get_value("adaptive/notify/messages") == 1
    assert n.channels[0].spool.unsent == 0


def test_each_channel_gets_the_events_it_wants(tmp_path: Path) -> None:
    sender, clock = Sender(), Clock()
    n = notifier(tmp_path, [{"to": HOOK, "batch": 0, "kinds": ["gone"]},
                            {"to": "json://127.0.0.1:9/prices", "batch": 0, "fields": ["price"]}], sender, clock)  # fmt: skip
    n.write([{"kind": "gone", "url": URL, "status": 410}, changed(), {"kind": "changed", "url": URL, "fields": None}])
    n.run()
    assert sorted((to, body) for to, _, body in sender.sent) == [
        (HOOK, f"gone (410) — {URL}"),
        ("json://127.0.0.1:9/prices", f"gone (410) — {URL}\nchanged: price 9.50 → 8.00 — {URL}"),
    ]


def test_a_refusal_is_said_once_and_retried_later_with_back_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sender, clock = Sender((False, "error=500"), (False, "error=500"), (True, "")), Clock()
    n = notifier(tmp_path, [{"to": HOOK, "batch": 0}], sender, clock)
    n.write([changed()])
    with caplog.at_level(logging.INFO):
        n.run()
        n.run()  # backing off
        assert len(sender.sent) == 1
        clock.t += RETRY_FIRST
        n.run()
        assert len(sender.sent) == 2
        clock.t += RETRY_FIRST  # the second back-off is twice as long
        n.run()
        assert len(sender.sent) == 2
        clock.t += RETRY_FIRST
        n.run()
    assert len(sender.sent) == 3 and sender.sent[0] == sender.sent[2]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"The notification channel {HOOK} refused a message of 1 change event (error=500); they stay in the state "
        "folder and are sent again in 2 seconds."
    ]
    assert f"The notification channel {HOOK} accepts messages again." in caplog.messages
    assert n.stats.get_value("adaptive/notify/refused") == 2 and n.channels[0].spool.unsent == 0


def test_a_sender_that_fails_or_raises_is_a_refusal(tmp_path: Path) -> None:
    clock = Clock()
    for answer in (fail(RuntimeError("connection refused")), None):
        sender = Sender(answer) if answer is not None else Sender()
        n = notifier(tmp_path / str(answer is None), [{"to": HOOK, "batch": 0}], sender, clock)
        if answer is None:
            n.send = lambda *a: (_ for _ in ()).throw(OSError("no thread"))  # type: ignore[assignment]
        n.write([changed()])
        n.run()
        assert n.channels[0].refusals == 1 and n.channels[0].spool.unsent > 0


def test_a_message_on_its_way_is_not_sent_twice(tmp_path: Path) -> None:
    pending: Deferred[Answer] = Deferred()
    sender, clock = Sender(pending), Clock()
    n = notifier(tmp_path, [{"to": HOOK, "batch": 0}], sender, clock)
    n.write([changed()])
    n.run()
    n.write([{"kind": "new", "url": URL}])
    clock.t += 100
    n.run()
    assert len(sender.sent) == 1
    pending.callback((True, ""))
    sender.answers.append((True, ""))
    n.run()
    assert [body for _, _, body in sender.sent][1] == f"new — {URL}"


def test_a_full_spool_takes_no_more_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(notify_module, "MAX_SPOOL_BYTES", 100)
    n = notifier(tmp_path, [{"to": HOOK}], Sender(), Clock())
    for _ in range(3):
        n.write([changed()])
    assert n.stats.get_value("adaptive/notify/dropped") == 2
    assert len([r for r in caplog.records if "fill their spool" in r.getMessage()]) == 1


def test_the_close_sends_what_is_left_without_waiting_out_the_window(tmp_path: Path) -> None:
    from twisted.internet.task import Clock as Reactor

    sender, clock = Sender(), Clock()
    n = notifier(tmp_path, [{"to": HOOK, "batch": 3600}], sender, clock)
    n.write([changed()])
    done = n.finish(Reactor())
    assert done.called and len(sender.sent) == 1
    # a channel that is down: the close waits no longer than it must, the events stay
    down = notifier(tmp_path / "down", [{"to": HOOK, "batch": 0}], Sender((False, "down")), clock)
    down.write([changed()])
    assert down.finish(Reactor()).called and down.stats.get_value("adaptive/notify/waiting") == 1


def test_the_drain_writes_the_spools_before_the_outbox_lets_go(tmp_path: Path) -> None:
    f, _ = frontier()
    put(f, 2)
    sender, clock = Sender(), Clock()
    task, errors = drain(f, None)
    task.notify = notifier(tmp_path, [{"to": HOOK, "batch": 0}], sender, clock)
    task.sinks = [task.notify]
    task.run()
    assert f.outbox.events() == [] and errors == [] and len(sender.sent) == 1
    assert sender.sent[0][1] == "2 changes on shop.example: 2 changed"


def test_a_spool_that_cannot_be_written_stops_the_crawl_and_the_events_wait(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    f, _ = frontier()
    put(f, 2)
    n = notifier(tmp_path, [{"to": HOOK, "batch": 0}], Sender(), Clock())
    os.symlink("/dev/full", n.channels[0].spool.path)
    task, errors = drain(f, None)
    task.notify, task.sinks = n, [n]
    task.run()
    assert len(errors) == 1 and isinstance(errors[0], SinkError) and "notification spool" in str(errors[0])
    assert len(f.outbox.events()) == 2


def test_an_url_apprise_cannot_send_to_is_refused_with_its_entry() -> None:
    pytest.importorskip("apprise")
    assert checked_channels(notify_channels("json://user:secret@127.0.0.1:9/hook")) == [
        "json://user:****@127.0.0.1:9/hook"
    ]
    with pytest.raises(Exception) as raised:
        checked_channels(notify_channels([HOOK, "nosuchservice://token@host"]))
    assert str(raised.value).startswith("ADAPTIVE_NOTIFY[1] (nosuchservice://host/…) is not an Apprise URL")


def test_without_apprise_one_line_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "apprise", None)
    with pytest.raises(Exception) as raised:
        checked_channels(notify_channels(HOOK))
    assert (
        str(raised.value) == "ADAPTIVE_NOTIFY is set but apprise is not installed: pip install scrapy-adaptive[notify]"
    )


def test_the_event_lines_read_the_feeds_json(tmp_path: Path) -> None:
    """The spool holds the feed's lines: what a consumer of the feed reads."""
    spool = Spool(str(tmp_path), "c")
    spool.append([changed()])
    assert json.loads(Path(spool.path).read_text())["fields"]["changed"][0]["values"] == {"price": ["9.50", "8.00"]}
