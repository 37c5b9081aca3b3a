"""The seed papers' numbers: ``data/seed_claims.yaml``, their one home.

Every number the project quotes from a seed paper (in a report, beside ours)
is read from that file, with its source: the paper's citation, the figure, table or
section. :func:`load` checks the file's shape and fails with one line that
names the problem; :func:`claim_values` is what the experiments' reports read.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from envs.errors import ConfigError

FILE_NAME = "seed_claims.yaml"


def default_path() -> Path:
    """``data/seed_claims.yaml`` of the project (``$FALCON_DATA_DIR`` if set)."""
    from envs.traces.catalog import data_dir

    return data_dir() / FILE_NAME


def _need(obj, key: str, kind, where: str):
    if not isinstance(obj, Mapping) or key not in obj:
        raise ConfigError(f"{where}: missing key {key!r}")
    if not isinstance(obj[key], kind):
        raise ConfigError(
            f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {type(obj[key]).__name__}"
        )
    return obj[key]


def validate(doc, where: str = FILE_NAME) -> dict:
    """The parsed file, checked: every figure names a known seed and has
    claims with unique ids, a ``where`` and a ``values`` mapping."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{where}: expected a mapping with seeds: and figures:")
    seeds = _need(doc, "seeds", Mapping, where)
    for sid, s in seeds.items():
        for key in ("paper", "cite"):
            _need(s, key, str, f"{where}: seeds.{sid}")
    ids: set[str] = set()
    for i, fig in enumerate(_need(doc, "figures", list, where)):
        at = f"{where}: figures[{i}]"
        fid = _need(fig, "id", str, at)
        if fid in ids:
            raise ConfigError(f"{at}: duplicate figure id {fid!r}")
        ids.add(fid)
        if _need(fig, "seed", str, at) not in seeds:
            raise ConfigError(
                f"{at} ({fid}): unknown seed {fig['seed']!r} (known: {', '.join(seeds)})"
            )
        for key in ("where", "title", "experiment"):
            _need(fig, key, str, f"{at} ({fid})")
        cids: set[str] = set()
        for j, claim in enumerate(_need(fig, "claims", list, f"{at} ({fid})")):
            cat = f"{at} ({fid}).claims[{j}]"
            cid = _need(claim, "id", str, cat)
            if cid in cids:
                raise ConfigError(f"{cat}: duplicate claim id {cid!r}")
            cids.add(cid)
            for key in ("where", "text"):
                _need(claim, key, str, f"{cat} ({cid})")
            _need(claim, "values", Mapping, f"{cat} ({cid})")
    return dict(doc)


def load(path: str | Path | None = None) -> dict:
    """The checked contents of the seed-claims file (default :func:`default_path`)."""
    if path is None:
        return _load_default()
    return _read(Path(path))


@lru_cache(maxsize=1)
def _load_default() -> dict:
    return _read(default_path())


def _read(path: Path) -> dict:
    import yaml

    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"seed claims file {path}: cannot be read ({e.strerror or e})") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(
            f"seed claims file {path}: not valid YAML ({str(e).splitlines()[0]})"
        ) from None
    return validate(doc, str(path))


def figure(figure_id: str, doc: Mapping | None = None) -> dict:
    """One figure's entry (with its claims)."""
    doc = doc if doc is not None else load()
    for fig in doc["figures"]:
        if fig["id"] == figure_id:
            return fig
    raise ConfigError(f"seed claims: no figure {figure_id!r}")


def claim(figure_id: str, claim_id: str, doc: Mapping | None = None) -> dict:
    """One claim of a figure: ``id``, ``where``, ``text``, ``values``."""
    for c in figure(figure_id, doc)["claims"]:
        if c["id"] == claim_id:
            return c
    raise ConfigError(f"seed claims: figure {figure_id!r} has no claim {claim_id!r}")


def claim_values(figure_id: str, claim_id: str) -> dict:
    """The paper's numbers of one claim (units in the keys)."""
    return dict(claim(figure_id, claim_id)["values"])


def claim_texts(figure_id: str) -> dict[str, str]:
    """``{claim id: "text (where)"}`` of a figure: what reports print as the paper's claim."""
    return {c["id"]: f"{c['text']} ({c['where']})" for c in figure(figure_id)["claims"]}


def source(figure_id: str, doc: Mapping | None = None) -> str:
    """``"<citation>, <where>"`` of a figure: the paper by authors, title, venue and year."""
    doc = doc if doc is not None else load()
    fig = figure(figure_id, doc)
    return f"{doc['seeds'][fig['seed']]['cite']}, {fig['where']}"


__all__ = [
    "load",
    "validate",
    "figure",
    "claim",
    "claim_values",
    "claim_texts",
    "source",
    "default_path",
]
