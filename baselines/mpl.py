"""matplotlib for the project's plots: headless in scripts, inline in notebooks.

Every plotting function calls :func:`use_agg` before importing pyplot. On a
machine without a display it selects the Agg backend (files only), but it
leaves a Jupyter kernel's inline backend alone: switching it would silence
every figure the notebook draws after a library call.
"""

from __future__ import annotations

import sys


def use_agg() -> None:
    """Select Agg unless running in a Jupyter kernel (its inline backend stays)."""
    import matplotlib

    if (
        "ipykernel" in sys.modules
        or "inline" in str(matplotlib.rcParams.get("backend", "")).lower()
    ):
        return
    matplotlib.use("Agg", force=True)


__all__ = ["use_agg"]
