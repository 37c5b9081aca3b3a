"""Sphinx configuration of the documentation site (``make docs``).

MyST Markdown pages with the Furo theme; the API reference comes from the
docstrings (reST roles) by autodoc. ``make docs`` first writes the generated
pages (``docs/reference/config.md`` from ``configs/``, ``docs/results/*.md``
from the results JSON; scripts/docs_config.py and scripts/docs_results.py),
then builds into ``docs/_build/html`` with warnings as errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "FALCON"
author = "FALCON framework contributors"
copyright = "FALCON framework contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "literal_docstring",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# the committed snapshots rendered by their own jobs; the site renders the
# same JSON itself (docs/results/)
exclude_patterns = [
    "_build",
    "_ext",
    "fidelity.md",
    "fidelity",
    "reproduction/report.md",
    "reproduction/report.html",
    "reproduction/report.json",
]

myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}

html_theme = "furo"
html_title = "FALCON"
