"""Per-path congestion controllers (units: bytes and seconds).

``make_cc(name, mss, initial_window_packets, group=None, **kw)`` builds one
controller by name (see :data:`CC_REGISTRY`). Coupled controllers (LIA, OLIA,
BALIA; names in :data:`COUPLED`) join ``group`` -- one
:class:`CouplingGroup` per connection -- or a fresh single-member group when
``group`` is None. Uncoupled ones (NewReno, CUBIC, BBR) ignore ``group``.

``kw``: ``min_window_packets`` (default 2), ``max_window_bytes`` (default
inf) and, for CUBIC, ``c``, ``beta``, ``fast_convergence``.

``held`` (:class:`HeldWindow`, in :data:`WINDOW_HOLDERS`) is no congestion
control: its window only changes when set from outside (an agent that sets
the windows itself); ``make_cc`` builds it by name as the others.
:func:`install_cc` replaces the controller of a live path sender;
:class:`ScaledWindow` wraps one (its window times a gain set from outside).
"""

from __future__ import annotations

from ..errors import ConfigError
from .base import CongestionController, CouplingGroup
from .bbr import BBR
from .coupled import Balia, Lia, Olia
from .cubic import Cubic
from .held import HeldWindow
from .newreno import NewReno
from .scaled import ScaledWindow

CC_REGISTRY: dict[str, type[CongestionController]] = {
    "newreno": NewReno,
    "cubic": Cubic,
    "lia": Lia,
    "olia": Olia,
    "balia": Balia,
    "bbr": BBR,
}

#: window holders: no congestion control of their own, the window is set
#: from outside; ``make_cc`` builds them by name too, but they are not in
#: :data:`CC_REGISTRY` (the congestion controls every cc test and sweep runs)
WINDOW_HOLDERS: dict[str, type[CongestionController]] = {
    "held": HeldWindow,
}

#: names of the controllers that couple the subflows of one connection
COUPLED = frozenset({"lia", "olia", "balia"})


def make_cc(
    name: str, mss: int, initial_window_packets: int, group: CouplingGroup | None = None, **kw
) -> CongestionController:
    """Build the congestion controller ``name`` for one path.

    ``mss`` [bytes on the wire per packet], ``initial_window_packets``
    [packets]. Raises :class:`~envs.errors.ConfigError` for an unknown name.
    """
    key = name.strip().lower() if isinstance(name, str) else ""
    cls = CC_REGISTRY.get(key) or WINDOW_HOLDERS.get(key)
    if cls is None:
        raise ConfigError(
            f"unknown congestion control {name!r}; choose one of "
            + ", ".join([*CC_REGISTRY, *WINDOW_HOLDERS])
        )
    if key in COUPLED:
        if group is None:
            group = CouplingGroup()
        return cls(mss, initial_window_packets, group=group, **kw)
    return cls(mss, initial_window_packets, **kw)


def install_cc(path, cc: CongestionController) -> CongestionController:
    """Make ``cc`` the congestion controller of the path sender ``path``
    (:class:`envs.path_sender.PathSender`) from now on; returns the one it
    replaces. The new controller takes over the path's current sRTT; the
    path's cached per-packet hook (``cc_on_sent``, set when the controller
    overrides ``on_packet_sent``) is replaced with it, so both always name
    the same controller. Packets in flight stay counted by the path."""
    old = path.cc
    cc.srtt = path.srtt
    path.cc = cc
    overridden = type(cc).on_packet_sent is not CongestionController.on_packet_sent
    path.cc_on_sent = cc.on_packet_sent if overridden else None
    return old


__all__ = [
    "BBR",
    "CC_REGISTRY",
    "COUPLED",
    "Balia",
    "CongestionController",
    "CouplingGroup",
    "Cubic",
    "HeldWindow",
    "Lia",
    "NewReno",
    "Olia",
    "ScaledWindow",
    "WINDOW_HOLDERS",
    "install_cc",
    "make_cc",
]
