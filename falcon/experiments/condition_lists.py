"""The learnability suite's condition lists and the trace split they keep to.

A list is the config group ``conditions=`` (``configs/conditions/<list>.yaml``)
and sets ``learnability.split`` to its name. Which trace files its
conditions may load (``data/traces/split.yaml``, :mod:`envs.traces.split`):

* ``dev``: files of any split but test (the development conditions);
* ``train``, ``validation``, ``test``: files of that split only.

Synthetic paths and the Table I presets carry no file and may appear in
any list. On the ``test`` list no learner runs (only rules, the references
and deployed schedulers): test files are for reporting. Every check here
runs before any job and fails with one line naming the condition, the path,
the file and its split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envs.errors import ConfigError, FalconInputError, is_whole_number

#: list name -> the splits its trace files may have (None: a file the split does not list)
ALLOWED_SPLITS: dict[str, tuple[str | None, ...]] = {
    "dev": ("train", "validation", None),
    "train": ("train",),
    "validation": ("validation",),
    "test": ("test",),
}
#: the lists on which learners (agents trained on the condition) may not run
NO_LEARNERS = ("test",)


def check_list_name(sec: Mapping, job: str) -> str:
    """``sec["split"]``: the name of a condition list."""
    name = sec.get("split")
    if name not in ALLOWED_SPLITS:
        raise ConfigError(
            f"{job}.split: expected one of {', '.join(ALLOWED_SPLITS)} (the conditions= list), "
            f"got {name!r}"
        )
    return name


def trace_files(scenario: Mapping) -> list[tuple[int, str]]:
    """``(path index, trace file as given)`` of every path of ``scenario``
    whose capacity comes from a trace file."""
    from envs.scenario import normalise_scenario

    out = []
    for i, p in enumerate(normalise_scenario(scenario)["paths"]):
        spec = p.get("trace")
        if isinstance(spec, Mapping):
            spec = spec.get("file")
        if spec is not None:
            out.append((i, str(spec)))
    return out


def _allowed(name: str) -> str:
    if name == "dev":
        return "files of any split but test"
    return f"{name} files only"


def check_list_files(
    conditions: Sequence[Mapping], name: str, job: str, takes: str | None = None
) -> None:
    """Every trace file of ``conditions`` (validated conditions ``{index,
    name, scenario}``) is of a split the list ``name`` allows; the split
    file's checksums are verified first. A ``dev`` list runs without a split
    file (a data folder without one has no test files)."""
    from envs.traces.catalog import resolve_trace_path
    from envs.traces.split import split_file, verify

    files = [(c, i, f) for c in conditions for i, f in trace_files(c["scenario"])]
    if not files or (name == "dev" and not split_file().is_file()):
        return
    split = verify()
    allowed = ALLOWED_SPLITS[name]
    for c, i, f in files:
        try:
            entry = split.entry_of(resolve_trace_path(f))
        except FalconInputError as e:
            raise ConfigError(
                f"{job}.conditions[{c['index']}] ({c['name']}): paths[{i}]: {e}"
            ) from None
        got = entry.split if entry is not None else None
        if got not in allowed:
            what = f"a {got} file" if got is not None else "in no split (not listed)"
            raise ConfigError(
                f"{job}.conditions[{c['index']}] ({c['name']}): paths[{i}].trace {f} is {what} "
                f"of {split.source.name}; {takes or f'the {name} list takes {_allowed(name)}'}"
            )


def training_tasks(name, where: str) -> list[tuple[dict, dict]]:
    """``[(scenario, app), ...]`` of the condition list ``name``
    (``configs/conditions/<name>.yaml``), for a learner trained on a whole
    list (``train: {conditions: NAME}``; :meth:`baselines.modes.DQNModes.fit`'s
    ``tasks``). Only the ``train`` and ``validation`` lists: the dev list
    holds the development conditions a suite scores, the test list's files
    are for reporting. Every file is checked against the list's split first."""
    if name not in ("train", "validation"):
        raise ConfigError(
            f"{where}: a learner trains on the train or validation condition list, got {name!r}"
        )
    return _list_tasks(name, name, where)


#: the condition lists a generalist may also train on (``train.in_sample``):
#: lists it is then scored on in sample, like a learner trained per condition
IN_SAMPLE_LISTS = ("dev",)


def in_sample_tasks(name, where: str) -> list[tuple[dict, dict]]:
    """``[(scenario, app), ...]`` of the development list ``name`` for a
    generalist that also trains on it (``train: {in_sample: dev}``): the
    conditions its suite run scores in sample, as DQN-Off is trained on each
    of them. Every trace file must be a train file (the dev list may hold
    validation files; a learner trained on one would no longer be out of
    sample there), checked against the split file first."""
    if name not in IN_SAMPLE_LISTS:
        raise ConfigError(
            f"{where}: a generalist also trains in sample on {' or '.join(IN_SAMPLE_LISTS)}, "
            f"got {name!r}"
        )
    return _list_tasks(name, "train", where, takes="a generalist trains on train files only")


def list_conditions(
    name: str, where: str, files_of: str | None = None, takes: str | None = None
) -> list:
    """The checked conditions (``{name, scenario, app}``, the app normalised)
    of the list ``configs/conditions/<name>.yaml``, after
    :func:`check_list_files` (the files a list ``files_of``, default ``name``, may hold)."""
    from falcon.config import load_group, to_plain
    from falcon.experiments.learnability_settings import check_conditions

    sec = to_plain(load_group("conditions", name)).get("learnability") or {}
    conditions = check_conditions(sec.get("conditions"), None)
    check_list_files(conditions, name if files_of is None else files_of, where, takes)
    return conditions


def _list_tasks(name: str, files_of: str, where: str, takes: str | None = None) -> list:
    """``[(scenario, app), ...]`` of :func:`list_conditions`."""
    return [(c["scenario"], c["app"]) for c in list_conditions(name, where, files_of, takes)]


def recombined_tasks(tasks: Sequence[tuple], n: int, seed: int) -> list[tuple[dict, dict]]:
    """``n`` more tasks made of the paths of ``tasks`` (``[(scenario, app),
    ...]`` of two-path scenarios): path 0 of one condition beside path 1 of
    another, each path spec as its condition gives it (trace, window, RTT),
    with the default app (a 2 MB bulk download).

    Why: a generalist trained on a list's 13 pairs has seen 13 points of the
    space of conditions, and its Q-values reorder on states between them;
    recombining the list's own paths gives it hundreds of pairs without a
    file from outside the list's split. A pair whose two paths read the same
    trace file, or that is already one of ``tasks``, is left out. Drawn
    without replacement in an order fixed by ``seed``; at most every
    eligible pair (fewer than ``n`` is an error that names both numbers)."""
    import json

    import numpy as np

    from envs.apps import normalise_app
    from falcon.experiments.learnability_settings import DEFAULT_APP

    if not is_whole_number(n, 0):
        raise ConfigError(f"train.recombined: expected a whole number >= 0, got {n!r}")
    if n == 0:
        return []
    key = lambda spec: json.dumps(spec, sort_keys=True, default=str)  # noqa: E731
    firsts, seconds, files, listed = {}, {}, {}, set()
    for scen, _ in tasks:
        paths = list(scen["paths"])
        if len(paths) != 2:
            raise ConfigError(
                f"train.recombined: every condition needs 2 paths, one has {len(paths)}"
            )
        for i, table in ((0, firsts), (1, seconds)):
            table.setdefault(key(paths[i]), paths[i])
            files[key(paths[i])] = {f for _, f in trace_files({"paths": [paths[i]]})}
        listed.add((key(paths[0]), key(paths[1])))
    pairs = [
        (a, b)
        for a in firsts
        for b in seconds
        if a != b and (a, b) not in listed and not files[a] & files[b]
    ]
    if n > len(pairs):
        raise ConfigError(
            f"train.recombined: {n} tasks asked, the list's paths make {len(pairs)} new pairs"
        )
    order = np.random.default_rng(seed).permutation(len(pairs))[:n]
    return [
        ({"paths": [firsts[pairs[k][0]], seconds[pairs[k][1]]]}, normalise_app(dict(DEFAULT_APP)))
        for k in order
    ]


def generalist_tasks(train: Mapping, seed: int, where: str) -> tuple[list, str]:
    """``(tasks, phrase)``: the tasks of a generalist's ``train`` section, in
    this order: the conditions of the list ``train.conditions``,
    ``train.recombined`` pairs of their paths (seed ``seed``) and the
    conditions of ``train.in_sample`` (null: none); ``phrase`` says so for a log line."""
    listed = train["conditions"]
    tasks = training_tasks(listed, f"{where}.conditions")
    phrase = f"the {len(tasks)} conditions of the {listed} list"
    extra = recombined_tasks(tasks, train.get("recombined", 0), seed)
    if extra:
        phrase += f" and {len(extra)} pairs recombined from their paths"
    own = train.get("in_sample")
    in_sample = in_sample_tasks(own, f"{where}.in_sample") if own is not None else []
    if in_sample:
        phrase += f" and, in sample, the {len(in_sample)} conditions of the {own} list"
    return tasks + extra + in_sample, phrase


def check_learners(name: str, learners: Sequence[str], job: str) -> None:
    """No learner on a list of :data:`NO_LEARNERS`."""
    if name in NO_LEARNERS and learners:
        raise ConfigError(
            f"{job}.learners: {list(learners)} on the {name} list: its files are for reporting "
            f"only (rules, references and deployed schedulers); set {job}.learners=[]"
        )


__all__ = [
    "list_conditions",
    "ALLOWED_SPLITS",
    "NO_LEARNERS",
    "check_list_name",
    "trace_files",
    "check_list_files",
    "check_learners",
    "training_tasks",
    "IN_SAMPLE_LISTS",
    "in_sample_tasks",
    "recombined_tasks",
    "generalist_tasks",
]
