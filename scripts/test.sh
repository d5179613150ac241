#!/usr/bin/env bash
# The test command README.md gives and CI runs: installs what it needs into
# .venv (first run only), then runs the whole suite, every hypothesis test at
# its full number of examples, on one pytest worker per core (at most 4; set
# ADAPTIVE_TEST_WORKERS=0 to run in this process).  Extra arguments go to
# pytest, e.g. `bash scripts/test.sh -k frontier -x`.
set -euo pipefail
# shellcheck source=scripts/bootstrap.sh
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$_sa_root"
export ADAPTIVE_TEST_EXAMPLES=${ADAPTIVE_TEST_EXAMPLES:-full}
_sa_cores=$(python -c 'import os; print(len(os.sched_getaffinity(0)))')
_sa_workers=${ADAPTIVE_TEST_WORKERS:-$((_sa_cores < 4 ? _sa_cores : 4))}
if [ "$_sa_workers" -gt 1 ]; then
  # whole files to a worker: a file's session servers and installs stay in one process
  exec python -m pytest -n "$_sa_workers" --dist loadfile "$@"
fi
exec python -m pytest "$@"
