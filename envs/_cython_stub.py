"""No-op stand-ins of the Cython directives that the core's sources use as decorators
(``@cython.boundscheck(False)``), for the ``.py`` core where Cython is not installed:
the compiled core applies the directives, the ``.py`` core runs the functions as written."""

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
