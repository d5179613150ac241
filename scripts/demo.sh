#!/usr/bin/env bash
# Quick start from README.md: serve the bundled demo site on 127.0.0.1 and
# crawl it continuously with the sample project until Ctrl-C.
#
#   bash scripts/demo.sh                         # crawl until Ctrl-C
#   bash scripts/demo.sh -s ADAPTIVE_LOG_INTERVAL=5 -o items.jsonl
#
# Extra arguments go to `scrapy crawl demo`.  Environment: DEMO_PORT (8731),
# DEMO_SPEED (1; e.g. 10 makes pages change ten times faster), DEMO_SEED (0).
# The crawl state lives in sample_project/crawls/demo (crawls/demo-PORT for
# another DEMO_PORT): run the script again to resume where the last run
# stopped; delete that folder to start afresh.
set -euo pipefail

# Creates/activates .venv and installs the package on first use; sets $_sa_root.
# shellcheck source=scripts/bootstrap.sh
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$_sa_root"

DEMO_HOST=127.0.0.1
DEMO_PORT=${DEMO_PORT:-8731}
DEMO_URL="http://$DEMO_HOST:$DEMO_PORT/"
# The demo's URLs carry the port: a crawl resumed on another port would spend
# its time on the first port's URLs, all refused.  Each port keeps its own.
DEMO_JOBDIR=crawls/demo
if [ "$DEMO_PORT" != 8731 ]; then
  DEMO_JOBDIR="crawls/demo-$DEMO_PORT"
fi
STARTUP_TIMEOUT=10

# Everything here talks to 127.0.0.1 only: never let an http_proxy from the
# environment (honoured by urllib and Scrapy) route it elsewhere.
export no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
export NO_PROXY="$no_proxy"

site_pid=""
site_log=""

stop_site() {
  if [ -n "$site_pid" ] && kill -0 "$site_pid" 2>/dev/null; then
    kill -TERM "$site_pid" 2>/dev/null || true
    wait "$site_pid" 2>/dev/null || true
  fi
  site_pid=""
  if [ -n "$site_log" ]; then
    rm -f "$site_log"
  fi
}

fail() {
  echo "demo.sh: $*" >&2
  exit 1
}

# The site runs in the background, where a non-interactive shell makes it
# ignore Ctrl-C; Ctrl-C therefore reaches only the crawl (which stops
# gracefully; press twice to force) and the EXIT trap then stops the site.
trap stop_site EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

site_log=$(mktemp "${TMPDIR:-/tmp}/scrapy-adaptive-demo.XXXXXX")
python -m testsite.demo --host "$DEMO_HOST" --port "$DEMO_PORT" \
  --speed "${DEMO_SPEED:-1}" --seed "${DEMO_SEED:-0}" >"$site_log" &
site_pid=$!

# Wait for *our* site's "Demo site on ..." line (so a different server already
# on the port is not mistaken for it), bounded, failing fast if it died.
deadline=$((SECONDS + STARTUP_TIMEOUT))
until grep -q '^Demo site on ' "$site_log"; do
  kill -0 "$site_pid" 2>/dev/null ||
    fail "the demo site exited (see the error above; if port $DEMO_PORT is busy, set DEMO_PORT)"
  [ "$SECONDS" -lt "$deadline" ] || fail "the demo site did not start within ${STARTUP_TIMEOUT} s"
  sleep 0.1
done
grep -v '^READY ' "$site_log" || true

# ...and check that it answers HTTP before the crawl starts.
python -c '
import json, sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(sys.argv[1] + "_demo/schedule", timeout=5) as response:
    pages = json.load(response)["pages"]
print("demo.sh: the demo site serves", len(pages), "URLs; crawling until Ctrl-C", flush=True)
' "$DEMO_URL" || fail "the demo site does not answer on $DEMO_URL"

cd sample_project
set +e
scrapy crawl demo -s "JOBDIR=$DEMO_JOBDIR" -s "DEMO_SITE_URL=$DEMO_URL" "$@"
status=$?
set -e
exit "$status"
