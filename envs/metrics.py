"""Episode metrics from a finished connection and its application."""

from __future__ import annotations

import math

import numpy as np

#: the largest sum of whole numbers a float64 holds exactly (every smaller integer is exact)
EXACT_SUM = 2.0**53

#: the per-path metric names, by path index (:func:`_path_keys` extends it)
_PATH_KEYS: list = []


def _path_keys(i: int) -> tuple:
    """Path ``i``'s metric names: bytes, share, utilisation, packets lost, smoothed RTT
    (made once per index, not formatted again at every episode's end)."""
    while len(_PATH_KEYS) <= i:
        k = len(_PATH_KEYS)
        names = ("bytes", "share", "utilisation", "packets_lost", "srtt_ms")
        _PATH_KEYS.append(tuple([f"path{k}_{name}" for name in names]))
    return _PATH_KEYS[i]


def percentile(values, p: float) -> float:
    """``float(np.percentile(values, p))`` (its default, linear interpolation
    between the closest ranks), bit for bit, for finite values: NumPy's own
    call costs about 35 us of argument handling, as much as a short
    episode's whole emulation; a test checks the equality. The two ranks come
    from a partition, not a sort (a third of the time on an episode's queue
    samples), in the values' own integer or float type: converting to float
    keeps their order, so the ranked values are the same."""
    v = np.asarray(values)
    if v.dtype.kind not in "iuf":
        v = v.astype(np.float64)
    n = v.size
    if n == 1:  # the value itself, whatever p (a short episode's single queue sample)
        return float(v.flat[0])
    q = p / 100
    virtual = (n - 1) * q  # NumPy's virtual index for its default method
    if virtual >= n - 1 or virtual < 0:  # an end rank: from the sort (NaN last, as in NumPy)
        s = np.sort(v.astype(np.float64), axis=None)  # (flattened)
        return float(s[-1]) if virtual >= n - 1 else float(s[0])
    i = math.floor(virtual)
    ranked = v.flatten()  # a copy, partitioned in place (np.partition's Python layer skipped)
    ranked.partition((i, i + 1))
    a, b = float(ranked[i]), float(ranked[i + 1])
    t = virtual - i
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def episode_metrics(conn, app, end_time: float, oqs_values=None) -> dict[str, float]:
    """Flat dict of floats (schema in docs/reference/formats/scenario_schema.md).
    ``oqs_values``: the kept queue samples (``conn.oqs_series()[1]``) where the caller
    has them already (:func:`envs.runner.run_episode` keeps the series in its result).

    ``timed_out`` = the app did not finish; ``stalled`` = it did not finish
    and the event queue ran dry before the time limit (a deadlock: nothing
    left in flight and nothing scheduled), which a bug, not the network, causes.
    """
    start = app.start_time
    done = app.done
    duration = (app.done_time if done else end_time) - start
    total = sum(app.sizes)
    paths = conn.paths
    retransmissions = packets_sent = packets_lost = bytes_sent = 0  # sum()'s order and types
    for p in paths:
        retransmissions += p.retransmissions
        packets_sent += p.packets_sent
        packets_lost += p.packets_lost
        bytes_sent += p.bytes_sent
    m: dict[str, float] = {
        "download_time_s": duration if done else math.nan,
        "elapsed_s": duration,
        "timed_out": 0.0 if done else 1.0,
        "stalled": 1.0 if not done and conn.sim.pending == 0 else 0.0,
        "goodput_mbps": (conn.delivered * 8 / duration / 1e6) if duration > 0 else 0.0,
        "app_bytes": float(total),
        "retransmissions": float(retransmissions),
        "packets_sent": float(packets_sent),
        "packets_lost": float(packets_lost),
        "events": float(conn.sim.events_processed),
        # from the client's connection start (setup included) to the first data byte
        "time_to_first_byte_s": conn.first_byte_time - start
        if conn.first_byte_time >= 0
        else math.nan,
    }
    if conn.reinjects:  # only schedulers that may re-inject (envs.scheduler) copy data
        m["reinjected_bytes"] = float(conn.reinjected_bytes)
        m["redundancy_overhead"] = conn.reinjected_bytes / total if total > 0 else 0.0
    if conn.oqs_kept:
        v = conn.oqs_series()[1] if oqs_values is None else oqs_values
        if conn.oqs_stride == 1 and conn.oqs_sum > EXACT_SUM:  # NumPy's rounding, as before
            f = v.astype(np.float64)
            m["oqs_mean_bytes"] = float(f.mean())
            m["oqs_max_bytes"] = float(f.max())
        else:  # the receiver's running sum and peak of every sample (thinned: exact)
            # below 2**53 a sum of whole bytes is exact, NumPy's too: the same mean
            m["oqs_mean_bytes"] = conn.oqs_sum / conn.oqs_seen
            m["oqs_max_bytes"] = float(conn.oqs_peak)
        m["oqs_p99_bytes"] = percentile(v, 99)  # of the kept samples
    else:
        m["oqs_mean_bytes"] = m["oqs_p99_bytes"] = m["oqs_max_bytes"] = 0.0
    sent_total = bytes_sent or 1
    for p in paths:
        k_bytes, k_share, k_use, k_lost, k_srtt = _path_keys(p.index)
        offered = p.path.link.offered_bytes(start, start + duration) if duration > 0 else 0.0
        m[k_bytes] = float(p.bytes_sent)
        m[k_share] = p.bytes_sent / sent_total
        m[k_use] = p.bytes_sent / offered if offered > 0 else 0.0
        m[k_lost] = float(p.packets_lost)
        m[k_srtt] = p.srtt * 1000
    times = [t for t in app.object_times() if not math.isnan(t)]
    if len(app.sizes) > 1 and times:
        m["object_time_mean_s"] = float(np.mean(times))
        m["object_time_p95_s"] = percentile(times, 95)
    return m
