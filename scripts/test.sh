#!/usr/bin/env bash
# The test command README.md gives and CI runs: installs what it needs into
# .venv (first run only), then runs the whole suite.  Extra arguments go to
# pytest, e.g. `bash scripts/test.sh -k frontier -x`.
set -euo pipefail
# shellcheck source=scripts/bootstrap.sh
. "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$_sa_root"
exec python -m pytest "$@"
