"""Run a real ``scrapy runspider`` crawl in a subprocess and inspect the outcome.

Why a subprocess: the code under test is a scheduler/frontier that lives for
the whole life of a Scrapy process, installs a reactor, and must survive
SIGINT/SIGTERM/SIGKILL. Only a separate process (in its own session, so the
whole group can be signalled or killed) exercises that faithfully and keeps the
pytest process free of reactors and global state.

Every crawl gets a private *work directory* holding::

    crawl.log     the Scrapy log (``-s LOG_FILE=...``; tail it with wait_for_log)
    stdout.txt    the process' stdout
    stderr.txt    the process' stderr (tracebacks from before logging started)
    stats.json    the final stats (see below)
    items.jsonl   the scraped items, only with ``collect_items=True``

The work directory is also the default ``cwd`` (so relative paths in settings
never land in the repository); the repository root is put on ``PYTHONPATH`` so
``tests.*`` and ``scrapy_adaptive`` import from any ``cwd``.

How final stats are obtained (robustly): the runner enables the tiny
:class:`JsonStatsDump` extension, which writes ``crawler.stats`` to
``stats.json`` on ``engine_stopped`` (after the scheduler has closed and
``spider_closed`` handlers ran, i.e. the same final values Scrapy dumps). It is
enabled through ``EXTENSIONS_BASE`` (Scrapy's defaults plus one entry) rather
than ``EXTENSIONS``, because a command-line ``-s EXTENSIONS=...`` would *replace*
any ``EXTENSIONS`` from the project, an add-on or ``custom_settings``. If the
JSON file is missing (crash, SIGKILL, ``dump_stats=False``) the stats are parsed
from the last "Dumping Scrapy stats:" block of the log instead, with a safe
AST walk (no eval) that turns ``datetime.datetime(...)`` into ISO strings.
Either way datetimes are ISO-8601 strings; ``CrawlResult.stats_source`` tells
which path was used ("json", "log" or None).
"""

from __future__ import annotations

import ast
import atexit
import ctypes
import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO_ROOT = Path(__file__).resolve().parents[1]
SPIDERS_DIR = Path(__file__).resolve().parent / "spiders"

#: Setting read by JsonStatsDump: where to write the final stats.
STATS_FILE_SETTING = "CRAWLRUNNER_STATS_FILE"
STATS_EXTENSION = "tests.crawlrunner.JsonStatsDump"

#: Defaults for every crawl (the caller's settings override them).
DEFAULT_SETTINGS: dict[str, object] = {
    # The telnet console would grab ports 6023-6073 and collide between
    # concurrent crawls; nothing in the tests needs it.
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "DEBUG",
    "LOG_FILE_APPEND": False,
}

#: Environment variables removed from the crawl's environment unless the
#: caller's ``env`` sets them: proxies would route loopback traffic away, and a
#: stray project module would change the settings under test.
_SCRUBBED_ENV = (
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "SCRAPY_SETTINGS_MODULE",
    "SCRAPY_PROJECT",
    "SCRAPY_PYTHON_SHELL",
)

_LOG_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
_STATS_MARKER = "Dumping Scrapy stats:"

_default_workdir_root: Path | None = None
#: Crawls started by this process and not yet seen dead (strong refs: a test
#: that drops its handle must not make a running crawl unreachable).
_live: set[CrawlProcess] = set()


class CrawlTimeoutError(AssertionError):
    """A crawl (or a wait on its log) exceeded its hard time limit."""


# --------------------------------------------------------------------------
# The extension that runs *inside* the crawl process
# --------------------------------------------------------------------------


def _json_default(obj: object) -> object:
    if isinstance(obj, dt.datetime | dt.date | dt.time):
        return obj.isoformat()
    if isinstance(obj, dt.timedelta):
        return obj.total_seconds()
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=repr)
    return repr(obj)


class JsonStatsDump:
    """Scrapy extension: write the final stats as JSON to ``CRAWLRUNNER_STATS_FILE``.

    Connected to ``engine_stopped``, the last signal of a crawl, so it sees
    the same values as Scrapy's own "Dumping Scrapy stats" log line. The file
    is written atomically (temp file + rename) so a reader never sees half.
    """

    def __init__(self, crawler: Any, path: str) -> None:
        self.crawler = crawler
        self.path = Path(path)

    @classmethod
    def from_crawler(cls, crawler: Any) -> JsonStatsDump:
        from scrapy import signals
        from scrapy.exceptions import NotConfigured

        path = crawler.settings.get(STATS_FILE_SETTING)
        if not path:
            raise NotConfigured(f"{STATS_FILE_SETTING} not set")
        ext = cls(crawler, path)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def engine_stopped(self) -> None:
        stats = dict(self.crawler.stats.get_stats())
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(stats, default=_json_default, sort_keys=True, indent=1))
        os.replace(tmp, self.path)


# --------------------------------------------------------------------------
# Parsing stats from a log
# --------------------------------------------------------------------------


def _literal(node: ast.AST) -> Any:
    """Evaluate a pprint'ed stats value without eval().

    Literals map to themselves; ``datetime.datetime(...)`` becomes an ISO
    string; any other call/name (an unexpected repr) becomes its source text.
    """
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True) if k}
    if isinstance(node, ast.List):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.Set):
        return {_literal(e) for e in node.elts}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if isinstance(value, int | float):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and ast.unparse(node.func) in (
        "datetime.datetime",
        "datetime",
    ):
        try:
            args = [_literal(a) for a in node.args]
            tz = None
            for kw in node.keywords:
                if kw.arg == "tzinfo" and ast.unparse(kw.value) == "datetime.timezone.utc":
                    tz = dt.UTC
            return dt.datetime(*args).replace(tzinfo=tz).isoformat()
        except (TypeError, ValueError):
            pass
    return ast.unparse(node)


def parse_stats_from_log(text: str) -> dict[str, Any] | None:
    """Parse the last "Dumping Scrapy stats:" block of a Scrapy log (None if absent)."""
    idx = text.rfind(_STATS_MARKER)
    if idx < 0:
        return None
    lines = text[idx + len(_STATS_MARKER) :].splitlines()[1:]
    block: list[str] = []
    for line in lines:
        if block and _LOG_TIMESTAMP.match(line):
            break
        block.append(line)
    try:
        tree = ast.parse("\n".join(block).strip(), mode="eval")
    except SyntaxError:
        return None
    value = _literal(tree.body)
    return value if isinstance(value, dict) else None


# --------------------------------------------------------------------------
# Running crawls
# --------------------------------------------------------------------------


def set_default_workdir_root(path: Path | None) -> None:
    """Where crawl work directories go by default (conftest points it at pytest's tmp)."""
    global _default_workdir_root
    _default_workdir_root = path


def encode_setting(value: object) -> str:
    """Encode a setting for ``-s KEY=VALUE``: JSON for dicts/lists, ``str()`` otherwise.

    Scrapy's ``getdict``/``getlist`` accept JSON strings and ``getbool``
    accepts "True"/"False". None has no command-line form, so it is refused.
    """
    if value is None:
        raise TypeError("a setting cannot be None on the command line; omit it instead")
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, list | tuple):
        return json.dumps(list(value))
    return str(value)


class CrawlProcess(subprocess.Popen[bytes]):
    """A running crawl: a ``Popen`` plus the paths of its work directory.

    The process leads its own session/process group (``start_new_session``),
    so :meth:`signal_group`/:meth:`kill_group` reach it and anything it spawned.
    Use it as a context manager (or rely on the conftest reaper) so a failing
    test never leaves a crawl running.
    """

    workdir: Path
    log_file: Path
    stdout_file: Path
    stderr_file: Path
    stats_file: Path | None
    items_file: Path | None
    started: float

    def signal_group(self, sig: int = signal.SIGINT) -> None:
        """Send ``sig`` to the crawl's process group (no-op once it has exited)."""
        if self.poll() is None:
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill_group(self, timeout: float = 10.0) -> None:
        """SIGKILL the whole process group and reap the process (bounded)."""
        self.signal_group(signal.SIGKILL)
        try:
            self.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - kernel trouble
            pass

    def log_text(self) -> str:
        """The log written so far (empty if not yet created)."""
        return _read(self.log_file)

    def __exit__(self, *exc: object) -> None:
        if self.poll() is None:
            self.kill_group()
        super().__exit__(*exc)  # type: ignore[arg-type]


@dataclass
class CrawlResult:
    """Outcome of a finished crawl."""

    returncode: int
    log: str  #: the Scrapy log file's text
    stdout: str
    stderr: str
    stats: dict[str, Any]  #: final stats ({} if none could be found)
    stats_source: Literal["json", "log"] | None
    duration: float  #: wall-clock seconds from start to exit
    workdir: Path
    log_file: Path
    items: list[dict[str, Any]] = field(default_factory=list)  #: with collect_items=True

    @property
    def text(self) -> str:
        """Log, stderr and stdout together, for searching."""
        return f"{self.log}\n{self.stderr}\n{self.stdout}"

    def error_lines(self) -> list[str]:
        """Lines logged at ERROR/CRITICAL level, plus traceback headers."""
        pattern = re.compile(r"\] (ERROR|CRITICAL):|^Traceback \(most recent call last\)")
        return [ln for ln in self.text.splitlines() if pattern.search(ln)]

    def assert_ok(self, *, allow_errors: bool = False) -> None:
        """Fail (with the log tail) unless the crawl exited 0 and logged no errors."""
        problems = []
        if self.returncode != 0:
            problems.append(f"exit code {self.returncode}")
        if not allow_errors and self.error_lines():
            problems.append("errors logged:\n  " + "\n  ".join(self.error_lines()[:20]))
        if problems:
            raise AssertionError("crawl not OK: " + "; ".join(problems) + "\n--- log tail ---\n" + _tail(self.text))


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSON-lines file (e.g. items) into a list; missing file -> []."""
    return [json.loads(line) for line in _read(path).splitlines() if line.strip()]


def start_crawl(
    spider_file: Path | str,
    settings: Mapping[str, object] | None = None,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    workdir: Path | None = None,
    dump_stats: bool = True,
    collect_items: bool = False,
    as_user: bool = False,
) -> CrawlProcess:
    """Start ``python -m scrapy runspider <spider_file> -s K=V ... <args>``; don't wait.

    ``settings`` override :data:`DEFAULT_SETTINGS`; a ``LOG_FILE`` given there is
    honoured, otherwise the log goes to ``<workdir>/crawl.log``. ``args`` are
    extra CLI arguments, e.g. ``["-a", "start_urls=http://..."]``. ``env`` is
    merged over ``os.environ`` (minus proxies/Scrapy project variables). ``cwd``
    defaults to the work directory. ``collect_items`` adds ``-O items.jsonl``
    (note: that replaces any ``FEEDS`` setting).  ``as_user`` runs it without
    root's override of file permissions (:func:`without_file_override`).
    """
    spider_path = Path(spider_file).resolve()
    if not spider_path.is_file():
        raise FileNotFoundError(spider_path)
    if workdir is None:
        root = _default_workdir_root
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f"crawl-{spider_path.stem}-", dir=root))
    workdir.mkdir(parents=True, exist_ok=True)

    merged: dict[str, object] = {**DEFAULT_SETTINGS, **(settings or {})}
    log_file = Path(str(merged.get("LOG_FILE") or workdir / "crawl.log"))
    merged["LOG_FILE"] = log_file
    stats_file: Path | None = None
    if dump_stats:
        stats_file = workdir / "stats.json"
        merged[STATS_FILE_SETTING] = stats_file
        merged["EXTENSIONS_BASE"] = _with_stats_extension(merged.get("EXTENSIONS_BASE"))

    cmd = [sys.executable, "-m", "scrapy", "runspider", str(spider_path)]
    for key, value in merged.items():
        cmd += ["-s", f"{key}={encode_setting(value)}"]
    items_file: Path | None = None
    if collect_items:
        items_file = workdir / "items.jsonl"
        cmd += ["-O", str(items_file)]
    cmd += list(args)

    full_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT)] + ([full_env["PYTHONPATH"]] if full_env.get("PYTHONPATH") else [])
    )
    full_env.setdefault("PYTHONUNBUFFERED", "1")

    stdout_file, stderr_file = workdir / "stdout.txt", workdir / "stderr.txt"
    with stdout_file.open("wb") as out, stderr_file.open("wb") as err:
        proc = CrawlProcess(
            cmd,
            cwd=cwd or workdir,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=without_file_override if as_user else None,
        )
    proc.workdir = workdir
    proc.log_file = log_file
    proc.stdout_file = stdout_file
    proc.stderr_file = stderr_file
    proc.stats_file = stats_file
    proc.items_file = items_file
    proc.started = time.monotonic()
    _live.add(proc)
    return proc


#: prctl(2): drop a capability from the bounding set (gone from the process after its exec)
_PR_CAPBSET_DROP = 24
#: capabilities(7): CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
_FILE_OVERRIDES = (1, 2)


def without_file_override() -> None:
    """A ``preexec_fn``: the child runs without root's power to read, write and
    search any file, so permissions bind it as they bind a user (``chmod 000``
    gives ``EACCES``); tests run as root here, and a user's uid could not run
    the venv's Python, which lives under ``/root``.  A process without the
    capabilities (not root) has nothing to drop and is left as it is."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in _FILE_OVERRIDES:
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)


def _with_stats_extension(base: object) -> dict[str, object]:
    if base is None:
        from scrapy.settings import default_settings

        base = default_settings.EXTENSIONS_BASE
    elif isinstance(base, str):
        base = json.loads(base)
    if not isinstance(base, Mapping):
        raise TypeError(f"EXTENSIONS_BASE must be a dict, got {type(base).__name__}")
    return {**base, STATS_EXTENSION: 1000}


def finish_crawl(proc: CrawlProcess, timeout: float) -> CrawlResult:
    """Wait (at most ``timeout`` s) for a started crawl to exit and collect its result.

    On timeout the process group is killed and :class:`CrawlTimeoutError` is
    raised with the log tail, so a hung crawl fails clearly instead of hanging.
    """
    try:
        returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill_group()
        text = "\n".join((_read(proc.log_file), _read(proc.stderr_file)))
        raise CrawlTimeoutError(
            f"crawl did not finish within {timeout}s (killed); workdir {proc.workdir}\n--- log tail ---\n{_tail(text)}"
        ) from None
    duration = time.monotonic() - proc.started
    log = _read(proc.log_file)
    stats: dict[str, Any] | None = None
    source: Literal["json", "log"] | None = None
    if proc.stats_file is not None and proc.stats_file.exists():
        stats, source = json.loads(proc.stats_file.read_text()), "json"
    if stats is None:
        stats = parse_stats_from_log(log)
        source = "log" if stats is not None else None
    return CrawlResult(
        returncode=returncode,
        log=log,
        stdout=_read(proc.stdout_file),
        stderr=_read(proc.stderr_file),
        stats=stats or {},
        stats_source=source,
        duration=duration,
        workdir=proc.workdir,
        log_file=proc.log_file,
        items=read_jsonl(proc.items_file) if proc.items_file else [],
    )


def run_crawl(
    spider_file: Path | str,
    settings: Mapping[str, object] | None = None,
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    workdir: Path | None = None,
    dump_stats: bool = True,
    collect_items: bool = False,
    as_user: bool = False,
) -> CrawlResult:
    """Run a crawl to completion (hard ``timeout``) and return its :class:`CrawlResult`.

    See :func:`start_crawl` for the arguments. Does not check the exit code:
    call ``result.assert_ok()`` for that.
    """
    proc = start_crawl(
        spider_file,
        settings,
        cwd=cwd,
        env=env,
        args=args,
        workdir=workdir,
        dump_stats=dump_stats,
        collect_items=collect_items,
        as_user=as_user,
    )
    with proc:
        return finish_crawl(proc, timeout)


def wait_for_log(
    proc_or_logfile: CrawlProcess | Path | str,
    pattern: str | re.Pattern[str],
    timeout: float,
    *,
    pos: int = 0,
    poll_interval: float = 0.05,
) -> re.Match[str]:
    """Poll a crawl's log until ``pattern`` (a regex) matches at or after ``pos``.

    A ``str`` pattern is compiled with ``re.MULTILINE`` (so ``^``/``$`` work
    per line). Returns the match; ``match.end()`` can be passed as ``pos`` to
    wait for the next occurrence. Fails with :class:`CrawlTimeoutError` after ``timeout``
    seconds, and with AssertionError as soon as the crawl has exited without
    the pattern appearing (no point in waiting any longer).
    """
    regex = re.compile(pattern, re.MULTILINE) if isinstance(pattern, str) else pattern
    proc = proc_or_logfile if isinstance(proc_or_logfile, CrawlProcess) else None
    path = proc.log_file if proc is not None else Path(proc_or_logfile)  # type: ignore[arg-type]
    deadline = time.monotonic() + timeout
    text = ""
    while True:
        exited = proc is not None and proc.poll() is not None
        text = _read(path)
        match = regex.search(text, pos)
        if match:
            return match
        if exited:
            assert proc is not None
            raise AssertionError(
                f"crawl exited (code {proc.returncode}) before {regex.pattern!r} appeared in "
                f"{path}\n--- log tail ---\n{_tail(text + _read(proc.stderr_file))}"
            )
        if time.monotonic() >= deadline:
            raise CrawlTimeoutError(
                f"{regex.pattern!r} did not appear in {path} within {timeout}s\n--- log tail ---\n{_tail(text)}"
            )
        time.sleep(poll_interval)


def reap_crawls() -> int:
    """Kill every crawl started by this process that is still running; return how many."""
    killed = 0
    for proc in list(_live):
        if proc.poll() is None:
            proc.kill_group()
            killed += 1
        _live.discard(proc)
    return killed


atexit.register(reap_crawls)
