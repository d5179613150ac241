#!/usr/bin/env bash
# The test command README.md gives and CI runs: installs what it needs into
# .venv (first run only), then runs the whole suite, every hypothesis test at
# its full number of examples, on three pytest workers per core (at most 6;
# set ADAPTIVE_TEST_WORKERS=N to choose, 0 to run in this process).  Three per
# core because the suite mostly waits (crawls sleeping out politeness delays
# and waits, servers answering): its CPU time is about a quarter of its worker
# time, so the other workers run while one waits (on 2 cores: 6 workers
# about 5.6 min, 4 about 7, 2 about 10).  Extra
# arguments go to pytest, e.g. `bash scripts/test.sh -k frontier -x`.
set -euo pipefail
# shellcheck source=scripts/bootstrap.sh
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$_sa_root"
export ADAPTIVE_TEST_EXAMPLES=${ADAPTIVE_TEST_EXAMPLES:-full}
_sa_cores=$(python -c 'import os; print(len(os.sched_getaffinity(0)))')
_sa_workers=${ADAPTIVE_TEST_WORKERS:-$((3 * _sa_cores < 6 ? 3 * _sa_cores : 6))}
if [ "$_sa_workers" -gt 1 ]; then
  # whole files to a worker: a file's session servers and installs stay in one process
  exec python -m pytest -n "$_sa_workers" --dist loadfile "$@"
fi
exec python -m pytest "$@"
