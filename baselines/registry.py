"""What a scheduler name means: a built-in, a plug-in of an installed package, or an import path.

:func:`resolve_scheduler` is the one place that turns a name into a
scheduler class reference (:class:`SchedulerRef`); ``make_scheduler``,
``scheduler_class`` and the entry points' agent lists
(``falcon.plugins.resolve_agents``) all go through it. A name is

* a **built-in**: a key of :data:`baselines.SCHEDULERS`, or an entry point
  of the group ``falcon.schedulers`` that this project's own distribution
  (``falcon-mpsched``) declares, or any entry point to a class of the
  project's packages: the schedulers of higher layers, such as ``falcon``,
  which ``baselines`` must not import by name;
* a **plug-in**: an entry point of the group ``falcon.schedulers`` that any
  other installed distribution declares, e.g. in its ``pyproject.toml``::

      [project.entry-points."falcon.schedulers"]
      smooth_rtt = "extsched.smooth:SmoothedRTT"

  the entry point's name is the scheduler's name;
* an **import path** ``module:Class`` (a module importable from
  ``sys.path``); its name is the class's own ``name`` attribute (one the
  class sets itself, not one it inherits) or else the class's ``__name__``.

A name that means two different classes (a plug-in named like a built-in,
two distributions registering the same name, an import path whose class is
named like a built-in) is a :class:`~envs.errors.ConfigError`, never a silent
override. Every error is one line naming the problem.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass
from importlib import metadata

from envs.errors import ConfigError
from envs.scheduler import Scheduler

#: the entry-point group scheduler plug-ins register in
GROUP = "falcon.schedulers"
#: this project's distribution: its entry points of :data:`GROUP` are built-ins
PROJECT_DISTRIBUTION = "falcon-mpsched"
#: the project's packages: an entry point to a class in them is a built-in too
#: (whatever the distribution is called)
PROJECT_PACKAGES = ("envs", "baselines", "metalearning", "falcon")


@dataclass(frozen=True)
class SchedulerRef:
    """A resolved scheduler name (nothing imported yet but what resolving needed)."""

    name: str  #: the name results carry
    target: str  #: ``module:Class``
    origin: str  #: ``builtin``, ``plugin`` or ``import path``
    distribution: str | None = None  #: the installed distribution declaring it (plug-ins)
    version: str | None = None  #: that distribution's version
    entry_point: str | None = None  #: ``name = module:Class`` as declared (plug-ins)

    def load(self) -> type:
        """The scheduler class (imported on first use); a one-line ConfigError if it cannot be."""
        if self.origin == "builtin" and self.entry_point is None:
            return _builtin_class(self.name)
        return load_target(self.target, self.describe())

    def describe(self) -> str:
        """``plug-in 'x' (dist 1.0, mod:Cls)``: the reference as error messages name it."""
        if self.origin == "plugin":
            return f"plug-in {self.name!r} ({self.distribution} {self.version}, {self.target})"
        return f"scheduler {self.name!r} ({self.target})"

    @property
    def dotted(self) -> str:
        """The target as Hydra's ``_target_`` spells it (``module.Class``)."""
        return self.target.replace(":", ".")


def _normalise(dist: str | None) -> str:
    return re.sub(r"[-_.]+", "-", dist or "").lower()


def _one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


def load_target(target: str, what: str) -> type:
    """Import ``module:Class`` (``Class`` may be dotted) and check that it is a
    scheduler class (an :class:`envs.scheduler.Scheduler` subclass)."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"{what}: expected an import path module:Class, got {target!r}")
    try:
        obj = importlib.import_module(module)
    except Exception as e:  # an import failure of user code: any exception
        raise ConfigError(f"{what}: cannot import module {module!r}: {_one_line(e)}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{what}: module {module!r} has no attribute {attr!r}") from None
    if not (isinstance(obj, type) and issubclass(obj, Scheduler)):
        raise ConfigError(
            f"{what}: {target} is not a scheduler class (a subclass of envs.scheduler.Scheduler)"
        )
    return obj


def _builtin_class(name: str) -> type:
    from baselines import SCHEDULERS

    entry = SCHEDULERS[name]
    if isinstance(entry, str):
        entry = load_target(entry, f"scheduler {name!r}")
        SCHEDULERS[name] = entry
    return entry


def _target_of(entry) -> str:
    return entry if isinstance(entry, str) else f"{entry.__module__}:{entry.__qualname__}"


#: the entry points of GROUP as last read, and the sys.path they were read from
_SCANNED: dict = {"path": None, "entry_points": ()}


def rescan() -> None:
    """Read the installed distributions' entry points again at the next
    resolution (they are read once per value of ``sys.path``: reading them
    costs tens of ms, and make_scheduler runs in loops)."""
    _SCANNED["path"] = None


def _entry_points() -> tuple[tuple[str, str, str | None, str | None], ...]:
    """(name, value, distribution, version) of every entry point of GROUP."""
    if _SCANNED["path"] != sys.path:
        found = []
        for ep in metadata.entry_points(group=GROUP):
            dist = (ep.dist.name, ep.dist.version) if ep.dist is not None else (None, None)
            found.append((ep.name, ep.value, *dist))
        _SCANNED["entry_points"] = tuple(found)
        _SCANNED["path"] = list(sys.path)
    return _SCANNED["entry_points"]


#: the last :func:`registered` answer and what it was made from
_REGISTERED: dict = {"entry_points": None, "schedulers": (), "answer": None}


def registered() -> tuple[dict[str, SchedulerRef], dict[str, list[SchedulerRef]]]:
    """(built-ins by name, plug-ins by name: every distribution that registers
    the name, so a list of two is a clash). The installed distributions'
    entry points are read again whenever ``sys.path`` has changed (a
    distribution put on it at run time counts; :func:`rescan` forces it).
    The answer is kept until the entry points or ``baselines.SCHEDULERS``
    change (every scheduler an experiment makes resolves its name here, and
    building the answer cost about 35 us); each call gets its own copy."""
    from baselines import SCHEDULERS

    entry_points = _entry_points()
    schedulers = tuple(SCHEDULERS.items())
    kept = _REGISTERED
    if (
        kept["entry_points"] is not entry_points
        or len(kept["schedulers"]) != len(schedulers)
        or any(a[0] != b[0] or a[1] is not b[1] for a, b in zip(kept["schedulers"], schedulers))
    ):
        kept.update(
            entry_points=entry_points,
            schedulers=schedulers,
            answer=_registered(SCHEDULERS, entry_points),
        )
    builtins, plugins = kept["answer"]
    return dict(builtins), {n: list(refs) for n, refs in plugins.items()}


def _registered(schedulers: dict, entry_points: tuple) -> tuple[dict, dict]:
    builtins = {n: SchedulerRef(n, _target_of(e), "builtin") for n, e in schedulers.items()}
    plugins: dict[str, list[SchedulerRef]] = {}
    seen = set()
    for name, value, dist, version in entry_points:
        key = (name, value, _normalise(dist))
        if key in seen:  # one distribution found twice on sys.path
            continue
        seen.add(key)
        own = _normalise(dist) == PROJECT_DISTRIBUTION or value.split(".")[0] in PROJECT_PACKAGES
        origin = "builtin" if own else "plugin"
        ref = SchedulerRef(name, value, origin, dist, version, f"{name} = {value}")
        if origin == "builtin" and name not in builtins:
            builtins[name] = ref
        elif origin == "plugin":
            plugins.setdefault(name, []).append(ref)
    return builtins, plugins


def _clash(name: str, refs: list[SchedulerRef]) -> ConfigError:
    what = " and ".join(r.describe() if r.origin == "plugin" else "the built-in" for r in refs)
    return ConfigError(
        f"scheduler name {name!r} is ambiguous: {what} both use it "
        f"(rename the plug-in's entry point, or uninstall one)"
    )


def _from_import_path(path: str, builtins: dict, plugins: dict) -> SchedulerRef:
    cls = load_target(path, f"import path {path!r}")
    own = cls.__dict__.get("name")
    name = own if isinstance(own, str) and own else cls.__name__
    same = f"{cls.__module__}:{cls.__qualname__}"
    for ref in [builtins.get(name), *plugins.get(name, [])]:
        if ref is not None and ref.target not in (path, same):
            raise ConfigError(
                f"import path {path!r}: its name {name!r} is already {ref.describe()}; "
                f"give the class its own name attribute"
            )
    if name in builtins:
        return builtins[name]
    return SchedulerRef(name, path, "import path")


#: per name (not an import path): the entry points and the ``baselines.SCHEDULERS``
#: entry it was resolved from, and the reference
_RESOLVED: dict[str, tuple] = {}


def resolve_scheduler(name: str) -> SchedulerRef:
    """What ``name`` means (module docstring): a built-in, a plug-in's
    entry-point name, or an import path ``module:Class``. Raises a one-line
    :class:`~envs.errors.ConfigError` for an unknown or ambiguous name and for
    an import path that cannot be imported.

    A name's answer depends only on the installed entry points and on its own
    entry of ``baselines.SCHEDULERS``, so it is kept per name while both are
    the same objects: an experiment makes a scheduler per episode, and
    :func:`registered`'s copies cost about 5 us (20-40 us after an episode
    has left them out of the CPU's caches)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"scheduler name: expected a non-empty string, got {name!r}")
    if ":" in name:
        builtins, plugins = registered()
        return _from_import_path(name, builtins, plugins)
    from baselines import SCHEDULERS

    entry_points, entry = _entry_points(), SCHEDULERS.get(name)
    kept = _RESOLVED.get(name)
    if kept is not None and kept[0] is entry_points and kept[1] is entry:
        return kept[2]
    builtins, plugins = registered()
    found = ([builtins[name]] if name in builtins else []) + plugins.get(name, [])
    if len(found) > 1:
        raise _clash(name, found)
    if not found:
        known = ", ".join(sorted({*builtins, *plugins}))
        raise ConfigError(
            f"unknown scheduler {name!r}; known: {known} (or an import path module:Class)"
        )
    _RESOLVED[name] = (entry_points, entry, found[0])
    return found[0]


def scheduler_names() -> dict[str, str]:
    """Every known name -> ``builtin`` or ``plugin`` (clashing plug-ins included)."""
    builtins, plugins = registered()
    return {n: "plugin" for n in plugins} | {n: "builtin" for n in builtins}


__all__ = [
    "GROUP",
    "PROJECT_DISTRIBUTION",
    "PROJECT_PACKAGES",
    "SchedulerRef",
    "load_target",
    "registered",
    "rescan",
    "resolve_scheduler",
    "scheduler_names",
]
