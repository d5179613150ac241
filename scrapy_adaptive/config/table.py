"""Every ``ADAPTIVE_*`` setting, described once: :data:`SETTING_SPECS`.

The table of :class:`~scrapy_adaptive.config.spec.SettingSpec` entries,
the limits and choices they refer to, and what is derived from the table
alone: :data:`SPECS_BY_NAME` and :data:`DEFAULTS`, which the pure
dataclasses (``WaitParams``, ``Politeness``, ``TrustParams``) take their
field defaults from.

This module imports nothing from Scrapy, and from the package only
:mod:`~scrapy_adaptive.config.spec`.
"""

from __future__ import annotations

from typing import Any

from .capture_specs import CAPTURE_SPECS
from .spec import (
    GROUP_POLITENESS,
    GROUP_STATE,
    GROUP_WAITS,
    MAX_BUDGET,
    MAX_EMBED_HOPS,
    MAX_SECONDS,
    OBJECTIVES,
    POLITENESS_KEYS,
    Kind,
    SettingSpec,
    bool_spec,
    factor_spec,
    integer_spec,
    seconds_spec,
)

SETTING_SPECS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "ADAPTIVE_STATE_DIR",
        GROUP_STATE,
        Kind.PATH,
        None,
        "where the frontier lives. Without JOBDIR and without this: a temporary folder and a warning that "
        "nothing survives.",
        optional=True,
        default_doc="`<JOBDIR>/adaptive`",
        user=True,
    ),
    bool_spec(
        "ADAPTIVE_DELIVERY",
        GROUP_STATE,
        True,
        "at-least-once delivery: a changed page counts as a version once its items are through the pipelines "
        "and the feed file is flushed; a page whose items were lost by a kill is fetched again at the next "
        "start (see [docs/delivery.md](docs/delivery.md)).",
    ),
    bool_spec(
        "ADAPTIVE_STATE_SYNC",
        GROUP_STATE,
        False,
        "fsync every write. Writes already survive a killed process; this also survives power loss, at a cost "
        "in speed.",
    ),
    integer_spec(
        "ADAPTIVE_STATE_CACHE_MB",
        GROUP_STATE,
        64,
        "memory (MiB) LevelDB may keep of the state folder's blocks. A crawl's memory rises by up to this much "
        "over its first hours (also on a small frontier: compactions leave old blocks in the cache), then stays "
        "flat. Lower it where many crawls share a machine.",
        at_least=1,
        at_most=65536,
    ),
    bool_spec(
        "ADAPTIVE_MIGRATE_SPIDER_STATE",
        GROUP_STATE,
        False,
        "move a `JOBDIR/spider.state` pickled by Scrapy's SpiderState (a run without the add-on) into the state "
        "folder as JSON, once; the old file is renamed `spider.state.migrated`. Off, such a file refuses the start: "
        "unpickling it would run any code it holds. Set it only for a file you trust, for one start.",
    ),
    seconds_spec(
        "ADAPTIVE_STOP_GRACE",
        GROUP_STATE,
        5.0,
        "on a graceful stop (SIGINT, a Scrapyd cancel), how long downloads still running may finish; then they "
        "are abandoned (not counted, due again on restart) instead of holding the stop for `DOWNLOAD_TIMEOUT`.",
    ),
    bool_spec(
        "ADAPTIVE_STORE_CREDENTIALS",
        GROUP_STATE,
        False,
        "store the `Authorization`, `Proxy-Authorization` and `Cookie` headers and the cookies of a request in "
        "the state folder. Off: they are left out, and a revisit gets them only from the middlewares that add "
        "them (`HttpAuthMiddleware`, `CookiesMiddleware`); a URL's first fetch is the spider's own request "
        "object, credentials included, unless it comes after a restart (said once).",
    ),
    SettingSpec(
        "ADAPTIVE_STORE_LEASE",
        GROUP_STATE,
        Kind.SECONDS,
        10.0,
        "with `ADAPTIVE_STORE_URL`: how long a worker's hold on a host lasts unless renewed (every second). "
        "The hosts of a worker killed without a clean stop move to the others after this long.",
        at_least=2.0,
        at_most=MAX_SECONDS,
    ),
    SettingSpec(
        "ADAPTIVE_STORE_NAMESPACE",
        GROUP_STATE,
        Kind.TEXT,
        None,
        "with `ADAPTIVE_STORE_URL`: the prefix of every key of this crawl in Redis. Workers with the same "
        "namespace share one frontier.",
        optional=True,
        default_doc="`adaptive:<spider name>`",
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_STORE_PASSWORD",
        GROUP_STATE,
        Kind.TEXT,
        None,
        "with `ADAPTIVE_STORE_URL`: the Redis AUTH password, if not in the URL (`redis://:password@host`); "
        "never logged.",
        optional=True,
    ),
    SettingSpec(
        "ADAPTIVE_STORE_TLS_CA",
        GROUP_STATE,
        Kind.TEXT,
        None,
        "with a `rediss://` store: the CA certificate file that signed the server's certificate.",
        optional=True,
    ),
    SettingSpec(
        "ADAPTIVE_STORE_TLS_CERT",
        GROUP_STATE,
        Kind.TEXT,
        None,
        "with a `rediss://` store: this worker's client certificate file, where the server asks for one.",
        optional=True,
    ),
    SettingSpec(
        "ADAPTIVE_STORE_TLS_KEY",
        GROUP_STATE,
        Kind.TEXT,
        None,
        "with a `rediss://` store: the private key file of `ADAPTIVE_STORE_TLS_CERT`.",
        optional=True,
    ),
    SettingSpec(
        "ADAPTIVE_STORE_URL",
        GROUP_STATE,
        Kind.TEXT,
        None,
        "the frontier's store: `redis://host:port/db` (`rediss://` for TLS) for a frontier in Redis, shared by "
        "every worker with the same namespace (`pip install 'scrapy-adaptive[redis]'`); "
        "`redis+cluster://host:port` (`rediss+cluster://`) for a Redis Cluster, any node's address. Unset: "
        "LevelDB in the "
        "state folder.",
        optional=True,
        default_doc="LevelDB in the state folder",
        user=True,
    ),
    factor_spec(
        "ADAPTIVE_DELAY_FACTOR",
        GROUP_POLITENESS,
        5.0,
        "politeness wait = this × duration of the last fetch, kept between `ADAPTIVE_MIN_DELAY` and "
        "`ADAPTIVE_MAX_DELAY`.",
        positive=False,
    ),
    integer_spec(
        "ADAPTIVE_EMBED_HOPS",
        GROUP_POLITENESS,
        1,
        'embedded resources (images, CSS, scripts, fonts: by URL extension or `meta["adaptive_embed"]`) up '
        "to this many embed hops from a page are fetched right after it, before other due URLs of their queue, "
        "so a page and what it shows are captured together. 0 treats them like any URL (the thesis's "
        "default): found with a page, fetched after every page already waiting.",
        at_least=0,
        # a page's embeds' embeds (a stylesheet's fonts) are two hops: a
        # thousand is a typo, not a crawl shape
        at_most=MAX_EMBED_HOPS,
    ),
    integer_spec(
        "ADAPTIVE_HOST_VALENCE",
        GROUP_POLITENESS,
        1,
        "fetches at a time per queue. Set from `CONCURRENT_REQUESTS_PER_DOMAIN` when the project sets that and "
        "not this.",
        at_least=1,
        at_most=1000,
        user=True,
    ),
    seconds_spec(
        "ADAPTIVE_LEASE",
        GROUP_POLITENESS,
        600.0,
        "how long an issued URL may stay out without a verdict, not counting its download, before it is "
        "counted as a retry (something swallowed its outcome). A running download is never taken back.",
        positive=True,
    ),
    seconds_spec(
        "ADAPTIVE_MAX_DELAY",
        GROUP_POLITENESS,
        5.0,
        "the longest politeness wait after a fetch (a robots.txt `Crawl-delay` may be longer); never below "
        "`ADAPTIVE_MIN_DELAY`, raised to it when not set.",
        user=True,
    ),
    integer_spec(
        "ADAPTIVE_MAX_RETRIES",
        GROUP_POLITENESS,
        30,
        "frontier retries of a URL with retriable errors before it is marked failed.",
        at_least=0,
    ),
    seconds_spec(
        "ADAPTIVE_MIN_DELAY",
        GROUP_POLITENESS,
        2.0,
        "the shortest politeness wait after a fetch. Set from `DOWNLOAD_DELAY` when the project sets that and "
        "not this.",
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_POLITENESS_KEY",
        GROUP_POLITENESS,
        Kind.CHOICE,
        "host",
        "what one queue is: `host` (like Scrapy's download slots), `domain` (registered domain, public suffix "
        'list bundled, never fetched), or `slot` (`meta["download_slot"]` when the project sets one, else '
        "the host).",
        choices=POLITENESS_KEYS,
    ),
    seconds_spec(
        "ADAPTIVE_RETRY_DELAY",
        GROUP_POLITENESS,
        900.0,
        "wait before a frontier retry of a URL with a retriable error.",
    ),
    SettingSpec(
        "ADAPTIVE_BUDGET",
        GROUP_WAITS,
        Kind.NUMBER,
        None,
        "revisits per day that budgeted policies (`UnionWaitPolicy`, the default, `BurstWaitPolicy`, "
        "`SnapBackWaitPolicy` and `ProportionalWaitPolicy`) share across the crawl; each host's share is capped "
        "by its politeness (valence per max(`ADAPTIVE_MIN_DELAY`, Crawl-delay), tightened by measured fetch "
        "times). It is also a ceiling: revisits (probes, header checks and embeds included) are issued no "
        "faster than this, a burst of 10 s of it at most; first visits and URLs the spider asks for again "
        "(`dont_filter`) go as they come; in a fleet each worker holds budget / live workers. Unset: the "
        "budget follows the crawl's politeness capacity, see `ADAPTIVE_CAPACITY_SHARE`.",
        above=0.0,
        at_most=MAX_BUDGET,
        optional=True,
        unit="revisits per day",
        requirement="a number of revisits per day > 0",
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_OBJECTIVE",
        GROUP_WAITS,
        Kind.CHOICE,
        "versions",
        "what the revisit budget is spent for. `versions`: capture as many of the pages' versions as it can "
        "buy (archives; every page visited at the same expected changes per visit, so faster pages more "
        "often). `freshness`: keep the copy current as much of the time as it can (data teams; slow pages get "
        "more, pages changing too fast to keep current less). See "
        "[docs/wait-policies.md](docs/wait-policies.md#versions-or-freshness-what-the-budget-is-spent-for).",
        choices=OBJECTIVES,
        user=True,
    ),
    seconds_spec(
        "ADAPTIVE_BUDGET_WINDOW",
        GROUP_WAITS,
        None,
        "the window over which the realised revisit rate is measured and held to `ADAPTIVE_BUDGET`: "
        "nothing is corrected before one window has passed, and corrections act over about two windows. "
        "Unset: the time the budget takes to buy 720 revisits (3 days at 240 revisits a day, 4 minutes at "
        "250,000), so the loop has enough revisits to measure and acts on the crawl's own time scale, "
        "compressed or not. While "
        "the number of URLs known to the policy still doubles within a window (a fresh crawl), the measurement "
        "restarts: the first URLs' short waits were planned for far fewer URLs and are not held against the "
        "budget.",
        positive=True,
        optional=True,
        requirement="a finite number of seconds > 0 (the window over which realised revisits are held to "
        "ADAPTIVE_BUDGET)",
    ),
    SettingSpec(
        "ADAPTIVE_CAPACITY_SHARE",
        GROUP_WAITS,
        Kind.NUMBER,
        0.9,
        "without `ADAPTIVE_BUDGET`: the share of the crawl's politeness capacity (the fetches per day its "
        "hosts allow, Σ valence / max(`ADAPTIVE_MIN_DELAY`, Crawl-delay), tightened by measured fetch times, "
        "updated as hosts are met) that revisits may use; the rest is left for new URLs and retries. A small "
        "crawl cannot spend it and revisits every page at about `ADAPTIVE_WAIT_MIN`; a large one spends it "
        "where changes are.",
        above=0.0,
        at_most=1.0,
        requirement="a share of the politeness capacity, > 0 and at most 1",
    ),
    SettingSpec(
        "ADAPTIVE_TARGET_PRECISION",
        GROUP_WAITS,
        Kind.NUMBER,
        0.5,
        "without `ADAPTIVE_BUDGET`: the least probability that a planned revisit finds a change (r = −ln(1 − p) "
        "expected changes per interval, a floor on each URL's wait of r / its learned change rate): the "
        "capacity budget (`ADAPTIVE_CAPACITY_SHARE`) is the most the crawl spends, this keeps it from spending "
        "it on pages that do not change. Where capacity is short every visit is likelier than p to find a "
        "change; where it is plentiful the share of versions captured is p / r (72 % at 0.5, 90 % at 0.2).",
        above=0.0,
        below=1.0,
        requirement="a probability strictly between 0 and 1 (the least share of revisits that should find a "
        "change when ADAPTIVE_BUDGET is not set)",
    ),
    factor_spec("ADAPTIVE_WAIT_CHANGED_FACTOR", GROUP_WAITS, 1.5, "a changed page's wait is divided by this."),
    seconds_spec(
        "ADAPTIVE_WAIT_DEFAULT",
        GROUP_WAITS,
        259_200.0,
        "the Heritrix and fixed policies' wait when it is unknown whether the page changed, and the fixed "
        "policy's only wait (3 days); the default policy keeps a page's pace through such visits.",
        positive=True,
    ),
    factor_spec(
        "ADAPTIVE_WAIT_DEPTH_FACTOR",
        GROUP_WAITS,
        1.0,
        "initial wait factor per link hop from the seed (`depth` meta): `initial × factor ** depth`.",
    ),
    seconds_spec(
        "ADAPTIVE_WAIT_INITIAL",
        GROUP_WAITS,
        86_400.0,
        "catch-all wait after a URL's first visit (1 day).",
        positive=True,
    ),
    seconds_spec(
        "ADAPTIVE_WAIT_MAX",
        GROUP_WAITS,
        2_419_200.0,
        "catch-all upper bound of a wait (28 days); never below `ADAPTIVE_WAIT_MIN`.",
        positive=True,
        user=True,
    ),
    seconds_spec("ADAPTIVE_WAIT_MIN", GROUP_WAITS, 3_600.0, "catch-all lower bound of a wait (1 hour).", user=True),
    SettingSpec(
        "ADAPTIVE_WAIT_POLICIES",
        GROUP_WAITS,
        Kind.OBJECT,
        None,
        "the stack of policies matched by content type, host, URL (see "
        "[docs/wait-policies.md](docs/wait-policies.md)); a list of dicts, or JSON on the command line. An entry "
        "with `from` / `until` / `every` is a curated schedule (see "
        "[docs/wait-policies.md](docs/wait-policies.md#curated-schedules)).",
        default_doc="`text/*`, `image/*`, then the catch-all",
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_WAIT_POLICY",
        GROUP_WAITS,
        Kind.CLASS_PATH,
        "scrapy_adaptive.policies.UnionWaitPolicy",
        "the policy class for the catch-all and the stack entries (`...HeritrixWaitPolicy` for the thesis's rule).",
        user=True,
    ),
    factor_spec("ADAPTIVE_WAIT_UNCHANGED_FACTOR", GROUP_WAITS, 1.5, "an unchanged page's wait is multiplied by this."),
    bool_spec(
        "ADAPTIVE_WAIT_USE_OVERDUE",
        GROUP_WAITS,
        False,
        "add the time a visit was overdue to the wait before the factor.",
    ),
    *CAPTURE_SPECS,
)

#: Settings that are no longer settings, and what took their place: a
#: project still setting one is told so, once, at start-up
#: (:func:`~scrapy_adaptive.config.settings.unknown_settings`), rather than
#: having it ignored without a word.  Each became a constant with a comment
#: saying why no crawl should turn it.
REMOVED_SETTINGS: dict[str, str] = {
    "ADAPTIVE_GC_FREEZE": "what lives when the frontier opens is always frozen out of the garbage collector's "
    "scans (the constant scrapy_adaptive.runtime.collector.FREEZE)",
    "ADAPTIVE_GC_THRESHOLD": "the garbage collector's youngest generation is always collected every 10000 "
    "allocations, or at the higher threshold the project set with gc.set_threshold (the constant "
    "scrapy_adaptive.runtime.collector.THRESHOLD)",
    "ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR": "the catch-all's first wait for a page without Last-Modified is "
    "halved (the constant scrapy_adaptive.policies.base.NO_LAST_MODIFIED_FACTOR); an ADAPTIVE_WAIT_POLICIES "
    "entry may still set no_last_modified_factor",
}

#: the spec of each setting, by name
SPECS_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTING_SPECS}

#: every setting's default, in the table's order (kept as a dict: older code
#: and the pure dataclasses read single defaults from it)
DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in SETTING_SPECS}
