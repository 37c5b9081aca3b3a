"""The ``literal-docstring`` directive: a module's docstring as preformatted text.

For module docstrings written as plain text rather than reST (an indented
command line after a sentence, ``|x|`` notation), which autodoc would parse
into warnings; the text is shown as it reads in the source::

    ```{literal-docstring} baselines.rule_based.stms
    ```
"""

from __future__ import annotations

import importlib
import inspect

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


class LiteralDocstring(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        try:
            module = importlib.import_module(name)
        except Exception as e:  # an import error is the page's problem: say which module
            raise self.error(f"literal-docstring: cannot import {name}: {e}") from None
        doc = inspect.getdoc(module)
        if not doc:
            raise self.error(f"literal-docstring: {name} has no docstring")
        title = nodes.paragraph("", "", nodes.literal(name, name))
        return [title, nodes.literal_block(doc, doc)]


def setup(app):
    app.add_directive("literal-docstring", LiteralDocstring)
    return {"version": "1", "parallel_read_safe": True}
