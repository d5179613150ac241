"""Scrapy's own crawl, engine, scheduler, signal and middleware tests pass with the add-on switched on.

The promise is "add one line to any Scrapy project".  Scrapy's test files
for what the add-on touches (:data:`tests.compat.run.FILES`, from the sdist
of the installed Scrapy) run in a subprocess with the add-on on every
crawler they create (:mod:`tests.compat.adaptive_compat`).  Every test that
fails there and is not a documented difference (docs/compat.md's table) is
run again plainly: one that passes plainly fails this test, named, with its
failure's last lines.  A documented test that no longer fails with the
add-on, or no longer exists, fails it too, so the page cannot drift.
"""

from __future__ import annotations

import pytest

from tests.compat import run, sdist

#: hard limits (seconds) of the two subprocess runs: the add-on run takes ~25 s on an idle
#: 2-core machine, and the whole suite must stay within 10 minutes
ADDON_RUN_TIMEOUT = 200
PLAIN_RERUN_TIMEOUT = 100


@pytest.mark.e2e
@pytest.mark.compat
@pytest.mark.timeout(ADDON_RUN_TIMEOUT + PLAIN_RERUN_TIMEOUT + 60)
def test_scrapy_tests_pass_with_the_addon() -> None:
    try:
        root = sdist.scrapy_tests()
    except sdist.SdistError as exc:
        pytest.fail(f"Scrapy's tests are not available: {exc}", pytrace=False)
    known = run.documented()
    with_addon = run.run(root, run.files(root), addon=True, timeout=ADDON_RUN_TIMEOUT)
    if with_addon.returncode is None:
        pytest.fail(
            f"the run of Scrapy's tests with the add-on passed its hard timeout of {ADDON_RUN_TIMEOUT}s "
            f"({len(with_addon.outcomes)} tests finished); its last lines:\n{_last(with_addon.output)}",
            pytrace=False,
        )
    if not with_addon.outcomes:
        pytest.fail(f"no test of Scrapy's ran with the add-on; pytest said:\n{_last(with_addon.output)}", pytrace=False)

    problems: list[str] = []
    stale = sorted(
        nodeid for nodeid in known if with_addon.outcomes.get(nodeid, run.Outcome("gone")).outcome != "failed"
    )
    for nodeid in stale:
        state = with_addon.outcomes[nodeid].outcome if nodeid in with_addon.outcomes else "not collected"
        problems.append(f"{nodeid}: documented in docs/compat.md as a difference, but {state} with the add-on")

    suspects = sorted(n for n, o in with_addon.outcomes.items() if o.outcome == "failed" and n not in known)
    if suspects:
        plain = run.run(root, suspects, addon=False, timeout=PLAIN_RERUN_TIMEOUT)
        if plain.returncode is None:
            problems.append(
                f"the plain re-run of {len(suspects)} tests passed its hard timeout of {PLAIN_RERUN_TIMEOUT}s"
            )
        for nodeid in suspects:
            if plain.outcomes.get(nodeid, run.Outcome("missing")).outcome == "passed":
                tail = with_addon.outcomes[nodeid].tail().replace("\n", "\n    ")
                problems.append(f"{nodeid}: passes plainly, fails with the add-on:\n    {tail}")
    if problems:
        pytest.fail(
            f"{len(problems)} difference(s) between Scrapy's tests with the add-on and without it, "
            "not documented in docs/compat.md:\n" + "\n".join(problems),
            pytrace=False,
        )


def _last(output: str, lines: int = 15) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])
