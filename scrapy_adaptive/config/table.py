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

from .spec import Kind, SettingSpec

UNCHANGED_MODES = ("skip", "deliver")
#: how ETag / Last-Modified predict "no change" (``change/prediction.py``
#: re-exports this as ``SCHEMES``)
VALIDATOR_SCHEMES = ("etag", "timestamp", "both", "either")
POLITENESS_KEYS = ("host", "domain", "slot")

#: The upper limit of every duration setting.  Nothing this crawler does
#: needs a longer delay or wait; a larger value is a typo or a unit mistake
#: (milliseconds for seconds), and left alone it would overflow the
#: frontier's millisecond timestamps or park every URL for ever.
MAX_SECONDS = 10 * 365 * 86_400.0
#: sanity limit of a size in bytes (1 TiB): 1e20 is a typo, and a file never
#: rotated fills the disk
MAX_BYTES = 2**40
#: sanity limit of ``ADAPTIVE_EMBED_HOPS``
MAX_EMBED_HOPS = 10
#: The upper limit of every multiplying factor: a factor of 1000 already
#: turns a one-second fetch into a 17-minute politeness delay, or a one-hour
#: wait into six weeks after one step.
MAX_FACTOR = 1_000.0
#: The upper limit of ``ADAPTIVE_BUDGET``: a billion revisits a day is over
#: 11,000 fetches a second, far beyond one Scrapy process.
MAX_BUDGET = 1e9

#: where the table's groups start; their order is the README's order
GROUP_STATE = "Where the state lives"
GROUP_POLITENESS = "Politeness, enforced once, by the frontier"
GROUP_WAITS = "Revisit waits (the catch-all policy; ADAPTIVE_WAIT_POLICIES stacks more)"
GROUP_VALIDATORS = "HTTP validators"
GROUP_CHANGE = "Change detection"
GROUP_SIGNALS = "The sites' own signals: sitemaps, feeds, robots.txt"
GROUP_RECORD = "Record and observability"
GROUP_ARCHIVE = "Archive (WARC, the `warc` extra)"


def _seconds(
    name: str, group: str, default: float | None, doc: str, *, positive: bool = False, **more: Any
) -> SettingSpec:
    """A duration: finite, never negative (or > 0), at most :data:`MAX_SECONDS`."""
    bounds: dict[str, Any] = {"above": 0.0} if positive else {"at_least": 0.0}
    return SettingSpec(name, group, Kind.SECONDS, default, doc, at_most=MAX_SECONDS, **bounds, **more)


def _factor(name: str, group: str, default: float, doc: str, *, positive: bool = True) -> SettingSpec:
    """A multiplier: finite, > 0 (or >= 0), at most :data:`MAX_FACTOR`."""
    bounds: dict[str, Any] = {"above": 0.0} if positive else {"at_least": 0.0}
    return SettingSpec(name, group, Kind.NUMBER, default, doc, at_most=MAX_FACTOR, **bounds)


def _integer(
    name: str, group: str, default: int, doc: str, *, at_least: int, at_most: int | None = None
) -> SettingSpec:
    return SettingSpec(name, group, Kind.INTEGER, default, doc, at_least=at_least, at_most=at_most)


def _bool(name: str, group: str, default: bool, doc: str) -> SettingSpec:
    return SettingSpec(name, group, Kind.BOOL, default, doc)


#: Thesis defaults (Sigurðsson 2005, ch. 6.2) for politeness, and the code
#: defaults of Heritrix's WaitEvaluator for revisit waits.  Grouped like
#: Scrapy's ``default_settings.py``: the enabling flag first in its group,
#: then alphabetical.
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
    ),
    _bool(
        "ADAPTIVE_DELIVERY",
        GROUP_STATE,
        True,
        "at-least-once delivery: a changed page counts as a version once its items are through the pipelines "
        "and the feed file is flushed; a page whose items were lost by a kill is fetched again at the next "
        "start (see Reliability).",
    ),
    _bool(
        "ADAPTIVE_STATE_SYNC",
        GROUP_STATE,
        False,
        "fsync every write. Writes already survive a killed process; this also survives power loss, at a cost "
        "in speed.",
    ),
    _seconds(
        "ADAPTIVE_STOP_GRACE",
        GROUP_STATE,
        5.0,
        "on a graceful stop (SIGINT, a Scrapyd cancel), how long downloads still running may finish; then they "
        "are abandoned (not counted, due again on restart) instead of holding the stop for `DOWNLOAD_TIMEOUT`.",
    ),
    _bool(
        "ADAPTIVE_STORE_CREDENTIALS",
        GROUP_STATE,
        False,
        "store the `Authorization`, `Proxy-Authorization` and `Cookie` headers and the cookies of a request in "
        "the state folder. Off: they are left out, and a revisit gets them only from the middlewares that add "
        "them (`HttpAuthMiddleware`, `CookiesMiddleware`).",
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
    ),
    _factor(
        "ADAPTIVE_DELAY_FACTOR",
        GROUP_POLITENESS,
        5.0,
        "politeness wait = this × duration of the last fetch, kept between `ADAPTIVE_MIN_DELAY` and "
        "`ADAPTIVE_MAX_DELAY`.",
        positive=False,
    ),
    _integer(
        "ADAPTIVE_EMBED_HOPS",
        GROUP_POLITENESS,
        0,
        'embedded resources (images, CSS, scripts, fonts: by URL extension or `meta["adaptive_embed"]`) up '
        "to this many embed hops from a page are fetched before other due URLs of their queue. 0 (the thesis "
        "default) treats them like any URL, so their own change rate governs them.",
        at_least=0,
        # a page's embeds' embeds (a stylesheet's fonts) are two hops: a
        # thousand is a typo, not a crawl shape
        at_most=MAX_EMBED_HOPS,
    ),
    _integer(
        "ADAPTIVE_HOST_VALENCE",
        GROUP_POLITENESS,
        1,
        "fetches at a time per queue. Set from `CONCURRENT_REQUESTS_PER_DOMAIN` when the project sets that and "
        "not this.",
        at_least=1,
    ),
    _seconds(
        "ADAPTIVE_LEASE",
        GROUP_POLITENESS,
        600.0,
        "how long an issued URL may stay out without a verdict, not counting its download, before it is "
        "counted as a retry (something swallowed its outcome). A running download is never taken back.",
        positive=True,
    ),
    _seconds(
        "ADAPTIVE_MAX_DELAY",
        GROUP_POLITENESS,
        5.0,
        "the longest politeness wait after a fetch (a robots.txt `Crawl-delay` may be longer); never below "
        "`ADAPTIVE_MIN_DELAY`, raised to it when not set.",
    ),
    _integer(
        "ADAPTIVE_MAX_RETRIES",
        GROUP_POLITENESS,
        30,
        "frontier retries of a URL with retriable errors before it is marked failed.",
        at_least=0,
    ),
    _seconds(
        "ADAPTIVE_MIN_DELAY",
        GROUP_POLITENESS,
        2.0,
        "the shortest politeness wait after a fetch. Set from `DOWNLOAD_DELAY` when the project sets that and "
        "not this.",
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
    _seconds(
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
        "revisits per day that budgeted policies (`BurstWaitPolicy`, the default, and `ProportionalWaitPolicy`) "
        "share across the crawl; each host's share is capped by its politeness (valence per "
        "max(`ADAPTIVE_MIN_DELAY`, Crawl-delay)). Unset: no fixed budget, see `ADAPTIVE_TARGET_PRECISION`.",
        above=0.0,
        at_most=MAX_BUDGET,
        optional=True,
        unit="revisits per day",
        requirement="a number of revisits per day > 0",
    ),
    _seconds(
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
        "ADAPTIVE_TARGET_PRECISION",
        GROUP_WAITS,
        Kind.NUMBER,
        0.5,
        "without `ADAPTIVE_BUDGET`: the probability that a visit finds a change, the same for every URL "
        "(r = −ln(1 − p) expected changes per interval; the share of versions captured is then p / r, 72 % at "
        "0.5, 90 % at 0.2).",
        above=0.0,
        below=1.0,
        requirement="a probability strictly between 0 and 1 (the share of visits that should find a change "
        "when ADAPTIVE_BUDGET is not set)",
    ),
    _factor("ADAPTIVE_WAIT_CHANGED_FACTOR", GROUP_WAITS, 1.5, "a changed page's wait is divided by this."),
    _seconds(
        "ADAPTIVE_WAIT_DEFAULT",
        GROUP_WAITS,
        259_200.0,
        "catch-all wait when it is unknown whether the page changed (3 days).",
        positive=True,
    ),
    _factor(
        "ADAPTIVE_WAIT_DEPTH_FACTOR",
        GROUP_WAITS,
        1.0,
        "initial wait factor per link hop from the seed (`depth` meta): `initial × factor ** depth`.",
    ),
    _seconds(
        "ADAPTIVE_WAIT_INITIAL",
        GROUP_WAITS,
        86_400.0,
        "catch-all wait after a URL's first visit (1 day).",
        positive=True,
    ),
    _seconds(
        "ADAPTIVE_WAIT_MAX",
        GROUP_WAITS,
        2_419_200.0,
        "catch-all upper bound of a wait (28 days); never below `ADAPTIVE_WAIT_MIN`.",
        positive=True,
    ),
    _seconds("ADAPTIVE_WAIT_MIN", GROUP_WAITS, 3_600.0, "catch-all lower bound of a wait (1 hour)."),
    _factor(
        "ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR",
        GROUP_WAITS,
        0.5,
        "initial wait factor for a page sent without Last-Modified (0.5: twice as likely to change).",
    ),
    SettingSpec(
        "ADAPTIVE_WAIT_POLICIES",
        GROUP_WAITS,
        Kind.OBJECT,
        None,
        "the stack of policies matched by content type, host, URL (see Wait evaluation); a list of dicts, or "
        "JSON on the command line.",
        default_doc="`text/*`, `image/*`, then the catch-all",
    ),
    SettingSpec(
        "ADAPTIVE_WAIT_POLICY",
        GROUP_WAITS,
        Kind.CLASS_PATH,
        "scrapy_adaptive.policies.BurstWaitPolicy",
        "the policy class for the catch-all and the stack entries (`...HeritrixWaitPolicy` for the thesis's rule).",
    ),
    _factor("ADAPTIVE_WAIT_UNCHANGED_FACTOR", GROUP_WAITS, 1.5, "an unchanged page's wait is multiplied by this."),
    _bool(
        "ADAPTIVE_WAIT_USE_OVERDUE",
        GROUP_WAITS,
        False,
        "add the time a visit was overdue to the wait before the factor.",
    ),
    _bool(
        "ADAPTIVE_CONDITIONAL_GET",
        GROUP_VALIDATORS,
        True,
        "send the stored ETag / Last-Modified as `If-None-Match` / `If-Modified-Since`.",
    ),
    _bool(
        "ADAPTIVE_MIDFETCH_ABORT",
        GROUP_VALIDATORS,
        True,
        "stop a download after its headers when they predict no change.",
    ),
    SettingSpec(
        "ADAPTIVE_TRUST_MIN_RATE",
        GROUP_VALIDATORS,
        Kind.NUMBER,
        0.005,
        "the lowest share of acted-on predictions that are verified by a full download (1 in 200).",
        above=0.0,
        at_most=1.0,
        requirement="in (0, 1]",
    ),
    _integer(
        "ADAPTIVE_TRUST_WARMUP",
        GROUP_VALIDATORS,
        3,
        'right predictions (on verification fetches) before a host\'s "no change" is acted on.',
        at_least=0,
    ),
    SettingSpec(
        "ADAPTIVE_VALIDATOR_SCHEME",
        GROUP_VALIDATORS,
        Kind.CHOICE,
        "both",
        "how the stored ETag and Last-Modified predict no change (see HTTP validators).",
        choices=VALIDATOR_SCHEMES,
    ),
    SettingSpec(
        "ADAPTIVE_DIGEST_DEFAULT",
        GROUP_CHANGE,
        Kind.OBJECT,
        "exact",
        "the digest rule where no `ADAPTIVE_DIGEST_RULES` entry matches (a name or an entry dict).",
    ),
    _integer(
        "ADAPTIVE_DIGEST_MAX_SIZE",
        GROUP_CHANGE,
        1_048_576,
        "bytes up to which the `regex` rule applies (beyond: `exact`; thesis: 1 MB).",
        at_least=1,
    ),
    SettingSpec(
        "ADAPTIVE_DIGEST_RULES",
        GROUP_CHANGE,
        Kind.OBJECT,
        None,
        "which digest rule applies where (see Change detection); a list of dicts, or JSON.",
    ),
    _bool(
        "ADAPTIVE_NOISE_LEARNING",
        GROUP_CHANGE,
        True,
        "a page without usable validators found changed on a revisit is probed at once, and what changed "
        "between the two fetches is left out of its digest from then on (see Change detection).",
    ),
    _bool(
        "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE",
        GROUP_CHANGE,
        False,
        "a changed page's embedded resources are made due at once.",
    ),
    SettingSpec(
        "ADAPTIVE_UNCHANGED",
        GROUP_CHANGE,
        Kind.CHOICE,
        "skip",
        "`skip`: unchanged pages do not reach the callback; `deliver`: they do, flagged in meta.",
        choices=UNCHANGED_MODES,
    ),
    SettingSpec(
        "ADAPTIVE_CANONICAL",
        GROUP_SIGNALS,
        Kind.OBJECT,
        None,
        "spellings of one page that share one record: a list of `www`, `case`, `slash`, `index` for every host, "
        "or a dict from host (glob, `*`) to such a list (see Canonical URLs). Off by default.",
    ),
    SettingSpec(
        "ADAPTIVE_FEEDS",
        GROUP_SIGNALS,
        Kind.URLS,
        (),
        "RSS/Atom feeds read for new URLs and entry `updated` change hints (needs `scrapy-adaptive[feeds]`).",
        default_doc="none",
    ),
    _seconds(
        "ADAPTIVE_ROBOTS_REFRESH",
        GROUP_SIGNALS,
        86_400.0,
        "robots.txt is fetched again when its copy is this old, so a changed Disallow or Crawl-delay takes "
        "effect (1 day; 0: never, Scrapy's own behaviour). Needs `ROBOTSTXT_OBEY`.",
    ),
    SettingSpec(
        "ADAPTIVE_SITEMAPS",
        GROUP_SIGNALS,
        Kind.URLS,
        (),
        "sitemaps (index files and `.gz` too) read for new URLs and `<lastmod>` change hints, and revisited "
        "like any page (see Sitemaps and feeds).",
        default_doc="none",
    ),
    _bool(
        "ADAPTIVE_SITEMAPS_FROM_ROBOTS",
        GROUP_SIGNALS,
        False,
        "the `Sitemap:` lines of every robots.txt the crawl reads are read as `ADAPTIVE_SITEMAPS`.",
    ),
    _integer(
        "ADAPTIVE_SOFT404_URLS",
        GROUP_SIGNALS,
        10,
        "a successful page this many URLs of one host got (the same digest) is a parked page, recorded as such and "
        "not a new version, like a page equal to the host's 404 page (see Soft-404s); 0: only the latter.",
        at_least=0,
    ),
    _bool("ADAPTIVE_CRAWL_LOG", GROUP_RECORD, True, "write `crawl.log` in the state folder."),
    _integer(
        "ADAPTIVE_CRAWL_LOG_BACKUPS",
        GROUP_RECORD,
        5,
        "old crawl logs kept when the log is rotated.",
        at_least=0,
    ),
    _integer(
        "ADAPTIVE_CRAWL_LOG_MAX_BYTES",
        GROUP_RECORD,
        50 * 2**20,
        "rotate the crawl log at this size (50 MiB).",
        at_least=1,
        at_most=MAX_BYTES,
    ),
    _integer("ADAPTIVE_HISTORY_SIZE", GROUP_RECORD, 16, "visits kept in each URL's history.", at_least=1),
    _seconds(
        "ADAPTIVE_LOG_INTERVAL",
        GROUP_RECORD,
        60.0,
        "how often the frontier summary is logged and the `adaptive/frontier/*` stats refreshed.",
        positive=True,
    ),
    SettingSpec(
        "ADAPTIVE_WARC_DIR",
        GROUP_ARCHIVE,
        Kind.PATH,
        None,
        "write every fetch to WARC files in this folder: `request` + `response` records for new content, "
        "`revisit` records for unchanged visits (needs `pip install scrapy-adaptive[warc]`).",
        optional=True,
        default_doc="unset: no WARC output",
    ),
    SettingSpec(
        "ADAPTIVE_WARC_MAX_SIZE",
        GROUP_ARCHIVE,
        Kind.INTEGER,
        2**30,
        "start a new WARC file once the current one reaches this size in bytes (1 GiB).",
        at_least=1,
    ),
    SettingSpec(
        "ADAPTIVE_WARC_PREFIX",
        GROUP_ARCHIVE,
        Kind.TEXT,
        "adaptive",
        "the WARC files' names: `PREFIX-TIMESTAMP-SERIAL.warc.gz` (letters, digits, `.`, `_`, `-`).",
    ),
)

#: the spec of each setting, by name
SPECS_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTING_SPECS}

#: every setting's default, in the table's order (kept as a dict: older code
#: and the pure dataclasses read single defaults from it)
DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in SETTING_SPECS}
