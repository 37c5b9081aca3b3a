"""SKIP: HOP's sender-side capacity estimator and forecast (Chiariotti et al., IEEE/ACM ToN 2021, §V).

Per path:

1. **Capacity samples from ACK spacing.** A block's packets leave in a burst,
   so the bottleneck serves them back to back and their ACKs come one
   service time ``L / C`` apart. Every ``step_s`` (``T_k``, 5 ms) the ACKs of
   that slot give one sample: the least-squares slope of ACK time on packet
   number, fitted within each burst (a burst's first packet may wait
   behind an earlier one, so bursts are never mixed), ``C = L / slope``. A
   slot with packets long overdue and no ACK is a zero sample (outage); a
   slot with neither is a prediction-only step.
2. **An adaptive random-walk Kalman filter** ``x_{t+1} = x_t + w``, ``C_t =
   x_t + v`` with ``Q = Var w`` and ``R = Var v`` estimated online (the
   Sage-Husa recursive estimator of Gao et al. 2015, the paper's [54],
   forgetting factor ``forgetting``).
3. **Outage and step modes** (paper Fig. 2): ``outage_steps`` zero samples
   while the filter predicts a positive rate reset the mean to
   ``outage_rate``; a sample beyond ``step_sigma`` standard deviations
   (``sqrt(P + Q + R)``) starts a step: a down-step only predicts until
   ``step_exit`` consecutive normal samples, and after ``outage_steps``
   steps the mean is reset to the mean of the last ``outage_steps``
   samples; an up-step keeps updating and resets the same way.
   ``p_out`` is the running fraction of steps spent in an outage or a down-step.
4. **Forecast over a window** of ``W`` seconds, ``k = W / T_k`` steps, evolved
   blindly for ``l = tau_min / T_k`` steps: the sum of the step capacities is
   Gaussian with mean ``x_1 + (k - 1) x_2`` and variance ``k (k + l + 1) Q / 2
   + R`` (in capacity units; times ``T_k`` in bytes). ``x_2`` is the next
   step's mean given that the oldest unacknowledged packet is still in flight
   (paper eqs. 28-31, with the Kalman weights the right way round: the
   printed eq. 29 weights the prior by its own variance).
5. **Lateness** of the ``j``-th packet of a burst sent now:
   ``lambda(j) = p_out + (1 - p_out) Phi((W C_min(j) - mean) / std)``, where
   ``C_min(j)`` [bytes/s] is the capacity the packet needs given the
   unacknowledged packets queued ahead of it (the Lindley recursion solved
   for the capacity, paper eqs. 23-27: :meth:`SkipEstimator.required_rate`).

``calibrate`` (our addition, off in the paper's version): the forecast's
mean and spread come from the errors of past forecasts instead of the
random-walk formula. The formula's ``R`` enters once, as if measurement
noise averaged out over the window; but what SKIP's samples see as noise is
mostly capacity that changes every few tens of ms and then holds for the
whole window, so the formula's spread is several times too small (measured:
forecast std 5-7 kB against a realised 21-23 kB over a 22.5 ms window of the
paper's balanced case, 15-27 % of windows below the forecast's 2 %
quantile). Calibrated, each block's forecast rate ``x_f`` is scored once
its window has been measured (the mean of the capacity samples taken while
the window's packets left the bottleneck: ACKs alone), and the forecast
over a window ``W`` is Gaussian, from a least-squares recalibration
``realised = a + b x_f`` over the last ``calibration_window`` scored
forecasts: mean ``(a + b x) W``, std the residual's times ``W``
(:meth:`SkipEstimator._recalibrated`).

``queue="joint"`` (our addition, with ``calibrate``; the default
``"shared"`` is item 5 above): the packets still unacknowledged were
served during the last RTT at a capacity the ACKs have not measured yet,
which is not the window's capacity. Item 5 serves queue and burst at one
capacity, so a window forecast to be fast also drains the queue fast: when
the capacity is redrawn about once per RTT (the paper's synthetic cases)
that coupling is false, and JUMP under-sends exactly when the queue is long
(measured: with a true backlog over 15 packets at release, 26 % of the
blocks, 11-63 % of them failed). Joint: the past rate ``C_p`` and the
window rate ``C_w`` are Gaussian with the calibrated mean and spread and
correlation ``rho`` (the lag-one correlation of consecutive realised window
rates, :meth:`SkipEstimator.rate_correlation`: 0 for independent redraws,
1 for a slowly varying path, where this reduces to item 5); the backlog left
at release is ``max_b (m_b L - C_p dt_b)^+`` over the unacknowledged bursts
``b`` (``m_b`` packets from ``b`` on, ``dt_b`` since ``b`` could start), and
``lambda(j) = E_{C_p}[P(C_w W < backlog(C_p) + j L | C_p)]`` by Gauss-Hermite
quadrature (:meth:`SkipEstimator._joint_lateness`). Before the calibration
has its ``min_errors`` scored forecasts it uses the mean and spread of the
latest capacity samples (5 ms samples: wider than a window's, on the
cautious side) with ``rho = 0``, instead of the random-walk formula.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import math
from collections import deque
from statistics import NormalDist

import numpy as np

_PHI = NormalDist()


_ERFC = np.frompyfunc(math.erfc, 1, 1)
#: Gauss-Hermite nodes and weights (probabilists', weights summing to 1) of the joint queue model
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(16)
_GH_W = _GH_W / _GH_W.sum()
QUEUE_MODELS = ("shared", "joint")
#: capacity samples the joint model needs before its warm-up forecast replaces the paper's
MIN_WARMUP_SAMPLES = 8


def _phi_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF, elementwise (``erfc`` keeps the far tail exact; NumPy has no erf)."""
    return (0.5 * _ERFC(-np.asarray(x, dtype=float) / math.sqrt(2.0))).astype(float)


def truncated_mean(mu: float, sigma: float, lo: float, hi: float) -> float:
    """Mean of N(mu, sigma^2) truncated to [lo, hi] (paper eq. 30)."""
    if sigma <= 0.0:
        return min(max(mu, lo), hi)
    a, b = (lo - mu) / sigma, (hi - mu) / sigma
    z = _PHI.cdf(b) - _PHI.cdf(a)
    if z < 1e-12:
        return lo if mu < lo else hi
    return mu + sigma * (_PHI.pdf(a) - _PHI.pdf(b)) / z


class SkipEstimator:
    """SKIP for one path (module docstring). Feed it :meth:`on_sent` and
    :meth:`on_ack`; ask :meth:`forecast` and :meth:`lateness`."""

    def __init__(
        self,
        packet_bytes: int,
        *,
        step_s: float = 0.005,
        outage_rate: float = 50e3,
        forgetting: float = 0.97,
        outage_steps: int = 3,
        step_sigma: float = 3.0,
        step_exit: int = 2,
        min_rtt_window_s: float = 10.0,
        calibrate: bool = False,
        calibration_window: int = 400,
        queue: str = "shared",
    ):
        if queue not in QUEUE_MODELS:
            raise ValueError(
                f"skip.queue: unknown queue model {queue!r}; choose one of {list(QUEUE_MODELS)}"
            )
        if queue == "joint" and not calibrate:
            raise ValueError(
                "skip.queue: 'joint' needs calibrate=True (its spread and correlation come from "
                "the scored forecasts)"
            )
        self.L = float(packet_bytes)
        self.queue = queue
        self.step_s = float(step_s)
        self.outage_rate = float(outage_rate)
        self.b = float(forgetting)
        self.outage_steps = int(outage_steps)
        self.step_sigma = float(step_sigma)
        self.step_exit = int(step_exit)
        self.min_rtt_window_s = float(min_rtt_window_s)
        self.calibrate = bool(calibrate)
        # filter state [bytes/s and its squares]
        self.x = self.outage_rate
        self.P = self.outage_rate**2
        self.Q = 1.0
        self.R = 1.0
        self.t = 0  # updates done (the recursive estimator's d_t)
        self.has_sample = False
        self.mode = "normal"  # normal | down | up
        self.mode_steps = 0
        self.mode_ok = 0
        self.recent: deque = deque(maxlen=self.outage_steps)  # last samples [bytes/s]
        self.p_out = 0.0
        self._steps = 0
        self._bad_steps = 0
        # ACK bookkeeping
        self.slot = 0  # index of the open slot
        self._slot_acks: list[
            tuple[float, int, float]
        ] = []  # (sent_time, pn, ack_time) in the open slot
        self.unacked: deque = deque()  # (pn, sent_time) in send order
        self.last_ack_pn = -1
        self.last_ack_time = -1.0
        self.rtts: deque = deque()  # (time, rtt) for the windowed minimum
        self.min_rtt = math.inf
        #: the latest (slot end time [s], capacity sample [bytes/s]): enough to cover a scored window
        self.samples: deque = deque(maxlen=64)
        # calibration: rate errors of past block forecasts [bytes/s]
        self._pending: deque = deque()  # (window start, window end, forecast rate) not scored yet
        self._errors: deque = deque(maxlen=int(calibration_window))
        self.min_errors = 30

    # -- feedback -------------------------------------------------------
    def on_sent(self, now: float, first_pn: int, n: int) -> None:
        self._advance(now)
        for pn in range(first_pn, first_pn + n):
            self.unacked.append((pn, now))

    def on_ack(self, pn: int, sent_time: float, now: float) -> None:
        self._advance(now)
        un = self.unacked
        while un and un[0][0] <= pn:  # per-path FIFO: an ACK settles every older packet
            un.popleft()
        self.last_ack_pn, self.last_ack_time = pn, now
        rtt = now - sent_time
        rtts = self.rtts  # a monotone deque: the windowed minimum in O(1) amortised
        while rtts and rtts[-1][1] >= rtt:
            rtts.pop()
        rtts.append((now, rtt))
        while rtts[0][0] < now - self.min_rtt_window_s:
            rtts.popleft()
        self.min_rtt = rtts[0][1]
        self._slot_acks.append((sent_time, pn, now))

    # -- the slot clock ---------------------------------------------------
    def _advance(self, now: float) -> None:
        """Close every slot that ended before ``now``."""
        slot = int(now / self.step_s)
        while self.slot < slot:
            end = (self.slot + 1) * self.step_s
            acks = self._slot_acks  # ACKs are recorded in time order
            n = 0
            while n < len(acks) and acks[n][2] < end:
                n += 1
            self._slot_acks = acks[n:]
            self._close_slot(end, acks[:n])
            self.slot += 1

    def _close_slot(self, end: float, acks) -> None:
        c = self._sample(acks)
        if (
            c is None
            and not acks
            and self.unacked
            and self.has_sample
            and math.isfinite(self.min_rtt)
        ):
            # the oldest packet is overdue by a whole slot: no capacity at all
            if self.unacked[0][1] + self.min_rtt + self.L / max(self.x, 1.0) + self.step_s < end:
                c = 0.0
        self.step(c)
        if c is not None:
            self.samples.append((end, c))
        self._score(end)

    def _sample(self, acks) -> float | None:
        """Capacity [bytes/s] from one slot's ACKs: the pooled within-burst slope."""
        bursts: dict[float, list[tuple[int, float]]] = {}
        for sent_time, pn, t in acks:
            bursts.setdefault(sent_time, []).append((pn, t))
        sxx = sxy = 0.0
        for pts in bursts.values():
            if len(pts) < 2:
                continue
            pn = np.array([p for p, _ in pts], dtype=float)
            t = np.array([a for _, a in pts])
            pn -= pn.mean()
            sxx += float(pn @ pn)
            sxy += float(pn @ (t - t.mean()))
        if sxx <= 0.0 or sxy <= 0.0:
            return None
        return self.L * sxx / sxy

    # -- the filter ---------------------------------------------------------
    def step(self, c: float | None) -> None:
        """One filter step of ``step_s`` with sample ``c`` [bytes/s] (None: predict only)."""
        self._steps += 1
        if c is None:
            self.P += self.Q
            self._count_bad()
            return
        if not self.has_sample:  # the first sample initialises the filter
            self.has_sample = True
            self.x, self.P, self.Q, self.R = c, (0.25 * c) ** 2, (0.05 * c) ** 2, (0.1 * c) ** 2
            self.recent.append(c)
            return
        self.recent.append(c)
        full = len(self.recent) == self.outage_steps
        if full and max(self.recent) == 0.0 and self.x > self.outage_rate:
            self.x, self.mode, self.mode_steps, self.mode_ok = self.outage_rate, "down", 0, 0
            self.P += self.Q
            self._count_bad(True)
            return
        P_prior = self.P + self.Q
        jump = abs(c - self.x) > self.step_sigma * math.sqrt(P_prior + self.R)
        if self.mode == "normal" and jump:
            self.mode, self.mode_steps, self.mode_ok = ("down" if c < self.x else "up"), 0, 0
        if self.mode != "normal":
            self.mode_steps += 1
            self.mode_ok = 0 if jump else self.mode_ok + 1
            if self.mode_ok >= self.step_exit:
                self.mode = "normal"
            elif self.mode_steps >= self.outage_steps and full:
                # a long-standing step: restart from the recent mean
                self.x = sum(self.recent) / len(self.recent)
                self.P = P_prior
                self.mode = "normal"
                self._count_bad(True)
                return
            if self.mode == "down":  # open loop: predict only
                self.P = P_prior
                self._count_bad(True)
                return
        self._update(c, P_prior)
        self._count_bad(self.mode == "down")

    def _update(self, c: float, P_prior: float) -> None:
        """Kalman update with the Sage-Husa recursive estimates of R and Q."""
        self.t += 1
        d = (1.0 - self.b) / (1.0 - self.b ** (self.t + 1))
        e = c - self.x
        self.R = max((1.0 - d) * self.R + d * (e * e - P_prior), 1e-6 * self.x * self.x + 1.0)
        K = P_prior / (P_prior + self.R)
        P_old = self.P
        self.x = max(self.x + K * e, 0.0)
        self.P = (1.0 - K) * P_prior
        self.Q = max(
            (1.0 - d) * self.Q + d * (K * K * e * e + self.P - P_old), 1e-6 * self.x * self.x + 1.0
        )

    def _count_bad(self, bad: bool = False) -> None:
        self._bad_steps += bool(bad)
        self.p_out = self._bad_steps / self._steps

    # -- calibration (our addition) --------------------------------------------
    def note_forecast(self, now: float, window_s: float) -> None:
        """Remember the filter's rate at a block release, to score it once
        the window [now, now + window_s] has been measured (:meth:`_score`)."""
        if self.has_sample and window_s > 0.0:
            self._pending.append((now, now + window_s, self.x))

    def _score(self, end: float) -> None:
        """Score the forecasts whose window the ACKs have now covered: the
        realised rate is the mean of the capacity samples taken while the
        window's packets left the bottleneck (sample time minus the base
        RTT); the error against the rate forecast then joins the history
        the calibrated forecast is built from."""
        tau = self.min_rtt if math.isfinite(self.min_rtt) else 0.0
        pend = self._pending
        while pend and pend[0][1] + tau <= end - self.step_s:
            t0, t1, x_f = pend.popleft()
            vals = [c for t, c in self.samples if t0 < t - tau <= t1 + self.step_s]
            if vals:
                self._errors.append((x_f, sum(vals) / len(vals)))

    def _recalibrated(self) -> tuple[float, float]:
        """(mean, std) of the window-average rate [bytes/s] from the linear
        recalibration ``realised = a + b x_f + e`` fitted by least squares
        over the scored forecasts: ``b`` near 1 where the filter tracks the
        capacity (slow changes), near 0 where its wandering carries no
        information (fast i.i.d. changes), the forecast then falling back to
        the measured marginal distribution."""
        pairs = np.asarray(self._errors)
        xf, real = pairs[:, 0], pairs[:, 1]
        vx = float(xf.var())
        b = (
            float(np.clip(((xf - xf.mean()) * (real - real.mean())).mean() / vx, 0.0, 1.0))
            if vx > 0
            else 0.0
        )
        a = float(real.mean() - b * xf.mean())
        resid = real - (a + b * xf)
        return max(a + b * self.x, 0.0), float(resid.std())

    @property
    def calibrated(self) -> bool:
        """The forecast uses the error history (``calibrate`` on and enough of it)."""
        return self.calibrate and len(self._errors) >= self.min_errors

    def rate_correlation(self) -> float:
        """Lag-one correlation of consecutive realised window rates over the
        scored forecasts, clipped to [0, 1] (1 with too few of them)."""
        if len(self._errors) < self.min_errors:
            return 1.0
        r = np.asarray(self._errors)[:, 1]
        a, b = r[:-1] - r[:-1].mean(), r[1:] - r[1:].mean()
        d = math.sqrt(float(a @ a) * float(b @ b))
        return float(np.clip(float(a @ b) / d, 0.0, 1.0)) if d > 0.0 else 1.0

    def _window_rate(self) -> tuple[float, float, float] | None:
        """(mean, std [bytes/s], rho) of the joint queue model; None: use item 5."""
        if self.calibrated:
            mu, sd = self._recalibrated()
            return mu, sd, self.rate_correlation()
        if len(self.samples) < MIN_WARMUP_SAMPLES:
            return None
        v = np.fromiter((c for _, c in self.samples), float, len(self.samples))
        return float(v.mean()), float(v.std()), 0.0

    def _joint_lateness(
        self, now: float, window: float, n: int, mu: float, sd: float, rho: float
    ) -> np.ndarray:
        """lambda(1..n) of the joint queue model (module docstring)."""
        tau = self.min_rtt if math.isfinite(self.min_rtt) else 0.0
        bursts = []  # (bytes from burst b on, time it has had to drain)
        if self.unacked:
            t_dep = self.last_ack_time - tau if self.last_ack_time >= 0 else -math.inf
            m, seen, prev = len(self.unacked), 0, None
            for _pn, sent in self.unacked:
                if sent != prev:
                    bursts.append(((m - seen) * self.L, now - max(sent, t_dep)))
                    prev = sent
                seen += 1
        need = np.arange(1, n + 1, dtype=float) * self.L
        cond_sd = max(sd * math.sqrt(max(1.0 - rho * rho, 0.0)), 1e-9 * max(mu, 1.0)) * window
        late = np.zeros(n)
        for x, w in zip(_GH_X, _GH_W):
            c_past = max(mu + sd * x, 0.0)
            backlog = max([0.0, *(q - c_past * dt for q, dt in bursts)])
            c_mean = (mu + rho * (c_past - mu)) * window
            late += w * _phi_cdf((backlog + need - c_mean) / cond_sd)
        return np.clip(late, 0.0, 1.0)

    # -- forecast and lateness ------------------------------------------------
    def forecast(self, now: float, window_s: float) -> tuple[float, float]:
        """(mean, std) [bytes] of the capacity the path offers over the next
        ``window_s`` seconds (module docstring, item 4)."""
        self._advance(now)
        if window_s <= 0.0:
            return 0.0, 0.0
        if self.calibrated:
            rate, std = self._recalibrated()
            return rate * window_s, std * window_s
        Tk = self.step_s
        k = window_s / Tk
        tau = self.min_rtt if math.isfinite(self.min_rtt) else 0.0
        ell = tau / Tk + (now - self.slot * Tk) / Tk  # feedback delay + the open slot
        x1 = self.x
        x2 = self._next_step_mean(now, ell)
        mean = Tk * (x1 + (k - 1.0) * x2) if k > 1.0 else Tk * k * x1
        var = k * (k + ell + 1.0) * self.Q / 2.0 + self.R
        std = Tk * math.sqrt(max(var, 0.0))
        return max(mean, 0.0), std

    def _next_step_mean(self, now: float, ell: float) -> float:
        """x_2: the mean one step on, given that the oldest unacknowledged
        packet has not been acknowledged yet (its service took at least the
        time elapsed since it could have started): a truncated prior."""
        if not self.unacked or not math.isfinite(self.min_rtt):
            return self.x
        sent = self.unacked[0][1]
        start = max(sent, self.last_ack_time - self.min_rtt) if self.last_ack_time >= 0 else sent
        waited = now - start - self.min_rtt
        if waited <= 0.0:
            return self.x
        c_max = self.L / waited
        var1 = self.P + (ell + 1.0) * self.Q
        c1 = truncated_mean(self.x, math.sqrt(var1), 0.0, c_max)
        gain = var1 / (var1 + self.R)
        return self.x + gain * (c1 - self.x)

    def required_rate(self, now: float, deadline_s: float, n: int) -> np.ndarray:
        """C_min(j), j = 1..n [bytes/s]: the capacity the bottleneck needs from
        now on for the ``j``-th packet of a burst sent now to make
        ``deadline_s`` (paper eq. 27). Each unacknowledged burst ``b`` may start
        a busy period: its packets and every later one, ``m_b + j`` packets,
        must leave between its start (its send time, or the estimated
        departure of the latest acknowledged packet) and the deadline minus
        the one-way delay; the most stringent start point decides. The queue
        is thus served at the same unknown capacity as the new packets,
        which is what makes a long queue a sign of a slow path (a queue
        estimated at the mean capacity ignores that, and underestimates it
        exactly when it matters)."""
        tau = self.min_rtt if math.isfinite(self.min_rtt) else 0.0
        end = now + deadline_s - tau / 2.0
        j = np.arange(1, n + 1, dtype=float)
        if end <= now:
            return np.full(n, math.inf)
        need = j * self.L / (end - now)
        if self.unacked:
            t_dep = self.last_ack_time - tau if self.last_ack_time >= 0 else -math.inf
            m = len(self.unacked)
            seen = 0
            prev = None
            for _pn, sent in self.unacked:  # burst starts, oldest first
                if sent != prev:
                    start = sent if sent > t_dep else t_dep
                    if start < end:
                        need = np.maximum(need, (m - seen + j) * self.L / (end - start))
                    prev = sent
                seen += 1
        return need

    def lateness(self, now: float, deadline_s: float, n: int) -> np.ndarray:
        """lambda(1..n): probability that the j-th packet of a burst sent now
        misses ``deadline_s`` [s]: P(capacity < C_min(j)) under the forecast
        of the average capacity over the window (module docstring, item 5)."""
        if n <= 0:
            return np.zeros(0)
        tau = self.min_rtt if math.isfinite(self.min_rtt) else 0.0
        window = deadline_s - tau / 2.0
        if window <= 0.0 or not self.has_sample:
            return np.ones(n)
        if self.queue == "joint":
            joint = self._window_rate()
            if joint is not None:
                return self.p_out + (1.0 - self.p_out) * self._joint_lateness(
                    now, window, n, *joint
                )
        mean, std = self.forecast(now, window)
        need = self.required_rate(now, deadline_s, n) * window
        if std <= 0.0:
            late = (need > mean).astype(float)
        else:
            late = _phi_cdf((need - mean) / std)
        return self.p_out + (1.0 - self.p_out) * late

    def on_time_at_rate(self, now: float, deadline_s: float, n: int, rate: float) -> int:
        """How many of ``n`` packets of a burst sent now make ``deadline_s`` at capacity ``rate`` [bytes/s]."""
        if n <= 0:
            return 0
        return int(np.count_nonzero(self.required_rate(now, deadline_s, n) <= rate))

    @property
    def rate(self) -> float:
        """The mean capacity [bytes/s]: the filter's, recalibrated when ``calibrate`` is on."""
        return self._recalibrated()[0] if self.calibrated else self.x

    @property
    def rate_std(self) -> float:
        """Standard deviation of the capacity [bytes/s] (of one step; of a window's average when calibrated)."""
        return self._recalibrated()[1] if self.calibrated else math.sqrt(self.P + self.Q + self.R)


__all__ = ["SkipEstimator", "truncated_mean", "QUEUE_MODELS"]
