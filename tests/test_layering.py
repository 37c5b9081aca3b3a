"""The packages import one way only: envs <- baselines <- metalearning <- falcon
(docs/guide/development.md, section "Layout"): a lower layer never imports a higher one.
Every import counts, at module level or inside a function, and so does a
module named by a string to importlib."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("envs", "baselines", "metalearning", "falcon")


def imported_packages(path: Path) -> set[str]:
    """Top-level packages that the module at ``path`` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value.split(".")[0])
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_point_one_way(layer):
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    wrong = {
        str(p.relative_to(ROOT)): sorted(imported_packages(p) & above)
        for p in sorted((ROOT / layer).rglob("*.py"))
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_check_sees_function_level_and_importlib_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "def g():\n    from falcon.x import y\n    import importlib\n"
        "    importlib.import_module('metalearning.grid')\n"
    )
    assert imported_packages(f) >= {"falcon", "metalearning"}


def code_lines(text: str) -> set[int]:
    """Line numbers that carry code: not blank, not only a comment, not part of
    a docstring. Counted this way, a size limit does not depend on how the
    formatter wraps a call over several lines."""
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    skip = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - docstrings


MAX_MODULE_CODE_LINES = 500
MAX_FUNCTION_CODE_LINES = 100


def test_code_lines_skip_docstrings_comments_and_blanks():
    text = 'def f():\n    """Doc\n    string."""\n\n    # note\n    return (\n        1\n    )\n'
    assert code_lines(text) == {1, 6, 7, 8}


def test_modules_and_functions_stay_small():
    """Library modules stay under 500 lines of code and functions under 100
    (a newcomer reads one job per module; tests and benchmarks excluded).
    Lines of code, not physical lines: the formatter spreads one call over many."""
    long_modules, long_functions = {}, {}
    for layer in LAYERS:
        for p in sorted((ROOT / layer).rglob("*.py")):
            text = p.read_text()
            name = str(p.relative_to(ROOT))
            lines = code_lines(text)
            if len(lines) > MAX_MODULE_CODE_LINES:
                long_modules[name] = len(lines)
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = sum(node.lineno <= x <= node.end_lineno for x in lines)
                    if n > MAX_FUNCTION_CODE_LINES:
                        long_functions[f"{name}:{node.name}"] = n
    assert long_modules == {} and long_functions == {}
