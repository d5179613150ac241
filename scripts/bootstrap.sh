# Sourced by scripts/demo.sh and scripts/test.sh (and .ci/run through them):
# creates .venv at the repo root with Python 3.11 or 3.12 if it is missing,
# installs the package with its test extras when setup.cfg changed, and
# activates it.  Safe to source repeatedly; only pip talks to the network.
_sa_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_sa_python=${PYTHON:-}
if [ -z "$_sa_python" ]; then
  for _sa_candidate in python3.12 python3.11 python3; do
    if command -v "$_sa_candidate" >/dev/null 2>&1 &&
      "$_sa_candidate" -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 12) else 1)' 2>/dev/null; then
      _sa_python=$_sa_candidate
      break
    fi
  done
fi
if [ -z "$_sa_python" ]; then
  echo "scrapy-adaptive needs Python 3.11 or 3.12 (set PYTHON=/path/to/python3.11)" >&2
  return 1 2>/dev/null || exit 1
fi
if [ ! -x "$_sa_root/.venv/bin/python" ]; then
  echo "Creating $_sa_root/.venv with $_sa_python" >&2
  "$_sa_python" -m venv "$_sa_root/.venv" || { return 1 2>/dev/null || exit 1; }
fi
# shellcheck disable=SC1091
. "$_sa_root/.venv/bin/activate"
_sa_stamp="$_sa_root/.venv/.installed-$(cat "$_sa_root/setup.cfg" "$_sa_root/pyproject.toml" | cksum | cut -d' ' -f1)"
if [ ! -f "$_sa_stamp" ]; then
  echo "Installing scrapy-adaptive and its test dependencies into .venv" >&2
  python -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  python -m pip install --quiet -e "$_sa_root[test]" || { return 1 2>/dev/null || exit 1; }
  rm -f "$_sa_root"/.venv/.installed-*
  touch "$_sa_stamp"
fi
unset _sa_python _sa_candidate _sa_stamp
