"""The stack of wait policies: first match decides, the catch-all last.

Built from ``ADAPTIVE_WAIT_POLICIES`` (a list of dicts: match criteria as in
:mod:`scrapy_adaptive.config.matching`, the lower-case wait keys ``initial``,
``default``, ``min``, ``max``, ``changed_factor``, ``unchanged_factor``,
``use_overdue``, ``no_last_modified_factor``, ``depth_factor``, and an
optional ``policy`` class path) on top of the catch-all made of the
``ADAPTIVE_WAIT_*`` settings.  An entry inherits every number it does not
set from the catch-all.  The default stack is the thesis's: text, then
images, then everything else (TextWaitEvaluator, ImageWaitEvaluator,
WaitEvaluator), text starting at half the catch-all's initial wait and
images at twice it (Heritrix's 12 h and 48 h against 24 h).
"""

from __future__ import annotations

import importlib
import json
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..config.matching import MATCH_KEYS, Matcher, check_entries
from ..config.settings import AdaptiveConfig
from ..config.spec import ConfigError, clause
from ..config.table import SPECS_BY_NAME
from ..frontier.hints import Hint
from ..model import SIGNAL_UNREADABLE, Outcome, Plan, Visit
from .base import PARAM_KEYS, WaitParams, WaitPolicy, decides
from .crawl_state import CrawlWide
from .history import url_host
from .schedules import Scheduled, Schedules, is_schedule, schedules_of

logger = logging.getLogger(__name__)

#: request overrides whose policies are kept built (the least recently used go first)
OVERRIDES_KEPT = 4096

#: (content type, factor on the catch-all's initial wait): Heritrix's
#: 12 h / 48 h against 24 h, kept as ratios so that a project scaling
#: ADAPTIVE_WAIT_INITIAL scales the whole default stack with it
DEFAULT_STACK: tuple[tuple[str, float], ...] = (("text/*", 0.5), ("image/*", 2.0))


def load_class_path(path: str) -> Any:
    """The object a ``module.Name`` path names (what Scrapy's ``load_object``
    does, without Scrapy: the policies stay importable on their own).

    >>> load_class_path("scrapy_adaptive.policies.BurstWaitPolicy").__name__
    'BurstWaitPolicy'
    """
    module_name, dot, name = path.rpartition(".")
    if not dot or not module_name or not name:
        raise ValueError("not a full path of the form module.Name")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, name)
    except AttributeError:
        raise NameError(f"module {module_name!r} defines no object named {name!r}") from None


def load_policy_class(path: str, where: str) -> type[WaitPolicy]:
    """The policy class a setting names, refused unless it can be built:
    an abstract class would only fail at its first use, with a traceback."""
    try:
        cls = load_class_path(path)
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{where} ({path!r}) cannot be imported: {exc}") from None
    except Exception as exc:  # the project's module itself fails (a SyntaxError, a KeyError at import)
        raise ConfigError(f"{where} ({path!r}) cannot be imported: {type(exc).__name__}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, WaitPolicy)) or cls is PolicyStack:
        raise ConfigError(f"{where} ({path!r}) must name a WaitPolicy subclass.")
    if not decides(cls):
        raise ConfigError(f"{where} ({path!r}) must name a concrete WaitPolicy subclass, not an abstract one.")
    return cls


def build_policy(cls: type[WaitPolicy], params: WaitParams, where: str) -> WaitPolicy:
    """``cls.from_params(params)``, a :class:`ConfigError` naming *where* if
    the class cannot be built (a subclass whose ``__init__`` wants more than
    ``from_params`` gives it, or raises whatever else): refused at start-up,
    not a traceback."""
    try:
        return cls.from_params(params)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"{where} ({class_path(cls)!r}) cannot be built from its wait settings: {type(exc).__name__}: {exc}"
        ) from None


def class_path(cls: type) -> str:
    """``module.Name`` of a class, as a setting would name it."""
    return f"{cls.__module__}.{cls.__qualname__}"


def builtin_policies() -> dict[str, type[WaitPolicy]]:
    """The concrete policies :mod:`scrapy_adaptive.policies` exports, by the
    path a setting names them with (``scrapy_adaptive.policies.Name``).

    Imported when called: the package imports this module.
    """
    package = importlib.import_module(__package__ or "scrapy_adaptive.policies")
    found = {}
    for name in getattr(package, "__all__", ()):
        obj = getattr(package, name, None)
        if isinstance(obj, type) and issubclass(obj, WaitPolicy) and obj is not PolicyStack:
            if decides(obj):
                found[f"{package.__name__}.{name}"] = obj
    return found


def override_table(declared: Mapping[str, type[WaitPolicy]]) -> dict[str, type[WaitPolicy]]:
    """What a request's ``meta["adaptive_wait_policy"]["policy"]`` may name.

    Only classes the settings declared (*declared*: the path as written, to
    its class) and the built-ins, each by the path written, its defining
    module's path and its short name (the short name only when no two of the
    classes share it).  A request's meta is stored in the state folder (or a
    Redis value) and read back on every revisit: resolving it by import would
    let whoever can write there run code in the crawl.
    """
    classes: dict[str, type[WaitPolicy]] = {**builtin_policies(), **declared}
    table = dict(classes)
    for cls in classes.values():
        table.setdefault(class_path(cls), cls)
    short: dict[str, set[type[WaitPolicy]]] = {}
    for path, cls in classes.items():  # a class's name, and an old name it is exported under
        short.setdefault(cls.__name__, set()).add(cls)
        short.setdefault(path.rsplit(".", 1)[-1], set()).add(cls)
    for name, found in short.items():
        if len(found) == 1:
            table.setdefault(name, next(iter(found)))
    return table


class PolicyStack(WaitPolicy):
    """Dispatches each visit to the first policy whose criteria match."""

    def __init__(
        self,
        entries: list[tuple[Matcher, WaitPolicy]],
        catch_all: WaitPolicy,
        params: WaitParams,
        cls: type[WaitPolicy],
        declared: Mapping[str, type[WaitPolicy]] | None = None,
        schedules: Schedules | None = None,
    ) -> None:
        self.entries = entries
        #: the curated windows laid over whichever policy decides (:mod:`.schedules`)
        self.schedules = schedules if schedules is not None else Schedules()
        self.catch_all = catch_all
        self.params = params
        self.cls = cls
        #: policies built for requests' overrides, the most recently used last (at most OVERRIDES_KEPT)
        self._overrides: OrderedDict[str, WaitPolicy] = OrderedDict()
        #: the policies a request's override may name (never imported from it)
        self.allowed = override_table({class_path(cls): cls, **(declared or {})})
        #: policy names an override was ignored for (each warned about once)
        self._refused: set[str] = set()
        #: parsing the URL for its host is wasted when no entry matches on hosts
        self._by_host = any(matcher.hosts for matcher, _ in entries)

    @classmethod
    def from_config(cls, config: AdaptiveConfig) -> PolicyStack:
        policy_cls = load_policy_class(config.wait_policy, "ADAPTIVE_WAIT_POLICY")
        params = WaitParams(
            initial=config.wait_initial,
            default=config.wait_default,
            minimum=config.wait_min,
            maximum=config.wait_max,
            changed_factor=config.wait_changed_factor,
            unchanged_factor=config.wait_unchanged_factor,
            use_overdue=config.wait_use_overdue,
            depth_factor=config.wait_depth_factor,
            budget=config.budget,
            budget_window=config.budget_window,
            target_precision=config.target_precision,
            objective=config.objective,
            # what the stack's policies share: one budget and its spenders, built here, once
            crawl=CrawlWide(),
        )
        params.check("ADAPTIVE_WAIT_*")
        raw = config.wait_policies
        if raw is None:
            # held to the setting's own limit: a long ADAPTIVE_WAIT_INITIAL the
            # table allows is not refused under the name of an entry nobody wrote
            longest = SPECS_BY_NAME["ADAPTIVE_WAIT_INITIAL"].at_most or params.initial
            raw = [
                {"content_type": ct, "initial": min(params.initial * factor, longest)} for ct, factor in DEFAULT_STACK
            ]
        # the catch-all first: what the policies of a stack share for the
        # whole crawl (the rate allocator, with its bounds) is made by the
        # first one built, and must not be made from an entry's numbers
        catch_all = build_policy(policy_cls, params, "ADAPTIVE_WAIT_POLICY")
        entries = []
        declared = {config.wait_policy: policy_cls}
        listed = check_entries(raw, "ADAPTIVE_WAIT_POLICIES")
        schedules = schedules_of(listed, "ADAPTIVE_WAIT_POLICIES")
        for i, entry in enumerate(listed):
            where = f"ADAPTIVE_WAIT_POLICIES[{i}]"
            if is_schedule(entry):  # an overlay, not a policy: it never decides alone
                continue
            unknown = set(entry) - set(PARAM_KEYS) - set(MATCH_KEYS) - {"policy"}
            if unknown:
                raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}.")
            # what the entry applies to first: an entry without a match key
            # is a misplaced catch-all, whatever else is wrong with it
            matcher = Matcher.parse(entry, where, catch_all="ADAPTIVE_WAIT_POLICY and the ADAPTIVE_WAIT_* settings")
            entry_cls = load_policy_class(entry["policy"], f"{where}['policy']") if "policy" in entry else policy_cls
            declared[entry.get("policy", config.wait_policy)] = entry_cls
            entry_where = f"{where}['policy']" if "policy" in entry else "ADAPTIVE_WAIT_POLICY"
            entries.append((matcher, build_policy(entry_cls, params.updated(entry, where), entry_where)))
        return cls(entries, catch_all, params, policy_cls, declared, schedules)

    def select(self, visit: Visit) -> WaitPolicy:
        url = visit.url or ""
        # the match criterion is the URL's host, not its queue
        host = url_host(url) if self._by_host else ""
        for matcher, policy in self.entries:
            if matcher.matches(url, host, visit.content_type):
                return policy
        return self.catch_all

    def with_overrides(self, overrides: Mapping[str, Any], url: str = "") -> WaitPolicy:
        """The policy for a request carrying ``meta["adaptive_wait_policy"]``.

        The catch-all's numbers with the request's applied; cached, since
        the same override usually comes with many requests.  An invalid
        override is reported once and ignored: the stack itself is returned.

        A ``policy`` is looked up in :attr:`allowed` (the settings' policies
        and the built-ins), never imported: the override comes back from the
        state folder on every revisit, and the state folder is data.
        """
        key = json.dumps(overrides, sort_keys=True, default=str)
        policy = self._overrides.get(key)
        if policy is not None:
            self._overrides.move_to_end(key)
        else:
            # every refusal names the request's URL, as the other meta keys' do
            where = f"meta['adaptive_wait_policy'] of {url}" if url else "meta['adaptive_wait_policy']"
            try:
                unknown = sorted(set(overrides) - set(PARAM_KEYS) - {"policy"})
                if unknown:
                    raise ConfigError(
                        f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                        f"use 'policy' and {', '.join(map(repr, PARAM_KEYS))}"
                    )
                cls = self.cls
                if "policy" in overrides:
                    name = overrides["policy"]
                    found = self.allowed.get(name) if isinstance(name, str) else None
                    if found is None:
                        self._refuse(name, url)
                        self._keep(key, self)
                        return self
                    cls = found
                policy = Scheduled(build_policy(cls, self.params.updated(overrides, where), where), self.schedules)
            except ConfigError as exc:
                logger.error("%s; using the configured policies instead.", clause(exc))
                policy = self
            self._keep(key, policy)
        return policy

    def _keep(self, key: str, policy: WaitPolicy) -> None:
        """Cache an override's policy.  Bounded: a spider that gives each URL
        its own numbers (``{"initial": computed}``) would otherwise keep a
        policy object per URL for the life of the crawl; one evicted is
        rebuilt when its override comes again (a policy holds configuration
        only, its learned state is crawl-wide)."""
        self._overrides[key] = policy
        if len(self._overrides) > OVERRIDES_KEPT:
            self._overrides.popitem(last=False)

    def _refuse(self, name: Any, url: str) -> None:
        """Says once per name that an override's policy is not one of :attr:`allowed`."""
        label = repr(name)
        if label in self._refused or len(self._refused) >= OVERRIDES_KEPT:
            return
        self._refused.add(label)
        logger.warning(
            "%s: meta['adaptive_wait_policy'] names the policy %s, which is neither a built-in policy nor one "
            "declared by ADAPTIVE_WAIT_POLICY or ADAPTIVE_WAIT_POLICIES; the override is ignored (the configured "
            "policies apply) and nothing is imported.",
            url or "a request",
            label,
        )

    def plan(self, history: Mapping[str, Any], visit: Visit, *, override: WaitPolicy | None = None) -> Plan:
        """The plan after *visit*: *override* (a request's own policy) or the
        stack decides, except for a sitemap or feed that could not be read.

        A broken sitemap waits twice as long as the last time, from at least
        the default wait, within the catch-all's bounds: a policy that
        re-reads sitemaps often must not re-read a broken one as often, and a
        failure in a row backs off further.  Its memory is left as it was:
        a failed read says nothing of how often the sitemap changes.
        """
        if SIGNAL_UNREADABLE in visit.annotations:
            last = history.get("wait")
            last = float(last) if type(last) in (int, float) else 0.0
            return Plan(self.params.clamp(2 * max(last, self.params.default)))
        if override is not None and override is not self:
            return override.plan(history, visit)
        policy = self.select(visit) if self.entries else self.catch_all
        return self.schedules.bound_plan(policy.plan(history, visit), visit)

    def hint_wait(self, history: Mapping[str, Any], hint: Hint) -> float | None:
        """Asks the policy that will judge the URL's next visit (matched on
        the URL and the content type of its last visit)."""
        probe = Visit(
            Outcome.VISITED, url=hint.url, content_type=history.get("content_type"), queue=history.get("queue")
        )
        return self.select(probe).hint_wait(history, hint)

    def recheck_wait(self, history: Mapping[str, Any]) -> float | None:
        """Asks the policy that judged the URL's last visit."""
        return self._judged_by(history).recheck_wait(history)

    def header_doubtful(self, history: Mapping[str, Any]) -> bool:
        """Asks the policy that judged the URL's last visit."""
        return self._judged_by(history).header_doubtful(history)

    def _judged_by(self, history: Mapping[str, Any]) -> WaitPolicy:
        url, content_type, queue = history.get("url"), history.get("content_type"), history.get("queue")
        return self.select(Visit(Outcome.VISITED, url=url, content_type=content_type, queue=queue))


def load_wait_policy(config: AdaptiveConfig) -> PolicyStack:
    """The stack configured by the ``ADAPTIVE_WAIT_*`` settings."""
    return PolicyStack.from_config(config)
