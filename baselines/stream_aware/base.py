"""Shared machinery of the packet-level stream-aware schedulers.

:class:`StreamAwareScheduler` turns the live connection view into the fluid
model's terms at every decision, so that the packet-level SRPT-ECF and SA-ECF
apply the rule of :mod:`baselines.stream_aware.fluid` packet by packet:

* **Path model** (per path: payload rate ``R`` [bytes/s], forward delay ``D``
  [s] of new data, sorted by ``D``; the ECF thresholds ``TH_j = sum_{i<j}
  R_i (D_j - D_i)`` follow).

  - *given* (``rates_mbps`` and ``one_way_delays_ms``): the fluid model's
    constants. ``R`` is the wire rate scaled by payload/packet size (the
    fluid model counts application bytes); ``D`` is the one-way propagation
    delay.
  - *measured* (default): ``R = cwnd / srtt`` (ECF's rate estimate: what the
    transport can push per RTT) and ``D = srtt - min_rtt / 2``, the forward
    delay of new data including the current queueing (``delay_metric:
    rtt`` uses ``srtt``, i.e. completion = acknowledgement as in the paper's
    definition; the emulator's completion is the arrival at the client,
    hence the one-way default). Until some path has an RTT sample all paths
    look alike (the RFC 9002 initial RTT); after that, a path still without
    a sample is left out of the model and probed one packet at a time with
    the least urgent data.

* **Pacing to the ACK clock** (``pace``; on by default with a given path
  model). A fluid path serves the first eligible stream *at every instant*;
  a packet sender that hands a path more than it can serialise commits data
  to it early, and a stream released later cannot pre-empt it. With
  ``pace`` the scheduler keeps, per path, the date at which the bottleneck
  finishes what it was given (``busy_until``, from the known rate) and
  commits a packet only if its serialisation starts before the next date at
  which the scheduler is sure to be asked again (the earliest expected ACK
  arrival of what is in flight: ``start + size / rate + 2 D``, ACKs on every
  packet). Decisions are made in the order of these start dates (the path
  that frees first decides first), so the packet-level state at each
  decision is the fluid state at the decision's own start date, up to one
  packet. With ``ack.every`` > 1 or delayed ACKs the expected ACK dates are
  early and the paths idle for a while after each horizon;
  ``horizon_slack_ms`` widens the horizon.

* **In-flight term of Eq. 5**: the latest expected arrival of each stream's
  packets sent so far (``start + size / rate + D``, or ``now + D`` with the
  measured model), as the paper suggests (record the last send per path and
  add the path delay). With pacing, bytes committed to a path but not yet
  serialised count as unsent and a packet in service counts for its sent
  fraction (:meth:`StreamAwareScheduler.fluid_state`), so that Eq. 5 sees the
  fluid model's state.

Retransmissions are sent first by the connection whatever the decision's
stream; the scheduler then only picks the path (the fastest available one).

Known offsets against the fluid model (emulator limits, not bugs here):

* The scheduler is asked again only after an ACK, a loss or an application
  event (``envs/transport.py``, ``Connection.try_send``; the 1 ms idle re-ask
  applies only while nothing is in flight). When a stream is released while
  nothing is in flight, the first ACK is one RTT away, so the paced
  scheduler must commit the first RTT of data at once, and a stream released
  within that RTT cannot pre-empt it (offset up to one RTT of the fastest
  path). ``view.wake_at(t)`` could replace that commitment by a wake-up at
  the next ACK-free date; this scheduler does not use it yet. (Streams
  released at the same date are opened in one event before the first
  decision, so at t = 0 all of them are known.)
* Otherwise a stream is late by at most the packet in service (which it
  cannot pre-empt) plus one packet committed ahead to keep the path busy
  until the next ACK, and Eq. 5 near-ties (keys within about a packet time)
  can be decided either way, which swaps two streams.
* The transport does not pace (``envs/transport.py``), so with the measured
  model a cwnd-sized burst goes into the bottleneck at once; with a small
  buffer it overflows, more often for ECF-style schedulers that concentrate
  bursts on the fast path.
"""

from __future__ import annotations

import math
from collections import deque

from envs.scheduler import ConnectionView, Decision, Scheduler

INF = math.inf


class PathModel:
    """One decision's view of the paths, in the fluid model's terms.

    ``idx[j]``: view index of the j-th fastest modelled path; ``rate[j]``
    [payload bytes/s]; ``delay[j]`` [s]; ``th[j]`` [bytes]; ``start[j]`` [s]:
    earliest date at which new data can start on that path.
    """

    __slots__ = ("idx", "rate", "delay", "th", "start", "rsum", "rdsum", "rank")

    def __init__(self, entries: list[tuple[int, float, float, float]]):
        entries = sorted(entries, key=lambda e: (e[2], e[0]))
        self.idx = [e[0] for e in entries]
        self.rate = [e[1] for e in entries]
        self.delay = [e[2] for e in entries]
        self.start = [e[3] for e in entries]
        self.rank = {p: j for j, p in enumerate(self.idx)}
        self.th: list[float] = []
        self.rsum: list[float] = []
        self.rdsum: list[float] = []
        r = rd = 0.0
        for rate, d in zip(self.rate, self.delay):
            self.th.append(d * r - rd)
            r += rate
            rd += rate * d
            self.rsum.append(r)
            self.rdsum.append(rd)

    def __len__(self) -> int:
        return len(self.idx)

    def completion(self, size: float) -> float:
        """Isolated ECF completion time ``C*(size)`` [s] (0 for no data)."""
        if size <= 0 or not self.idx:
            return 0.0
        j = 0
        for k, th in enumerate(self.th):
            if size > th:
                j = k
        return (size + self.rdsum[j]) / self.rsum[j]


class StreamAwareScheduler(Scheduler):
    """Base of SRPT-ECF and SA-ECF: path model, pacing, probing, commit records.

    Subclasses implement :meth:`select` (which stream the path of rank ``j``
    serves, or ``None`` to leave it idle) and may override
    :meth:`on_new_streams` (called with the streams first seen at a decision).
    """

    name = "stream_aware"

    def __init__(
        self,
        rates_mbps=None,
        one_way_delays_ms=None,
        pace="auto",
        delay_metric: str = "one_way",
        horizon_slack_ms: float = 0.0,
        use_priority: bool = True,
    ) -> None:
        if (rates_mbps is None) != (one_way_delays_ms is None):
            raise ValueError(
                "give both rates_mbps and one_way_delays_ms (the fluid path model) or neither"
            )
        self.given_rates = None if rates_mbps is None else [float(r) * 1e6 / 8 for r in rates_mbps]
        self.given_delays = (
            None if one_way_delays_ms is None else [float(d) / 1000 for d in one_way_delays_ms]
        )
        if self.given_rates is not None and len(self.given_rates) != len(self.given_delays):
            raise ValueError("rates_mbps and one_way_delays_ms must have one entry per path")
        if pace == "auto":
            pace = self.given_rates is not None
        if pace and self.given_rates is None:
            raise ValueError("pace needs the path rates (rates_mbps, one_way_delays_ms)")
        if delay_metric not in ("one_way", "rtt"):
            raise ValueError(f"delay_metric: one_way or rtt, not {delay_metric!r}")
        self.pace = bool(pace)
        self.delay_metric = delay_metric
        self.horizon_slack = float(horizon_slack_ms) / 1000
        self.use_priority = bool(use_priority)
        self._reset_state()

    # ------------------------------------------------------------ state
    def _reset_state(self) -> None:
        self.busy_until: list[float] = []
        self.acks: list[deque] = []
        self.tin: dict[int, float] = {}
        self.seen: set[int] = set()
        # paced model: per stream, packets not yet fully serialised
        # (start, done, payload bytes, delay); ``tin_done`` covers the others
        self.queued: dict[int, deque] = {}
        self.tin_done: dict[int, float] = {}

    def reset(self, view: ConnectionView) -> None:
        self._reset_state()
        n = len(view.paths)
        if self.given_rates is not None and len(self.given_rates) != n:
            raise ValueError(
                f"{self.name}: the path model has {len(self.given_rates)} paths, the connection {n}"
            )
        self.busy_until = [0.0] * n
        self.acks = [deque() for _ in range(n)]

    def prio(self, st) -> int:
        return st.priority if self.use_priority else 0

    # ------------------------------------------------------------ model
    def model(self, view: ConnectionView) -> PathModel:
        now = view.now
        paths = view.paths
        entries = []
        if self.given_rates is not None:
            for i, p in enumerate(paths):
                rate = self.given_rates[i] * p.payload / p.mss
                start = self.busy_until[i] if self.pace and self.busy_until[i] > now else now
                entries.append((i, rate, self.given_delays[i], start))
        else:
            any_sample = any(p.has_rtt_sample for p in paths)
            for i, p in enumerate(paths):
                if not p.has_rtt_sample:
                    if any_sample:
                        continue
                    # nothing measured yet: every path looks alike (the RFC 9002
                    # initial RTT), so the first window goes out on all of them
                    entries.append((i, p.cwnd / p.srtt * p.payload / p.mss, p.srtt / 2, now))
                    continue
                rate = p.cwnd / p.srtt * p.payload / p.mss
                d = p.srtt if self.delay_metric == "rtt" else p.srtt - p.min_rtt / 2
                entries.append((i, rate, max(d, 0.0), now))
        return PathModel(entries)

    def horizon(self, now: float) -> float:
        """Latest start date of a packet committed now (pacing)."""
        w = INF
        for dq in self.acks:
            while dq and dq[0] <= now:
                dq.popleft()
            if dq and dq[0] < w:
                w = dq[0]
        return w + self.horizon_slack

    # ------------------------------------------------------------ hooks
    def on_new_streams(self, view: ConnectionView, model: PathModel, new: list) -> None:
        """Streams seen for the first time (sorted by release time, id)."""

    def prepare(self, view: ConnectionView, model: PathModel, streams: list) -> None:
        """Called once per decision, before :meth:`select` (e.g. to build the order)."""

    def select(self, view: ConnectionView, model: PathModel, j: int, streams: list):
        """Stream id that the path of rank ``j`` serves now, or None (the path idles)."""
        raise NotImplementedError

    def probe_stream(self, view: ConnectionView, streams: list):
        """Stream whose data probes an unmeasured path (default: the least urgent)."""
        return streams[-1].stream_id if streams else None

    # ------------------------------------------------------------ decide
    def decide(self, view: ConnectionView) -> int | Decision | None:
        paths = view.paths
        now = view.now
        streams = view.streams_pending()
        model = self.model(view)
        if streams:
            new = [st for st in streams if st.stream_id not in self.seen]
            if new:
                new.sort(key=lambda st: (st.release_time, st.stream_id))
                for st in new:
                    self.seen.add(st.stream_id)
                self.on_new_streams(view, model, new)
        self.prepare(view, model, streams)
        w = self.horizon(now) if self.pace else INF
        cands = [
            j for j in range(len(model)) if paths[model.idx[j]].has_room and model.start[j] < w
        ]
        cands.sort(key=lambda j: (model.start[j], j))

        if view.retransmit_bytes > 0:
            # the connection sends the retransmission first, on the path we name
            if cands:
                j = cands[0]
                self.commit(view, model, j, None)
                return model.idx[j]
            return self._probe_or_wait(view, model, streams, retransmit=True)

        for j in cands:
            sid = self.select(view, model, j, streams)
            if sid is not None:
                self.commit(view, model, j, sid)
                return Decision(model.idx[j], stream_id=sid)
        return self._probe_or_wait(view, model, streams)

    def _probe_or_wait(
        self, view: ConnectionView, model: PathModel, streams, retransmit: bool = False
    ):
        """Probe a path with no RTT sample (measured model), one packet in flight at a time."""
        if self.given_rates is not None:
            return None
        for i, p in enumerate(view.paths):
            if i in model.rank or not p.has_room or p.packets_in_flight > 0:
                continue
            if retransmit:
                return i
            sid = self.probe_stream(view, streams)
            if sid is not None:
                return Decision(i, stream_id=sid)
        return None

    def commit(self, view: ConnectionView, model: PathModel, j: int, sid) -> None:
        """Record a packet handed to the path of rank ``j`` (stream ``sid``;
        None: a retransmission of unknown stream, counted as a full packet)."""
        i = model.idx[j]
        p = view.paths[i]
        now = view.now
        nbytes = p.payload
        if sid is not None:
            st = next((x for x in view.streams_pending() if x.stream_id == sid), None)
            if st is not None:
                nbytes = max(1, min(p.payload, st.remaining, view.send_window))
        if self.given_rates is not None:
            start = model.start[j] if model.start[j] > now else now
            done = start + (nbytes + p.mss - p.payload) / self.given_rates[i]
            arrival = done + self.given_delays[i]
            if self.pace:
                self.busy_until[i] = done
                self.acks[i].append(arrival + self.given_delays[i])
                if sid is not None:
                    self.queued.setdefault(sid, deque()).append(
                        (start, done, nbytes, self.given_delays[i])
                    )
        else:
            arrival = now + model.delay[j]
        if sid is not None:
            t = self.tin.get(sid)
            if t is None or arrival > t:
                self.tin[sid] = arrival

    def fluid_state(self, sid: int, now: float, remaining: int) -> tuple[float, float | None]:
        """(unsent bytes, in-flight arrival date) of a stream at ``now`` as the
        fluid model counts them: with pacing, bytes handed to a path but not
        serialised yet are unsent, and a packet being serialised counts for
        the fraction already sent (its bytes so far arrive at ``now + D``).
        Without pacing: the stream's unsent bytes and recorded arrival."""
        if not self.pace:
            return float(remaining), self.tin.get(sid)
        dq = self.queued.get(sid)
        tin = self.tin_done.get(sid)
        unsent = float(remaining)
        if dq:
            while dq and dq[0][1] <= now:
                _, done, _, d = dq.popleft()
                if tin is None or done + d > tin:
                    tin = done + d
            if tin is not None:
                self.tin_done[sid] = tin
            for start, done, nbytes, d in dq:
                if start >= now:
                    unsent += nbytes
                else:  # in service
                    unsent += nbytes * (done - now) / (done - start)
                    if tin is None or now + d > tin:
                        tin = now + d
        return unsent, tin


__all__ = ["PathModel", "StreamAwareScheduler"]
