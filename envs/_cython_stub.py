"""The ``cython`` name of the core's sources where Cython is not installed (each
imports it as ``try: import cython``, this module on ImportError): no-op stand-ins of
the directives they use as decorators (``@cython.boundscheck(False)``). The compiled
core applies the directives; the ``.py`` core runs the functions as written and never
reaches the compiled-only branches (``cython.address``, ``cython.cast``)."""

from __future__ import annotations


def _unchanged(function):
    return function


class cython:  # noqa: N801 (stands in for the module of that name)
    @staticmethod
    def boundscheck(flag: bool):
        return _unchanged

    @staticmethod
    def wraparound(flag: bool):
        return _unchanged
