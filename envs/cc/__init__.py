"""Per-path congestion controllers (units: bytes and seconds).

``make_cc(name, mss, initial_window_packets, group=None, **kw)`` builds one
controller by name (see :data:`CC_REGISTRY`). Coupled controllers (LIA, OLIA,
BALIA; names in :data:`COUPLED`) join ``group`` -- one
:class:`CouplingGroup` per connection -- or a fresh single-member group when
``group`` is None. Uncoupled ones (NewReno, CUBIC, BBR) ignore ``group``.

``kw``: ``min_window_packets`` (default 2), ``max_window_bytes`` (default
inf) and, for CUBIC, ``c``, ``beta``, ``fast_convergence``.
"""

from __future__ import annotations

from ..errors import ConfigError
from .base import CongestionController, CouplingGroup
from .bbr import BBR
from .coupled import Balia, Lia, Olia
from .cubic import Cubic
from .newreno import NewReno

CC_REGISTRY: dict[str, type[CongestionController]] = {
    "newreno": NewReno,
    "cubic": Cubic,
    "lia": Lia,
    "olia": Olia,
    "balia": Balia,
    "bbr": BBR,
}

#: names of the controllers that couple the subflows of one connection
COUPLED = frozenset({"lia", "olia", "balia"})


def make_cc(name: str, mss: int, initial_window_packets: int,
            group: CouplingGroup | None = None, **kw) -> CongestionController:
    """Build the congestion controller ``name`` for one path.

    ``mss`` [bytes on the wire per packet], ``initial_window_packets``
    [packets]. Raises :class:`~envs.errors.ConfigError` for an unknown name.
    """
    key = name.strip().lower() if isinstance(name, str) else ""
    cls = CC_REGISTRY.get(key)
    if cls is None:
        raise ConfigError(f"unknown congestion control {name!r}; choose one of "
                          + ", ".join(CC_REGISTRY))
    if key in COUPLED:
        if group is None:
            group = CouplingGroup()
        return cls(mss, initial_window_packets, group=group, **kw)
    return cls(mss, initial_window_packets, **kw)


__all__ = ["BBR", "CC_REGISTRY", "COUPLED", "Balia", "CongestionController", "CouplingGroup",
           "Cubic", "Lia", "NewReno", "Olia", "make_cc"]
