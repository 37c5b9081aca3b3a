"""The packages import one way only: envs <- baselines <- metalearning <- falcon
(README.md, section "Layout"): a lower layer never imports a higher one.
Every import counts, at module level or inside a function, and so does a
module named by a string to importlib."""

from __future__ import annotations

import ast
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
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value.split(".")[0])
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_point_one_way(layer):
    above = set(LAYERS[LAYERS.index(layer) + 1:])
    wrong = {str(p.relative_to(ROOT)): sorted(imported_packages(p) & above)
             for p in sorted((ROOT / layer).rglob("*.py"))}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_check_sees_function_level_and_importlib_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from falcon.x import y\n    import importlib\n"
                 "    importlib.import_module('metalearning.grid')\n")
    assert imported_packages(f) >= {"falcon", "metalearning"}


def test_modules_and_functions_stay_small():
    """Library modules stay under 500 lines and functions under 80 (a
    newcomer reads one job per module; tests and benchmarks excluded)."""
    long_modules, long_functions = {}, {}
    for layer in LAYERS:
        for p in sorted((ROOT / layer).rglob("*.py")):
            text = p.read_text()
            name = str(p.relative_to(ROOT))
            if text.count("\n") > 500:
                long_modules[name] = text.count("\n")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = node.end_lineno - node.lineno + 1
                    if n > 80:
                        long_functions[f"{name}:{node.name}"] = n
    assert long_modules == {} and long_functions == {}
