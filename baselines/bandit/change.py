"""Change detectors on per-path RTT samples (for M-Peekaboo's resets).

The interface is deliberately small so that a Bayesian online change-point
detector (the FALCON online module's BOCPD) can replace the simple one here
without touching the schedulers:

``detector.update(path, sample, now) -> bool``
    feed one RTT sample [s] of path ``path`` taken at time ``now`` [s];
    True when a change of that path's conditions is detected by this sample.
``detector.reset() -> None``
    forget everything (called at connection start).

Any object with these two methods works (:class:`ChangeDetector` is the
base class to subclass); :func:`make_detector` builds one from a config
value.

:class:`TwoWindowDetector` (the default of M-Peekaboo) is a two-window
mean-shift test per path: the last ``2 * window`` samples are split into an
older and a newer half; a change is signalled when the newer half's mean
differs from the older half's by a factor of more than ``ratio`` (either
direction: m_new > ratio m_old or m_new < m_old / ratio) **and** by more than
``min_shift_s`` in absolute terms. After a detection the path's samples are
dropped, so the next test needs ``2 * window`` fresh samples (a built-in
cooldown). Cost: O(1) per sample (running sums).

Why those defaults (window 32, ratio 2.5, 10 ms): the samples are per-packet
RTTs (ACK time - send time), which include the receiver's ACK delay (ACK
every 2 packets, 25 ms timer) and the bottleneck queue. A loss-based
congestion controller with a 1-BDP buffer moves the RTT between about 1x and
2x the base RTT along its sawtooth, so a ratio of 2 would fire on ordinary
congestion epochs; 2.5 ignores them while an abrupt change of the path
(e.g. a handover, a mmWave blockage, a 10 ms -> 150 ms RTT step) passes it.
The absolute floor keeps millisecond paths from firing on jitter. Measured
with M-Peekaboo: no detection in any of 5 seeds x {2, 20} MB on static
50/10 + 5/150, 30/20 + 20/40 (Mbit/s / ms RTT) and the Table I 4G+5G,
4G+WLAN, 5G+WLAN pairs; on a 10 ms <-> 150 ms RTT swap both paths' changes
are detected 0.17-0.25 s after the step. Loss rate
and capacity changes that do not move the RTT are not seen (BOCPD on the
binomial loss counts is the planned replacement).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping


class ChangeDetector:
    """Base class: never detects anything. Subclasses override :meth:`update`."""

    name = "none"

    def update(self, path: int, sample: float, now: float) -> bool:
        """Feed one RTT sample [s] of ``path`` at ``now`` [s]; True on a change."""
        return False

    def reset(self) -> None:
        """Forget all samples."""


class NoChange(ChangeDetector):
    """A detector that never fires (M-Peekaboo without resets)."""


class TwoWindowDetector(ChangeDetector):
    """Two adjacent windows of ``window`` samples per path; a change when the
    newer window's mean is more than ``ratio`` times the older one's (or less
    than 1/ratio of it) and differs by more than ``min_shift_s``."""

    name = "two_window"

    def __init__(self, window: int = 32, ratio: float = 2.5, min_shift_s: float = 0.010) -> None:
        if int(window) < 2:
            raise ValueError(f"TwoWindowDetector: window must be >= 2, got {window}")
        if not (ratio > 1.0 and math.isfinite(ratio)):
            raise ValueError(f"TwoWindowDetector: ratio must be > 1, got {ratio}")
        if not min_shift_s >= 0.0:
            raise ValueError(f"TwoWindowDetector: min_shift_s must be >= 0, got {min_shift_s}")
        self.window = int(window)
        self.ratio = float(ratio)
        self.min_shift_s = float(min_shift_s)
        self.detections: list[tuple[float, int]] = []  # (time [s], path) of each change
        self.reset()

    def reset(self) -> None:
        # per path: [samples deque (<= 2 window), sum of the older half, sum of the newer half]
        self._state: dict[int, list] = {}
        self.detections = []

    def update(self, path: int, sample: float, now: float) -> bool:
        st = self._state.get(path)
        if st is None:
            st = self._state[path] = [deque(), 0.0, 0.0]
        q = st[0]
        w = self.window
        q.append(sample)
        st[2] += sample
        if len(q) > w:  # the oldest sample of the newer half moves to the older half
            moved = q[-w - 1]
            st[2] -= moved
            st[1] += moved
        if len(q) > 2 * w:
            st[1] -= q.popleft()
        if len(q) < 2 * w:
            return False
        old = st[1] / w
        new = st[2] / w
        if abs(new - old) <= self.min_shift_s:
            return False
        if new > self.ratio * old or new * self.ratio < old:
            q.clear()
            st[1] = st[2] = 0.0
            self.detections.append((now, path))
            return True
        return False


DETECTORS = {"none": NoChange, "two_window": TwoWindowDetector}


def make_detector(spec) -> ChangeDetector:
    """A detector from a config value: an object with ``update``/``reset``
    (returned as is), ``None``/``False``/``"none"`` (never fires), a name of
    :data:`DETECTORS`, or a mapping ``{kind: two_window, window: 32, ...}``.
    (A Hydra node with ``_target_`` is instantiated by Hydra before it gets
    here.)"""
    if spec is None or spec is False:
        return NoChange()
    if callable(getattr(spec, "update", None)) and callable(getattr(spec, "reset", None)):
        return spec
    if isinstance(spec, str):
        spec = {"kind": spec}
    if isinstance(spec, Mapping):
        kw = dict(spec)
        kind = kw.pop("kind", "two_window")
        try:
            cls = DETECTORS[kind]
        except KeyError:
            raise ValueError(
                f"unknown change detector {kind!r}; known: {', '.join(sorted(DETECTORS))}"
            ) from None
        return cls(**kw)
    raise ValueError(f"change detector: expected a detector, a name or a mapping, got {spec!r}")
