"""The settings table's second half: validators, change detection, the sites'
signals, the record and the archive (:mod:`.table` assembles the whole)."""

from __future__ import annotations

from .spec import (
    GROUP_ARCHIVE,
    GROUP_CHANGE,
    GROUP_RECORD,
    GROUP_SIGNALS,
    GROUP_VALIDATORS,
    MAX_BYTES,
    MAX_HISTORY,
    UNCHANGED_MODES,
    VALIDATOR_SCHEMES,
    Kind,
    SettingSpec,
    bool_spec,
    integer_spec,
    seconds_spec,
)

CAPTURE_SPECS: tuple[SettingSpec, ...] = (
    bool_spec(
        "ADAPTIVE_CONDITIONAL_GET",
        GROUP_VALIDATORS,
        True,
        "send the stored ETag / Last-Modified as `If-None-Match` / `If-Modified-Since`.",
        user=True,
    ),
    bool_spec(
        "ADAPTIVE_MIDFETCH_ABORT",
        GROUP_VALIDATORS,
        True,
        "stop a download after its headers when they predict no change.",
        user=True,
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
    integer_spec(
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
        "how the stored ETag and Last-Modified predict no change (see "
        "[docs/change-detection.md](docs/change-detection.md#http-validators)).",
        choices=VALIDATOR_SCHEMES,
    ),
    SettingSpec(
        "ADAPTIVE_DIGEST_DEFAULT",
        GROUP_CHANGE,
        Kind.OBJECT,
        "exact",
        "the digest rule where no `ADAPTIVE_DIGEST_RULES` entry matches (a name or an entry dict).",
    ),
    integer_spec(
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
        "which digest rule applies where (see [docs/change-detection.md](docs/change-detection.md)); a list of "
        "dicts, or JSON.",
        user=True,
    ),
    bool_spec(
        "ADAPTIVE_NOISE_LEARNING",
        GROUP_CHANGE,
        True,
        "pages are compared by structure and what is proven to move at every fetch (a clock, a token) is "
        "left out of the comparison; a page's first unexplained difference is held back until a probe "
        "settles it (see [docs/change-detection.md](docs/change-detection.md)).",
    ),
    bool_spec(
        "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE",
        GROUP_CHANGE,
        True,
        "a changed page's embedded resources come with it (a composite capture: an archive replays the page "
        "with embeds of its moment), each with a conditional request where it was stored before: one that "
        "changed at its last fetch with every capture, one that stayed the same once the copy is older than "
        "5 s doubled per fetch it stayed the same (a stylesheet every page shares is confirmed ever more "
        "rarely).",
    ),
    SettingSpec(
        "ADAPTIVE_UNCHANGED",
        GROUP_CHANGE,
        Kind.CHOICE,
        "skip",
        "`skip`: unchanged pages do not reach the callback; `deliver`: they do, flagged in meta.",
        choices=UNCHANGED_MODES,
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_CANONICAL",
        GROUP_SIGNALS,
        Kind.OBJECT,
        None,
        "spellings of one page that share one record: a list of `www`, `case`, `slash`, `index` for every host "
        "(`-s ADAPTIVE_CANONICAL=www,slash` on the command line), or a dict from host (glob, `*`) to such a list "
        "(see [docs/signals.md](docs/signals.md#canonical-urls)). Off by default.",
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_FEEDS",
        GROUP_SIGNALS,
        Kind.URLS,
        (),
        "RSS/Atom feeds read for new URLs and entry `updated` change hints (needs `scrapy-adaptive[feeds]`).",
        default_doc="none",
        user=True,
    ),
    seconds_spec(
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
        "like any page (see [docs/signals.md](docs/signals.md#sitemaps-and-feeds)).",
        default_doc="none",
        user=True,
    ),
    bool_spec(
        "ADAPTIVE_SITEMAPS_FROM_ROBOTS",
        GROUP_SIGNALS,
        False,
        "the `Sitemap:` lines of every robots.txt the crawl reads are read as `ADAPTIVE_SITEMAPS`.",
        user=True,
    ),
    integer_spec(
        "ADAPTIVE_SOFT404_URLS",
        GROUP_SIGNALS,
        10,
        "a successful page this many URLs of one host got (the same digest) is a parked page, recorded as such and "
        "not a new version, like a page equal to the host's 404 page (see "
        "[docs/signals.md](docs/signals.md#soft-404s)); 0: only the latter.",
        at_least=0,
    ),
    bool_spec(
        "ADAPTIVE_CHANGES_AS_ITEMS",
        GROUP_RECORD,
        False,
        "also hand every change event to the project's `ITEM_PIPELINES` as a `scrapy_adaptive.ChangeEvent` item, at "
        "least once: out of the state only once the pipelines are done with it (not exported to `FEEDS`, not counted "
        "as scraped; see [docs/changes.md](docs/changes.md)); makes change events like `ADAPTIVE_CHANGE_EVENTS`.",
    ),
    SettingSpec(
        "ADAPTIVE_CHANGES_FEED",
        GROUP_RECORD,
        Kind.TEXT,
        None,
        "write every change event (`new`, `changed`, `gone`, `back`, `moved`) to this file, one JSON object per "
        "line (`.csv`: CSV), at least once: flushed and fsynced before the events leave the state (see "
        "[docs/changes.md](docs/changes.md)).",
        optional=True,
        default_doc="unset: no changes feed",
        user=True,
    ),
    integer_spec(
        "ADAPTIVE_CHANGES_LOG_BACKUPS",
        GROUP_RECORD,
        3,
        "old changes logs kept when `changes.log` (the history of change events `scrapy frontier changes` reads, in "
        "the state folder) is rotated.",
        at_least=0,
    ),
    integer_spec(
        "ADAPTIVE_CHANGES_LOG_MAX_BYTES",
        GROUP_RECORD,
        16 * 2**20,
        "rotate `changes.log` at this size (16 MiB, about 50,000 events).",
        at_least=1,
        at_most=MAX_BYTES,
    ),
    bool_spec(
        "ADAPTIVE_CHANGE_EVENTS",
        GROUP_RECORD,
        False,
        "send every change event as the `scrapy_adaptive.CHANGE_EVENT` signal, for pipelines and extensions; on "
        "whenever `ADAPTIVE_CHANGES_FEED` or `ADAPTIVE_CHANGES_AS_ITEMS` is set.",
    ),
    bool_spec("ADAPTIVE_CRAWL_LOG", GROUP_RECORD, True, "write `crawl.log` in the state folder."),
    integer_spec(
        "ADAPTIVE_CRAWL_LOG_BACKUPS",
        GROUP_RECORD,
        5,
        "old crawl logs kept when the log is rotated.",
        at_least=0,
    ),
    integer_spec(
        "ADAPTIVE_CRAWL_LOG_MAX_BYTES",
        GROUP_RECORD,
        50 * 2**20,
        "rotate the crawl log at this size (50 MiB).",
        at_least=1,
        at_most=MAX_BYTES,
    ),
    integer_spec(
        "ADAPTIVE_GONE_CONFIRMATIONS",
        GROUP_RECORD,
        2,
        "a page is said `gone` (404, 410, a soft 404, a permanent redirect to the home page or a folder above it) "
        "after this many such answers in a row; a 5xx or a timeout neither confirms nor breaks the row.",
        at_least=1,
        at_most=100,
    ),
    integer_spec(
        "ADAPTIVE_HISTORY_SIZE",
        GROUP_RECORD,
        16,
        "visits kept in each URL's record (shown by `scrapy frontier url`); each costs about 33 bytes of a record "
        "rewritten at every visit (every visit is also a line of the crawl log).",
        at_least=1,
        at_most=MAX_HISTORY,
    ),
    seconds_spec(
        "ADAPTIVE_LOG_INTERVAL",
        GROUP_RECORD,
        60.0,
        "how often the frontier summary is logged and the `adaptive/frontier/*` stats refreshed.",
        positive=True,
        user=True,
    ),
    SettingSpec(
        "ADAPTIVE_NOTIFY",
        GROUP_RECORD,
        Kind.OBJECT,
        None,
        "send change events to chat, mail or webhooks with Apprise (the `notify` extra): an Apprise URL, a list "
        'of them, or a list of dicts `{"to": URL, "url": regex, "hosts": [...], "kinds": [...], '
        '"fields": [...], "batch": seconds}`; events within `batch` (60 s) go in one message, at least once '
        "(see [docs/changes.md](docs/changes.md#notifications)).",
        default_doc="unset: no notifications",
        user=True,
    ),
    integer_spec(
        "ADAPTIVE_TEXT_DIFF",
        GROUP_RECORD,
        0,
        "with change events on, give each `changed` or `back` event of a text page a `text_diff`: the unified diff of "
        "its visible text since the last version, cut to this many bytes (4096 is a good start; 0: off). Each "
        "URL's last text is kept compressed in the state (see [docs/changes.md](docs/changes.md)).",
        at_least=0,
        at_most=1_048_576,
        user=True,
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
        user=True,
    ),
    bool_spec(
        "ADAPTIVE_WARC_DEDUP_ACROSS_URLS",
        GROUP_ARCHIVE,
        False,
        "a body already archived under another URL (mirrors, tracking parameters, session paths) is written as a "
        "`revisit` referring to that URL's capture, as Heritrix does; off: only the same URL's last capture is "
        "referred to, so each URL's records stand on their own.",
    ),
    integer_spec(
        "ADAPTIVE_WARC_DIGEST_INDEX_SIZE",
        GROUP_ARCHIVE,
        1_000_000,
        "payload digests the cross-URL index keeps (in the WARC folder); the oldest are forgotten beyond it "
        "(a forgotten body is archived again as a `response`).",
        at_least=1,
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
    bool_spec(
        "ADAPTIVE_WARC_KEEP_CREDENTIALS",
        GROUP_ARCHIVE,
        False,
        "keep the `Authorization`, `Proxy-Authorization` and `Cookie` headers in WARC request records. Off: "
        "their values are written as `REDACTED`. WARC files are created `0600` either way.",
    ),
)
