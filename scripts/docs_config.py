"""The configuration reference page (``docs/reference/config.md``) from ``configs/``.

Every option of every Hydra config group gets a table of its keys: the
dotted key, its value in the file and the comment written beside it (or
just above it) in the YAML, so the page says what the files say and never
goes stale: ``make docs`` regenerates it before each build.

    python scripts/docs_config.py docs/reference/config.md
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"

#: what each group selects (its options and keys are read from the files)
GROUPS = {
    "scenario": "paths (Table I presets, trace files, RTT, loss, buffers), congestion "
    "control, transport settings; the schema: [the scenario schema](formats/scenario_schema.md)",
    "app": "what is transferred (the `web_*` apps: the FALCON paper's Table II pages)",
    "agent": "a scheduler: `_target_` class + constructor arguments (the DQN update of "
    "the learned ones: `base/dqn`)",
    "experiment": "a named job: agent list, scenarios, runs, or one of FALCON's experiments",
    "conditions": "the learnability suite's condition lists; their trace files' split: "
    "`data/traces/split.yaml`",
    "bank": "the meta-model bank FALCON uses (and `experiment=build_bank` builds); "
    "shared settings in `base/bank`",
    "tracking": "where runs are logged",
    "runtime": "where episodes run",
    "base": "shared pieces the options above include (not a choice on the command line)",
}
#: top-level job configs (``--config-name``)
JOBS = "top-level job configs (`python -m falcon.<job>`, or `--config-name NAME`)"

_KEY = re.compile(r"^(?P<indent>\s*)(?P<key>[\w\-@/]+):(?P<rest>.*)$")


def group_options(group: str) -> list[str]:
    """The option names of ``configs/<group>/`` (file stems, sorted)."""
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


def _comment(rest: str) -> str:
    """The comment of a YAML line's remainder (``#`` outside quotes), or ''."""
    quote = None
    for i, ch in enumerate(rest):
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or rest[i - 1].isspace()):
            return rest[i + 1 :].strip()
    return ""


def _lookup(data, path: list[str]):
    for k in path:
        if not isinstance(data, dict) or k not in data:
            raise KeyError(".".join(path))
        data = data[k]
    return data


def _value(v) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def parse(path: Path) -> tuple[str, list[tuple[str, str, str]]]:
    """``(header, rows)`` of one YAML file: the leading comment and, per key
    (nested mappings as dotted keys; list items are shown in their key's
    value), ``(key, value, comment)``. ``hydra:`` settings are left out."""
    lines = path.read_text().splitlines()
    data = yaml.safe_load("\n".join(lines)) or {}
    header, i = [], 0
    while i < len(lines) and lines[i].lstrip().startswith("#"):
        text = lines[i].lstrip()[1:].strip()
        if not text.startswith("@package"):
            header.append(text)
        i += 1
    rows, stack, above, in_block = [], [], [], None
    for line in lines[i:]:
        stripped = line.strip()
        if in_block is not None:
            if stripped and len(line) - len(line.lstrip()) <= in_block:
                in_block = None
            else:
                continue
        if not stripped:
            above = []
            continue
        if stripped.startswith("#"):
            above.append(stripped[1:].strip())
            continue
        m = _KEY.match(line)
        if m is None or stripped.startswith("-"):
            above = []
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        keys = [k for _, k in stack] + [m["key"]]
        note = " ".join([*above, _comment(m["rest"])]).strip()
        above = []
        if m["rest"].strip().startswith(("|", ">")):
            in_block = indent
        if keys[0] in ("hydra", "defaults"):
            stack.append((indent, m["key"]))
            continue
        try:
            value = _lookup(data, keys)
        except KeyError:
            continue  # inside a list item: its key's value shows it
        stack.append((indent, m["key"]))
        if isinstance(value, dict) and value:
            if note:
                rows.append((".".join(keys), "", note))
            continue
        rows.append((".".join(keys), _value(value), note))
    defaults = [d for d in data.get("defaults", []) if d != "_self_"] if data else []
    if defaults:
        header.append("Includes: " + ", ".join(f"`{_value(d).strip(chr(34))}`" for d in defaults))
    return " ".join(header), rows


def _section(title: str, path: Path, level: str) -> list[str]:
    header, rows = parse(path)
    out = [
        f"{level} `{title}`",
        "",
        f"`{path.relative_to(ROOT)}`" + (f": {header}" if header else ""),
        "",
    ]
    if rows:
        out += ["| key | value | what |", "|---|---|---|"]
        out += [
            f"| `{k}` | `{_cell(v)}` | {_cell(n)} |" if v else f"| `{k}` | | {_cell(n)} |"
            for k, v, n in rows
        ]
        out.append("")
    return out


def render() -> str:
    """The whole page (Markdown)."""
    out = [
        "# Configuration: every group, option and key",
        "",
        "Generated from `configs/` by `scripts/docs_config.py` (run by `make docs`): each key "
        "with its value in the file and the comment beside it there. Every key can be set on "
        "the command line (`key=value`, list items by index: `scenario.paths.1.loss=0.02`); "
        "a group's option is chosen with `group=option`. How to combine them: "
        "[configuration](../tutorials/first_run.md#configuration).",
        "",
        "| group | options | what |",
        "|---|---|---|",
    ]
    for group, what in GROUPS.items():
        opts = ", ".join(f"`{o}`" for o in group_options(group))
        out.append(f"| `{group}/` | {opts} | {what} |")
    jobs = sorted(p.stem for p in CONFIGS.glob("*.yaml"))
    out += [f"| (top level) | {', '.join(f'`{j}`' for j in jobs)} | {JOBS} |", ""]
    out += ["## Jobs", ""]
    for job in jobs:
        out += _section(job, CONFIGS / f"{job}.yaml", "###")
    for group in GROUPS:
        out += [f"## `{group}/`", ""]
        for opt in group_options(group):
            out += _section(f"{group}/{opt}", CONFIGS / group / f"{opt}.yaml", "###")
    return "\n".join(out).rstrip() + "\n"


def write(path: Path, text: str) -> None:
    """Write ``text`` atomically (a temporary file beside ``path``, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python scripts/docs_config.py OUT.md", file=sys.stderr)
        return 2
    write(Path(argv[0]), render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
