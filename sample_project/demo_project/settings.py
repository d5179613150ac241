"""Settings of the sample project, scaled for the local demo site.

The adaptive defaults are tuned for the real web (seconds between requests to
one host, revisits no sooner than an hour).  The demo site changes pages every
15 s to 5 min, so the politeness delays and the minimum wait below shrink the
crawl's time scale to match; the names are the add-on's ``ADAPTIVE_*``
settings, all times in seconds (floats).
Any of them can be overridden on the command line with ``-s NAME=value``.
"""

BOT_NAME = "demo_project"

SPIDER_MODULES = ["demo_project.spiders"]
NEWSPIDER_MODULE = "demo_project.spiders"

# Be a good citizen even locally: the demo site's robots.txt disallows
# /private/, and the demo shows that the crawler never fetches it.
ROBOTSTXT_OBEY = True

# The one line that turns this ordinary project into a continuous, adaptive
# revisiting crawler: the add-on installs the frontier scheduler and its
# middlewares.  `-s ADDONS={}` runs the spider as a plain one-pass crawl.
ADDONS = {"scrapy_adaptive.Addon": 0}

# INFO shows the add-on's periodic frontier summary without per-request noise.
LOG_LEVEL = "INFO"

# No needless listening ports: the Telnet console and Scrapy's remote-control
# (code execution) server are debugging aids the demo does not use.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

# Write exported feeds (-o items.jsonl) as readable UTF-8.
FEED_EXPORT_ENCODING = "utf-8"

# Where the spider starts; change it when the demo site runs elsewhere,
# e.g. `-s DEMO_SITE_URL=http://127.0.0.1:9000/` (scripts/demo.sh does this
# for $DEMO_PORT).  Only loopback addresses make sense for the demo site.
DEMO_SITE_URL = "http://127.0.0.1:8731/"

# --- Politeness (per host) -------------------------------------------------
# Wait at least this long between two requests to one host: small, because
# the demo site is local, but non-zero so politeness is visible in the log.
ADAPTIVE_MIN_DELAY = 0.2
# Never wait longer than this between requests to one host, however slow the
# last response was, so the whole site is covered within a few seconds.
ADAPTIVE_MAX_DELAY = 1.0
# Otherwise wait this multiple of the last response's download time
# (a slow server gets proportionally more breathing room).
ADAPTIVE_DELAY_FACTOR = 2.0

# --- Revisit waits -----------------------------------------------------------
# The crawl's time scale, and the only wait setting the demo needs: no page is
# fetched again sooner than 5 s after its last visit (the timestamp page
# changes on every request).  Without ADAPTIVE_BUDGET the crawl spends a share
# of what its politeness allows (ADAPTIVE_CAPACITY_SHARE of the fetches per
# second the delays above permit) on revisits, and gives it to the pages that
# change: the 15 s pages come back every few seconds, the static ones rarely.
# The summary line says which setting decides the next revisit.
ADAPTIVE_WAIT_MIN = 5.0

# --- Change detection ----------------------------------------------------------
# What "changed" means, per URL (first match wins, exact bytes otherwise):
# - the timestamp page changes on every request only in its "Generated at"
#   line: blank that line before hashing (the thesis's HTTPContentDigest);
# - the markup page changes only in scripts, attributes and comments: compare
#   the visible text;
# - products: compare the data the spider extracts (name and price), so a
#   layout change is not a new version but a price change is; the price's
#   old and new values are kept, so a change event (and a notification,
#   ADAPTIVE_NOTIFY) says "price 61.50 → 51.00".
ADAPTIVE_DIGEST_RULES = [
    {"url": r"/lab/timestamp\.html$", "rule": "regex", "patterns": [r"Generated at [^<]*"]},
    {"url": r"/lab/markup\.html$", "rule": "text"},
    {"url": r"/shop/product-\d+\.html$", "rule": "items", "fields": ["title", "price"], "values": ["price"]},
]

# Fetch a changed page's images again right away, so a page and the images it
# shows are captured together (those that may have changed with it: a
# stylesheet every page shares and that never changes keeps its own wait).
ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE = True

# Log the frontier summary (queued / due / visited / changed) every 10 s so
# the adaptation can be watched while the demo runs.
ADAPTIVE_LOG_INTERVAL = 10.0
