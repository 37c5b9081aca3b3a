"""FALCON's triggers (Algorithm 1, steps 1-3): per-packet feedback into the
change detector and the condition estimator, the estimation window that a
connection start or a detected change opens, and the selection of a cell
when it closes (:mod:`falcon.online.scheduler`'s docstring, items 1-3).

:class:`ChangeTriggers` is a part of :class:`falcon.online.FalconScheduler`
(its state lives there); it hands a newly selected cell to
:meth:`FewShotAdaptation._adapt <falcon.online.adaptation.FewShotAdaptation._adapt>`.
"""

from __future__ import annotations

import math
import time as _time
from collections.abc import Sequence

from baselines.changepoint.detectors import PathChangeDetector
from falcon.online.events import AdaptationEvent
from metalearning.grid import PathCondition


class ChangeTriggers:
    """Feedback, change detection, the estimation window and the selection."""

    # ---------------------------------------------------------- feedback
    def _congestion_avoidance(self, view, path: int, sent_time: float, now: float) -> bool:
        """Whether a packet was sent while ``path`` was in congestion
        avoidance. A packet lost in slow start counts as a fate but not as a
        loss (``loss_in_slow_start: false``): slow start ends at the first
        loss, so its drops are the drop-tail overshoot (congestion), not the
        path's loss rate, save at most one random loss per slow start."""
        if view.paths[path].in_slow_start:
            self._ca_since[path] = math.inf
            return False
        if self._ca_since[path] == math.inf:
            self._ca_since[path] = now
        return sent_time >= self._ca_since[path]

    def on_packet_acked(self, view, path: int, size: int, sent_time: float) -> None:
        self._resolve(path, view.sim.now, True, sent_time)
        now = view.sim.now
        rtt = (
            view.paths[path].rtt_sample(sent_time, now)
            if self.ack_delay_corrected
            else now - sent_time
        )
        est = self.estimator
        est.add_rtt(path, rtt)
        est.add_fate(path, False)
        if not self.loss_in_slow_start:
            self._congestion_avoidance(view, path, sent_time, now)  # tracks the slow-start exit
        det = self.detector
        if det is not None:
            if det.update_rtt(path, rtt, now):
                self._on_change(det)
            if det.update_loss(path, False, now):
                self._on_change(det)
        if self._estimating and (est.ready() or (self._overdue and est.usable(late=True))):
            self._close_window()

    def on_packet_lost(self, view, path: int, size: int, sent_time: float) -> None:
        self._resolve(path, view.sim.now, False, sent_time)
        now = view.sim.now
        self.estimator.add_fate(
            path, self.loss_in_slow_start or self._congestion_avoidance(view, path, sent_time, now)
        )
        det = self.detector
        if det is not None and det.update_loss(path, True, now):
            self._on_change(det)
        est = self.estimator
        if self._estimating and (est.ready() or (self._overdue and est.usable(late=True))):
            self._close_window()

    def _on_change(self, det: PathChangeDetector) -> None:
        ev = det.events[-1]
        det.events.clear()  # constant memory over long connections
        det.detections.clear()
        self.changes += 1
        self.estimator.restart(ev.path, keep=ev.lag)
        self._open_window(ev.path, ev.signal)

    # ---------------------------------------------------------- window
    def _open_window(self, path: int | None, signal: str) -> None:
        """A trigger: a new event, the post-change buffer restarts. A window
        already open keeps its deadline (slow start alone can report a
        change every few RTTs; the selection must not wait for them all)."""
        superseding = self._estimating
        if superseding and self._event is not None:
            self._event.action = "superseded"
        self._event = AdaptationEvent(
            self.episode, float(self._now()), path, signal, self.decisions
        )
        self.events.append(self._event)
        self._estimating = True
        self._trigger_time = self._now()
        self._window.clear()
        self._set_epsilon()
        if not superseding:
            self._overdue = False
            self._window_gen += 1
            sim = self._view.sim
            sim.schedule(
                sim.now + self.window_config.max_window_s, self._window_timeout, self._window_gen
            )
        est = self.estimator
        if est.ready() or (self._overdue and est.usable(late=True)):
            self._close_window()

    def _window_timeout(self, gen: int) -> None:
        if gen == self._window_gen and self._estimating:
            # a path the estimator has no RTT sample of yet gets the whole
            # window from when it could first carry data: a secondary path
            # opens after its validation (envs/setup.py), one RTT of it after
            # the request (its validation round trip is the sender's first
            # RTT sample, not a packet's: the estimator never sees it)
            est = self.estimator
            waiting = [p.open_time for p in self._view.paths if est.counts(p.index)[0] == 0]
            later = max(waiting, default=-math.inf) + self.window_config.max_window_s
            if later > self._now():
                self._view.sim.schedule(later, self._window_timeout, gen)
                return
            self._overdue = True  # close as soon as the partial data are usable
            if self.estimator.usable(late=True):
                self._close_window()

    def _select(self, conds: Sequence[PathCondition]) -> int:
        if self.selection == "random":
            return int(self._select_rng.integers(self.bank.grid.n_cells))
        return int(self.bank.select(conds))

    def _close_window(self) -> None:
        t0 = _time.perf_counter()
        ev = self._event
        est = self.estimator
        conds = est.estimate_all()
        cell = self._select(conds)
        self._estimating = False
        self.selections += 1
        ev.conditions = tuple(conds)
        ev.sources = tuple(est.sources)
        ev.select_time = self._now()
        ev.decisions_to_select = self.decisions - ev.decisions_at_change
        ev.cell = cell
        ev.previous_cell = self.cell
        ev.wall_s["select"] = _time.perf_counter() - t0
        win = self._window.contents() if len(self._window) else None
        self._window.clear()
        if self.same_cell == "keep" and cell == self.cell:
            ev.action = "keep"
            self.kept += 1
            if win is not None and self.offline is not None:
                self.offline.extend(cell, *win)
        else:
            self._adapt(cell, ev, win)
        self._set_epsilon()


__all__ = ["ChangeTriggers"]
