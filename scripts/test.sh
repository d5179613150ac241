#!/usr/bin/env bash
# The test command README.md gives and CI runs: installs what it needs into
# .venv (first run only), then runs the whole suite, every hypothesis test at
# its full number of examples, on two pytest workers per core (at most 6; set
# ADAPTIVE_TEST_WORKERS=N to choose, 0 to run in this process).  Two per core
# because the suite mostly waits (crawls sleeping out politeness delays and
# waits, servers answering): its CPU time is about a third of its worker
# time, so a second worker per core runs while the first one waits.  Extra
# arguments go to pytest, e.g. `bash scripts/test.sh -k frontier -x`.
set -euo pipefail
# shellcheck source=scripts/bootstrap.sh
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$_sa_root"
export ADAPTIVE_TEST_EXAMPLES=${ADAPTIVE_TEST_EXAMPLES:-full}
_sa_cores=$(python -c 'import os; print(len(os.sched_getaffinity(0)))')
_sa_workers=${ADAPTIVE_TEST_WORKERS:-$((2 * _sa_cores < 6 ? 2 * _sa_cores : 6))}
if [ "$_sa_workers" -gt 1 ]; then
  # whole files to a worker: a file's session servers and installs stay in one process
  exec python -m pytest -n "$_sa_workers" --dist loadfile "$@"
fi
exec python -m pytest "$@"
