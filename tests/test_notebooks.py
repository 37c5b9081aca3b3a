"""notebooks/: each runs top to bottom at quick scale, and is stored without outputs.

The notebooks read ``FALCON_NOTEBOOK_OUT`` (where they write runs, plots and
MLflow stores; default ``results/notebooks``) and keep their ``QUICK = True``
default, so what runs here is exactly what a user gets from a fresh clone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_the_four_notebooks_exist():
    names = [p.name for p in PATHS]
    for prefix in ("01_quickstart", "02_emulator", "03_falcon", "04_reproduction"):
        assert f"{prefix}.ipynb" in names, f"notebooks/{prefix}.ipynb is missing"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_is_stored_without_outputs(path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, (
                f"{path.name} cell {i}: outputs not stripped"
            )
    assert any("QUICK = True" in c.source for c in nb.cells if c.cell_type == "code"), (
        f"{path.name}: no `QUICK = True` flag"
    )


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_top_to_bottom(path, tmp_path, monkeypatch):
    import nbclient
    import nbformat

    monkeypatch.setenv("FALCON_NOTEBOOK_OUT", str(tmp_path))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError naming the cell on any error
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.get("output_type") == "error"
    ]
    assert not errors
    # every notebook draws something
    assert any(
        o.get("output_type") in ("display_data", "execute_result")
        and "image/png" in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    ), f"{path.name} drew no figure"
