"""Links and paths, composed like Mahimahi shells.

A :class:`Link` is a drop-tail FIFO bottleneck served along a capacity trace.
Because the queue is FIFO, a packet's departure time is known the moment it
is admitted, so the link needs no events of its own: it keeps the departure
times of the packets still queued (to measure occupancy) and the position of
its server on the cumulative-capacity curve.

A :class:`Path` is one direction of data (forward link + propagation delay
with jitter + random loss) plus the return direction that carries ACKs.
Jitter never reorders packets within a path: a packet never arrives before
the one sent ahead of it on the same path.

A :class:`ScheduledPath` is a Path whose delay, loss and buffer change at
given emulated times (the scenario key ``schedule``); capacity changes are
part of its link's capacity curve. Paths without a schedule are plain
:class:`Path` objects and pay nothing for the feature.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

try:  # the compiled draws' address-of (the .py core never runs that code) and directives
    import cython
except ImportError:  # pragma: no cover - the .py build installed without Cython
    from envs._cython_stub import cython  # type: ignore[assignment]

from envs.seeds import generator, state_words
from envs.slab import zeroed_floats, zeroed_ints
from envs.traces.base import CapacityTrace, StepSeries
from envs.wire import ROWS, regrown

INF = math.inf
#: the .py core makes random draws in blocks of _BLOCK, each drawn in _SUB-draw parts as
#: needed: one NumPy call per 512 packets, and an episode that needs few draws
#: does not pay for 4 096 (a path's first block was ~2 % of a short minRTT
#: episode's CPU time). Parts of one generator's stream in order are the same
#: numbers as the whole block (NumPy draws element by element). The compiled core
#: draws one number at a time through the bit generator's C interface with NumPy's
#: algorithms (envs/link_draws.h): the same numbers again, with no NumPy call per part
#: and no draws left over at the end of an episode (in a 2 MB minRTT download a
#: quarter of the Gamma factors drawn went unused, and the Gamma calls took 6 % of its
#: CPU time, perf). Both keep a block's end: where a
#: change of deviation drops the rest of a block (DelayModel.set), the generator
#: stands at the block's end in either core.
_BLOCK = 4096
_SUB = 512
#: True in the compiled module, which draws through the bit generator's C interface; the
#: .py core reads a part of a block as a list (faster there than indexing an array)
COMPILED = not __file__.endswith(".py")
_NO_DRAWS = np.empty(0)


def _draws(block: np.ndarray):
    """A block of random draws as the module reads it (``COMPILED``)."""
    return block if COMPILED else block.tolist()


class Link:
    """Drop-tail bottleneck. Buffer limit in packets and/or bytes (None = unlimited).

    Several paths (of one or several connections) may share one Link object:
    they then share its queue and capacity. The queue is a ring of the
    departure times [s] and sizes [bytes] of the admitted packets (columns of
    :mod:`envs.wire`: typed arrays in the compiled core), oldest first.
    """

    __slots__ = (
        "capacity",
        "_buffer_packets",
        "_buffer_bytes",
        "_limit_packets",
        "_limit_bytes",
        "name",
        "_dep",
        "_size",
        "_head",
        "_n",
        "_mask",
        "_queued_bytes",
        "_last_departure",
        "_pos",
        "_rate",
        "drops",
        "packets_served",
        "bytes_served",
        "offset",
    )

    def __init__(
        self,
        capacity: CapacityTrace,
        buffer_packets: int | None = None,
        buffer_bytes: int | None = None,
        name: str = "link",
        offset: float = 0.0,
    ):
        self.capacity = capacity
        #: emulated time 0 is trace time ``offset`` [s] (a random start into a
        #: long trace makes each seed see a different stretch of it)
        self.offset = float(offset)
        self.buffer_packets = buffer_packets
        self.buffer_bytes = buffer_bytes
        self.name = name
        # the queue (class docstring): departure time [s] and size [bytes] of each admitted packet
        self._dep = zeroed_floats(ROWS)
        self._size = zeroed_ints(ROWS)
        self._head = 0
        self._n = 0
        self._mask = ROWS - 1
        self._queued_bytes = 0
        self._last_departure = 0.0
        self._pos = 0.0  # server position on C(t) [bytes]
        # bytes/s of a constant-rate trace; 0.0 for a time-varying one (a trace has capacity)
        self._rate = capacity.constant_rate if capacity.is_constant else 0.0
        self.drops = 0
        self.packets_served = 0
        self.bytes_served = 0

    @property
    def buffer_packets(self):
        """Drop-tail limit [packets]; None: none."""
        return self._buffer_packets

    @buffer_packets.setter
    def buffer_packets(self, value) -> None:
        self._buffer_packets = value
        self._limit_packets = INF if value is None else float(value)

    @property
    def buffer_bytes(self):
        """Drop-tail limit [bytes]; None: none."""
        return self._buffer_bytes

    @buffer_bytes.setter
    def buffer_bytes(self, value) -> None:
        self._buffer_bytes = value
        self._limit_bytes = INF if value is None else float(value)

    def offered_bytes(self, t0: float, t1: float) -> float:
        """Capacity the link offered over emulated [t0, t1] [bytes]."""
        cap = self.capacity
        return cap.cum_bytes(t1 + self.offset) - cap.cum_bytes(t0 + self.offset)

    def occupancy(self, now: float) -> tuple[int, int]:
        """(packets, bytes) admitted and not yet fully transmitted at ``now``."""
        self._drain(now)
        return self._n, self._queued_bytes

    def _drain(self, now: float) -> None:
        """Drop the packets that have left the queue by ``now`` [s]."""
        while self._n > 0 and self._dep[self._head] <= now:
            self._queued_bytes -= self._size[self._head]
            self._head = (self._head + 1) & self._mask
            self._n -= 1

    @cython.boundscheck(False)  # every row is masked into the ring: in range
    @cython.wraparound(False)
    def admit(self, now: float, size: int) -> float:
        """Enqueue a packet of ``size`` bytes at ``now``; return its departure
        time [s], or -1.0 if the drop-tail buffer is full."""
        while (
            self._n > 0 and self._dep[self._head] <= now
        ):  # _drain, inlined on the per-packet path
            self._queued_bytes -= self._size[self._head]
            self._head = (self._head + 1) & self._mask
            self._n -= 1
        if self._n >= self._limit_packets or self._queued_bytes + size > self._limit_bytes:
            self.drops += 1
            return -1.0
        rate = self._rate
        if rate > 0.0:
            start = now if now > self._last_departure else self._last_departure
            departure = start + size / rate
        else:
            cap = self.capacity
            c_now = cap.cum_bytes(now + self.offset)
            pos = (self._pos if self._pos > c_now else c_now) + size
            self._pos = pos
            departure = cap.time_at(pos) - self.offset
        self._last_departure = departure
        if self._n > self._mask:
            self._dep = regrown(self._dep, "d", self._head, self._n)
            self._size = regrown(self._size, "q", self._head, self._n)
            self._head = 0
            self._mask = 2 * self._mask + 1
        r = (self._head + self._n) & self._mask
        self._dep[r] = departure
        self._size[r] = size
        self._n += 1
        self._queued_bytes += size
        self.packets_served += 1
        self.bytes_served += size
        return departure


class RandomDraws:
    """The random numbers of a path model (:class:`DelayModel`, :class:`LossModel`): those of
    a NumPy ``Generator``, or, given a seed sequence (:class:`envs.seeds.ChildSeed`,
    ``numpy.random.SeedSequence``), those of ``numpy.random.Generator(PCG64(seq))``, which
    the compiled core draws from a PCG64 of its own (envs/link_draws.h) without building
    the NumPy objects."""

    __slots__ = ("_rng", "_bitgen")

    def _draw_from(self, rng) -> None:
        """Draw from ``rng``: a ``numpy.random.Generator`` or a seed sequence."""
        if isinstance(rng, np.random.Generator):
            self._rng = rng
            if COMPILED:  # the Generator's bit generator, whose C interface draws here
                self._bitgen = PyCapsule_GetPointer(rng.bit_generator.capsule, b"BitGenerator")  # type: ignore[name-defined]  # noqa: F821
            return
        w = state_words(rng, 4)  # (also checks that rng is a seed sequence)
        if COMPILED:
            self._rng = None
            self._bitgen = falcon_stream_seed(cython.address(self._stream), w[0], w[1], w[2], w[3])  # type: ignore[attr-defined,name-defined]  # noqa: F821
        else:
            self._rng = generator(rng)


class DelayModel(RandomDraws):
    """Per-packet base RTT: ``mean(t) * G`` with ``G ~ Gamma(mean 1, std cv)``.

    ``mean_rtt`` [s] is a constant or a :class:`StepSeries` of the one-way
    delay (then RTT = 2 x one-way). ``cv`` = RTT std / RTT mean. Half of the
    sampled RTT is the forward delay of the data packet, half the return
    delay of the ACK it triggers, so RTT samples average ``mean_rtt`` plus
    queueing. Gamma keeps every sample positive and matches mean and std
    exactly, also for the large deviation ratios of the condition grid.
    """

    __slots__ = ("mean_rtt", "one_way_series", "cv", "_buf", "_i", "_left", "offset")

    def __init__(
        self,
        mean_rtt: float,
        cv: float,
        rng,
        one_way_series: StepSeries | None = None,
        offset: float = 0.0,
    ):
        """``rng``: a ``numpy.random.Generator`` or a seed sequence (:class:`RandomDraws`)."""
        self.offset = float(offset)
        self.mean_rtt = float(mean_rtt)
        self.one_way_series = one_way_series
        self.cv = float(cv)
        self._draw_from(rng)
        self._buf = _NO_DRAWS  # the current part of a block of draws (_draws)
        self._i = 0
        self._left = 0  # draws of the current block not drawn yet

    def sample_rtt(self, now: float) -> float:
        mean = (
            self.mean_rtt
            if self.one_way_series is None
            else 2.0 * self.one_way_series.value_at(now + self.offset)
        )
        if self.cv <= 0.0:
            return mean
        if COMPILED:  # one factor, where the .py core's part of a block has it
            if self._left == 0:
                self._left = _BLOCK
            self._left -= 1
            k = 1.0 / (self.cv * self.cv)
            return mean * falcon_gamma(self._bitgen, k, 1.0 / k)  # type: ignore[name-defined]  # noqa: F821
        i = self._i
        if i >= len(self._buf):
            self._draw_part()
            i = 0
        self._i = i + 1
        return mean * self._buf[i]

    def _draw_part(self) -> None:
        """The next _SUB draws of the current block (a new block when it is used up)."""
        if self._left == 0:
            self._left = _BLOCK
        self._buf = _draws(self._gamma(_SUB))
        self._left -= _SUB

    def _gamma(self, n: int) -> np.ndarray:
        """``n`` Gamma factors of mean 1 and std/mean ``cv``."""
        k = 1.0 / (self.cv * self.cv)
        return self._rng.gamma(k, 1.0 / k, n)

    def set(self, mean_rtt: float, cv: float, one_way_series: StepSeries | None = None) -> None:
        """New mean RTT [s] (or one-way delay series) and std/mean ratio from now on.

        The Gamma draws buffered for the old ratio are dropped when the ratio
        changes (their shape depends on it); an unchanged ratio keeps them, so
        re-setting the current values changes nothing.
        """
        self.mean_rtt = float(mean_rtt)
        self.one_way_series = one_way_series
        cv = float(cv)
        if cv != self.cv:
            if self._left > 0:
                # the block's remaining draws, drawn and dropped: the generator
                # then stands where a whole block drawn at once would leave it
                if COMPILED:
                    k = 1.0 / (self.cv * self.cv)
                    for _ in range(self._left):
                        falcon_gamma(self._bitgen, k, 1.0 / k)  # type: ignore[name-defined]  # noqa: F821
                else:
                    self._gamma(self._left)
                self._left = 0
            self.cv = cv
            self._buf = _NO_DRAWS
            self._i = 0


class LossModel(RandomDraws):
    """Random loss of data packets: Bernoulli(p), or Gilbert-Elliott.

    Gilbert-Elliott: a two-state Markov chain stepped once per packet with
    transition probabilities ``p_gb`` (good->bad) and ``p_bg`` (bad->good) and
    loss probabilities ``loss_good`` / ``loss_bad`` in each state.
    ``p`` may be a :class:`StepSeries` (loss from a trace).
    """

    __slots__ = ("p", "series", "ge", "_bad", "_buf", "_i", "offset")

    def __init__(
        self,
        p: float,
        rng,
        series: StepSeries | None = None,
        ge: dict | None = None,
        offset: float = 0.0,
    ):
        """``rng``: a ``numpy.random.Generator`` or a seed sequence (:class:`RandomDraws`)."""
        self.offset = float(offset)
        self.p = float(p)
        self.series = series
        self.ge = ge
        self._bad = False
        self._draw_from(rng)
        self._buf = _NO_DRAWS  # the current part of a block of draws (_draws)
        self._i = 0

    @property
    def enabled(self) -> bool:
        return self.p > 0.0 or self.series is not None or self.ge is not None

    def _uniform(self) -> float:
        if COMPILED:
            return falcon_next_double(self._bitgen)  # type: ignore[name-defined]  # noqa: F821
        i = self._i
        if i >= len(self._buf):
            self._buf = _draws(self._rng.random(_SUB))
            i = 0
        self._i = i + 1
        return self._buf[i]

    def lost(self, now: float) -> bool:
        ge = self.ge
        if ge is not None:
            u = self._uniform()
            if self._bad:
                if u < ge["p_bg"]:
                    self._bad = False
            elif u < ge["p_gb"]:
                self._bad = True
            return self._uniform() < (ge["loss_bad"] if self._bad else ge["loss_good"])
        p = self.p if self.series is None else self.series.value_at(now + self.offset)
        return p > 0.0 and self._uniform() < p

    def set(self, p: float, series: StepSeries | None = None) -> None:
        """New Bernoulli loss probability (or loss series) from now on."""
        self.p = float(p)
        self.series = series


class Path:
    """One path: forward bottleneck + delay + loss, and a return direction.

    :meth:`send` gives a data packet's arrival time at the receiver [s] (and
    the return delay [s] for the ACK it triggers), or -1.0 if the packet is
    dropped (full buffer) or lost; :meth:`transmit` gives both as a tuple.
    """

    __slots__ = (
        "name",
        "link",
        "delay",
        "loss",
        "return_link",
        "_last_arrival",
        "_last_ack_arrival",
        "packets_lost_random",
        "_loss_on",
        "last_return_delay",
    )

    def __init__(
        self,
        link: Link,
        delay: DelayModel,
        loss: LossModel,
        return_link: Link | None = None,
        name: str = "path",
    ):
        self.name = name
        self.link = link
        self.delay = delay
        self.loss = loss
        self.return_link = return_link
        self._last_arrival = 0.0
        self._last_ack_arrival = 0.0
        self.packets_lost_random = 0
        self._loss_on = loss.enabled
        self.last_return_delay = 0.0  # of the latest packet sent [s] (send)

    def send(self, now: float, size: int) -> float:
        """Send a data packet of ``size`` bytes at ``now`` [s]: its arrival time at the
        receiver [s], or -1.0 if it is dropped (full buffer) or lost. The return delay
        [s] of the ACK it triggers is then in :attr:`last_return_delay`."""
        departure = self.link.admit(now, size)
        if departure < 0.0:
            return -1.0
        if self._loss_on and self.loss.lost(departure):
            self.packets_lost_random += 1
            return -1.0
        d = self.delay
        if d.cv <= 0.0 and d.one_way_series is None:
            half = 0.5 * d.mean_rtt
        else:
            half = 0.5 * d.sample_rtt(now)
        arrival = departure + half
        if arrival < self._last_arrival:  # jitter never reorders within a path
            arrival = self._last_arrival
        self._last_arrival = arrival
        self.last_return_delay = half
        return arrival

    def transmit(self, now: float, size: int):
        """:meth:`send` as ``(arrival [s], return delay [s])``, or None if the packet is dropped or lost."""
        arrival = self.send(now, size)
        if arrival < 0.0:
            return None
        return arrival, self.last_return_delay

    def ack_arrival(self, now: float, return_delay: float, size: int) -> float:
        """Arrival time [s] at the sender of an ACK of ``size`` bytes sent at ``now``."""
        start = now
        if self.return_link is not None:
            dep = self.return_link.admit(now, size)
            if dep >= 0.0:
                start = dep
        arrival = start + return_delay
        if arrival < self._last_ack_arrival:
            arrival = self._last_ack_arrival
        self._last_ack_arrival = arrival
        return arrival


class PathState(NamedTuple):
    """What a schedule segment sets on a path (see :class:`ScheduledPath`)."""

    mean_rtt: float  # mean base RTT [s] (unused while delay_series is set)
    cv: float  # RTT std / mean
    delay_series: StepSeries | None  # one-way delay [s] from a trace, or None
    loss: float  # Bernoulli loss probability (unused while loss_series is set)
    loss_series: StepSeries | None  # loss probability from a trace, or None
    buffer_packets: int | None  # new drop-tail limit [packets], or None = leave the link's


class ScheduledPath(Path):
    """A :class:`Path` whose conditions follow a schedule of :class:`PathState`.

    ``times[k]`` [s] (strictly increasing, emulated time) is when
    ``states[k]`` starts; it applies to packets sent at or after it. Before
    ``times[0]`` the delay and loss models keep the values they were built
    with. With ``period`` [s] (> ``times[-1]``) the schedule repeats: state
    ``k`` also starts at ``n * period + times[k]`` (so the last state lasts
    until the next period's first start; put a state at 0 to reset at each
    period start, as the scenario builder does). Segment boundaries are
    checked once per transmitted packet against one cached time, so the cost
    is a comparison per packet plus a little work per boundary crossed.
    Reordering is still impossible: :meth:`Path.send` clamps every
    arrival to the previous one, so when the mean RTT drops the packets sent
    just after the drop queue behind those sent before it.
    """

    __slots__ = ("_times", "_states", "_period", "_k", "_cycle", "_next")

    def __init__(
        self,
        link: Link,
        delay: DelayModel,
        loss: LossModel,
        return_link: Link | None = None,
        name: str = "path",
        *,
        times,
        states,
        period: float | None = None,
    ):
        super().__init__(link, delay, loss, return_link, name)
        times = [float(t) for t in times]
        if not times or len(times) != len(states):
            raise ValueError(
                f"{name}: a schedule needs as many start times as states (at least one)"
            )
        if times[0] < 0.0 or any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError(f"{name}: schedule times must be >= 0 and strictly increasing")
        if period is not None and not period > times[-1]:
            raise ValueError(f"{name}: schedule period must exceed its last start time")
        self._times = times
        self._states = list(states)
        self._period = None if period is None else float(period)
        self._k = 0  # index of the next state to apply
        self._cycle = 0  # loop count of that state's start time
        self._next = times[0]  # its start time [s]

    def send(self, now: float, size: int) -> float:
        if now >= self._next:
            self._advance(now)
        return Path.send(self, now, size)

    def _advance(self, now: float) -> None:
        """Apply the last state that started at or before ``now``."""
        times, states, period = self._times, self._states, self._period
        k, cycle, n = self._k, self._cycle, len(times)
        while True:
            state = states[k]
            k += 1
            if k == n:
                if period is None:
                    nxt = math.inf
                    break
                k = 0
                cycle += 1
            nxt = times[k] if period is None else cycle * period + times[k]
            if now < nxt:
                break
        self._k, self._cycle, self._next = k, cycle, nxt
        self.delay.set(state.mean_rtt, state.cv, state.delay_series)
        self.loss.set(state.loss, state.loss_series)
        self._loss_on = self.loss.enabled
        if state.buffer_packets is not None:
            self.link.buffer_packets = state.buffer_packets

    def state_at(self, t: float) -> PathState | None:
        """The state in force at emulated time ``t`` [s] (None before the first start)."""
        times = self._times
        if t < times[0]:
            return None
        if self._period is not None:
            t = t % self._period
        k = len(times) - 1  # in a looped schedule, before times[0] the last state still holds
        for i, start in enumerate(times):
            if start <= t:
                k = i
        return self._states[k]
