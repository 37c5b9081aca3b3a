"""Network-condition estimation over a short window (FALCON Algorithm 1, SelectMetaModel).

After a detected change FALCON "checks the network conditions against R_S
over a short period of data transmission" (paper Sec. IV-A). This module
turns the per-packet feedback of the scheduler hook into one
:class:`metalearning.grid.PathCondition` per path:

* RTT sample [s] = ACK time - send time of an acknowledged packet (the
  ``on_packet_acked(view, path, size, sent_time)`` callback) minus the ACK
  delay the receiver reported in that ACK (RFC 9002 §5.3,
  :meth:`envs.path_sender.PathSender.rtt_sample`; ``ack_delay_corrected:
  false`` keeps the raw difference); it includes queueing, which the
  condition grid's base RTT does not (see "Bias" below);
* ``rtt_ms`` = mean and ``rtt_std_ms`` = sample standard deviation (ddof 1)
  of the RTT samples in the window, in milliseconds;
* ``loss`` = lost / (acked + lost) over the packet fates in the window (a
  probability, 0..1; "lost" = declared lost by the transport's RFC 9002
  loss detection). The scheduler feeds a packet that was sent in slow start
  and lost as a fate that is not a loss (option ``loss_in_slow_start``):
  slow start ends at the first loss, so its drops are the drop-tail
  overshoot, not the path's loss rate.

Window
------
Per path there are two ring buffers, one of RTT samples (``rtt_memory``
entries, default 512) and one of packet fates (``loss_memory``, default
2048), so memory is constant whatever the connection's length. A detected
change on path ``p`` *restarts* ``p``'s window: both rings are truncated to
their newest ``lag`` entries, ``lag`` being the detector's estimate of how
many samples ago the change happened (those already belong to the new
regime); at connection start every ring is emptied. Paths without a change
keep their window (their conditions did not change). The window is
*complete* (:meth:`ConditionEstimator.ready`) when every path holds at
least ``min_rtt_samples`` RTT samples (default 30) and ``min_loss_packets``
packet fates (default 100). The scheduler closes it earlier, with partial
data, once ``max_window_s`` of emulated time (default 0.5 s) has passed
since the trigger that opened the window and the partial data are *usable* (:meth:`usable`: every
path has at least ``min_partial_rtt`` (4) RTT samples in its window or a
previous estimate in this connection; a path that carries little traffic
would otherwise hold the window open for long). With partial data the RTT
statistics come from the window if it holds ``min_partial_rtt`` samples,
else from the path's previous estimate, else (a path that got only a few
packets, e.g. its probe, from a greedy policy: ``usable(late=True)``)
from the few samples there are, else (a path the policy sent nothing,
past the deadline) from the ``prior`` conditions given to the estimator
(FALCON's prior cell: an unused path must not keep FALCON on its
fallback model for the whole connection); the loss from the window if it
holds ``min_partial_loss`` (20) fates, else from the previous estimate,
else from the few fates there are. :attr:`ConditionEstimator.sources`
tells which ("window", "partial", "previous", "few", "prior").

Bias
----
The RTT samples include self-induced queueing (a window-limited flow fills
the bottleneck buffer, up to one BDP with the default ``buffer_bdp: 1``);
without the ACK-delay correction they also include the delayed-ACK timer
(up to ``ack.max_delay_ms`` for a packet that waits alone for its ACK: on a
lightly used low-RTT path this inflates the deviation ratio); the loss count includes buffer overflows in congestion
avoidance (e.g. after the policy moves traffic onto a path whose window grew
while it carried little). The estimate is thus an upper bound of the path's base conditions,
as it was for the paper's measurement. The bank's cells are wide (x4 in
RTT), so this shifts a selection only near a cell boundary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from envs.errors import ConfigError
from metalearning.grid import PathCondition


@dataclass(frozen=True)
class WindowConfig:
    """Estimation-window parameters (module docstring; every value a key of
    ``configs/agent/falcon*.yaml``, ``window:``)."""

    min_rtt_samples: int = 30  # RTT samples per path for a complete window
    min_loss_packets: int = 100  # packet fates per path for a complete window
    max_window_s: float = 0.5  # emulated seconds after a change: close with usable partial data
    min_partial_rtt: int = 4  # RTT samples usable in a partial window
    min_partial_loss: int = 20  # packet fates usable in a partial window
    rtt_memory: int = 512  # ring size: newest RTT samples kept per path
    loss_memory: int = 2048  # ring size: newest packet fates kept per path

    def __post_init__(self):
        for key in (
            "min_rtt_samples",
            "min_loss_packets",
            "min_partial_rtt",
            "min_partial_loss",
            "rtt_memory",
            "loss_memory",
        ):
            v = getattr(self, key)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ConfigError(f"window.{key}: expected a positive integer, got {v!r}")
        if self.min_partial_rtt < 2:
            raise ConfigError(
                f"window.min_partial_rtt: a standard deviation needs >= 2 samples, "
                f"got {self.min_partial_rtt}"
            )
        if self.min_rtt_samples > self.rtt_memory or self.min_loss_packets > self.loss_memory:
            raise ConfigError(
                "window: min_rtt_samples / min_loss_packets exceed rtt_memory / loss_memory"
            )
        if not (self.max_window_s > 0 and math.isfinite(self.max_window_s)):
            raise ConfigError(
                f"window.max_window_s: expected a positive number of seconds, "
                f"got {self.max_window_s!r}"
            )

    @classmethod
    def from_mapping(cls, m) -> WindowConfig:
        if m is None:
            return cls()
        if isinstance(m, WindowConfig):
            return m
        known = set(cls.__dataclass_fields__)
        unknown = set(m) - known
        if unknown:
            raise ConfigError(f"window: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        kw = {k: (float(v) if k == "max_window_s" else v) for k, v in m.items()}
        return cls(**kw)


class _Ring:
    """Fixed-size ring of the newest values (constant memory)."""

    __slots__ = ("buf", "head", "count", "total")

    def __init__(self, capacity: int, dtype):
        self.buf = np.zeros(int(capacity), dtype)
        self.head = 0
        self.count = 0
        self.total = 0.0  # sum of the held values (used for the loss ring)

    def push(self, x) -> None:
        buf = self.buf
        h = self.head
        cap = len(buf)
        if self.count == cap:
            self.total -= buf[h]
        else:
            self.count += 1
        buf[h] = x
        self.total += x
        self.head = h + 1 if h + 1 < cap else 0

    def newest(self) -> np.ndarray:
        n, h, cap = self.count, self.head, len(self.buf)
        idx = (h - n + np.arange(n)) % cap
        return self.buf[idx]

    def keep_newest(self, n: int) -> None:
        """Forget everything but the newest ``n`` values."""
        n = max(0, min(int(n), self.count))
        self.count = n
        self.total = float(self.newest().sum()) if n else 0.0


class ConditionEstimator:
    """Per-path loss / mean RTT / RTT deviation over the estimation window
    (module docstring)."""

    def __init__(
        self,
        n_paths: int,
        config: WindowConfig | None = None,
        prior: Sequence[PathCondition] | None = None,
    ):
        if int(n_paths) < 1:
            raise ConfigError(f"estimator: n_paths must be positive, got {n_paths!r}")
        if prior is not None and len(prior) != int(n_paths):
            raise ConfigError(f"estimator: prior has {len(prior)} paths, expected {n_paths}")
        self.n_paths = int(n_paths)
        self.config = config or WindowConfig()
        #: per path, the conditions assumed past the deadline for a path that
        #: carried no packet at all (None: such a path keeps the window open)
        self.prior = None if prior is None else list(prior)
        self.reset()

    def reset(self) -> None:
        """Connection start: empty every window, forget previous estimates."""
        c = self.config
        self._rtt = [_Ring(c.rtt_memory, np.float64) for _ in range(self.n_paths)]
        self._fate = [_Ring(c.loss_memory, np.float64) for _ in range(self.n_paths)]
        self.last: list[PathCondition | None] = [None] * self.n_paths
        #: per path: where the last estimate's (rtt, loss) came from:
        #: "window" | "partial" | "previous" | "few" (RTT: below min_partial_rtt samples,
        #: past the deadline) | "prior" (no sample, past the deadline) ("none": no packet
        #: fate yet, loss 0)
        self.sources: list[tuple[str, str]] = [("", "")] * self.n_paths

    # ---------------------------------------------------------- feeds
    def add_rtt(self, path: int, rtt_s: float) -> None:
        """One RTT sample [s] of ``path`` (ACK time - send time)."""
        self._rtt[path].push(rtt_s)

    def add_fate(self, path: int, lost: bool) -> None:
        """The fate of one packet of ``path`` (True: declared lost)."""
        self._fate[path].push(1.0 if lost else 0.0)

    def restart(self, path: int, keep: int = 0) -> None:
        """A change on ``path``: its window restarts, keeping the newest
        ``keep`` RTT samples and packet fates (already after the change)."""
        self._rtt[path].keep_newest(keep)
        self._fate[path].keep_newest(keep)

    # ---------------------------------------------------------- state
    def counts(self, path: int) -> tuple[int, int]:
        """(RTT samples, packet fates) in ``path``'s window."""
        return self._rtt[path].count, self._fate[path].count

    def path_ready(self, path: int) -> bool:
        c = self.config
        return (
            self._rtt[path].count >= c.min_rtt_samples
            and self._fate[path].count >= c.min_loss_packets
        )

    def ready(self) -> bool:
        """Every path's window is complete."""
        return all(self.path_ready(p) for p in range(self.n_paths))

    # ---------------------------------------------------------- estimates
    def usable(self, late: bool = False) -> bool:
        """Every path has enough RTT samples for a partial estimate, or a
        previous estimate; ``late`` (the window's deadline has passed): one
        RTT sample is enough for a path without a previous estimate (a
        greedy policy may send a path nothing but its probe packet)."""
        m = 1 if late else self.config.min_partial_rtt
        return all(
            self._rtt[p].count >= m or self.last[p] is not None or (late and self.prior is not None)
            for p in range(self.n_paths)
        )

    def estimate(self, path: int) -> PathCondition:
        """``path``'s conditions now (fallbacks: module docstring). Raises
        :class:`ConfigError` when the path has neither enough samples nor a
        previous estimate (check :meth:`usable` first)."""
        c = self.config
        prev = self.last[path]
        ring = self._rtt[path]
        if ring.count >= c.min_partial_rtt:
            x = ring.newest()
            rtt_ms = 1000.0 * float(x.mean())
            std_ms = 1000.0 * float(x.std(ddof=1))
            rsrc = "window" if ring.count >= c.min_rtt_samples else "partial"
        elif prev is not None:
            rtt_ms, std_ms, rsrc = prev.rtt_ms, prev.rtt_std_ms, "previous"
        elif ring.count:  # past the deadline, a path with a few samples and no past
            x = ring.newest()
            rtt_ms = 1000.0 * float(x.mean())
            std_ms = 1000.0 * float(x.std(ddof=1)) if ring.count > 1 else 0.0
            rsrc = "few"
        elif self.prior is not None:  # past the deadline, a path the policy sent nothing
            rtt_ms, std_ms, rsrc = self.prior[path].rtt_ms, self.prior[path].rtt_std_ms, "prior"
        else:
            raise ConfigError(
                f"estimator: path {path} has {ring.count} RTT samples and no previous "
                f"estimate (at least {c.min_partial_rtt} needed)"
            )
        fr = self._fate[path]
        if fr.count >= c.min_partial_loss or (prev is None and fr.count):
            loss = fr.total / fr.count
            lsrc = "window" if fr.count >= c.min_loss_packets else "partial"
        elif prev is not None:
            loss, lsrc = prev.loss, "previous"
        elif rsrc == "prior":
            loss, lsrc = self.prior[path].loss, "prior"
        else:
            loss, lsrc = 0.0, "none"
        cond = PathCondition(
            loss=float(min(max(loss, 0.0), 1.0)),
            rtt_ms=float(rtt_ms),
            rtt_std_ms=float(max(std_ms, 0.0)),
        )
        self.last[path] = cond
        self.sources[path] = (rsrc, lsrc)
        return cond

    def estimate_all(self) -> list[PathCondition]:
        """Every path's conditions (:meth:`estimate`)."""
        return [self.estimate(p) for p in range(self.n_paths)]

    def nbytes(self) -> int:
        """Bytes held by the rings (constant: set by the configuration)."""
        return sum(r.buf.nbytes for r in self._rtt) + sum(r.buf.nbytes for r in self._fate)


__all__ = ["ConditionEstimator", "WindowConfig"]
