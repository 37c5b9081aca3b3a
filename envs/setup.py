"""Connection setup: the handshake, the request and the opening of the
secondary paths, before the first byte of a download can leave the server.

A real client measures a download from its connection start. Before the
server can send, the client runs the protocol's handshake on the initial path
(path 0), sends its request, and the server receives it; the other paths
carry data only once they are validated (MP-QUIC PATH_CHALLENGE /
PATH_RESPONSE, MPTCP MP_JOIN), about one RTT of that path after the
connection is up. The scenario's ``setup:`` block chooses the protocol
(``docs/reference/formats/scenario_schema.md``):

==============  ==================================================  =====================
``handshake``   what it models                                      round trips on path 0
==============  ==================================================  =====================
``quic``        IETF QUIC (RFC 9000/9001): 1-RTT handshake, the     1
                request leaves with the client's Finished
``gquic``       Google QUIC without a cached server config          2
                (inchoate CHLO, REJ, full CHLO)
``tcp_tls``     TCP + TLS 1.3 (MPTCP): SYN/SYN-ACK, then TLS        2
``zero_rtt``    0-RTT resumption: the request leaves with the       0
                first flight
``none``        no setup: the data is at the server at time 0       (today's model before
                and every path is open (``setup: none``)             the setup existed)
==============  ==================================================  =====================

Timeline from the connection start ``t0``: ``k`` round trips of path 0
(each one RTT drawn from the path's delay model at that time, the data
packets' model), then the request's one-way trip (half an RTT draw); the
server opens the app's streams when the request arrives (``t_up``). Path
``i >= 1`` carries data from

* ``path_validation: mutual`` (the default): as QUIC stacks and MPTCP's MP_JOIN open a
  path. The client starts when its handshake is complete (``t_hs``: after
  the first round trip of path 0 for ``quic``, ``tcp_tls`` and ``zero_rtt``,
  the second for ``gquic``); its PATH_CHALLENGE (SYN + MP_JOIN) reaches the
  server half an RTT of path ``i`` later, and the server sends data only
  after its own challenge's round trip (SYN-ACK, ACK): from ``t_hs`` plus
  1.5 RTT draws of path ``i``. Measured with the real transport
  (``transports/``, tquic): its second path carries data about 1.8 of its
  RTTs after the request reaches the server on a 4G + 5G pair, against one
  RTT with ``true``;
* ``path_validation: true``: ``t_up`` plus one RTT draw of path ``i`` (the
  model before ``mutual``);
* ``false``: ``t_up``.

Handshake packets are small: their loss and the queue they may meet are not
modelled (a lost handshake packet would cost a PTO, about a second, in a real
stack). With ``handshake_link: false`` (the model before #46) they take no
capacity either: a round trip is one RTT draw, even when the path's trace is in
an outage. With ``handshake_link: true`` (the default) the server's half of every setup round
trip (its handshake flight on path 0, its PATH_CHALLENGE on path ``i``) is
one datagram of :data:`FLIGHT_BYTES` that leaves the path's bottleneck when
the link has offered its bytes (:func:`crossed`): a real server's flight waits
out an outage at the connection's start, so the request, and the download, start
after it (measured through the link relay with tquic, ``python -m
falcon.deploy.fidelity``: on a Mahimahi LTE trace started 0.78 s before the
end of an outage the server's first flight was acknowledged 0.74 s after it
left, where the emulator's request reached the server during the outage).

The server measures round trips during the setup, as a real stack does (RFC
9002 §5: the handshake's acknowledgements are RTT samples; MP-QUIC path
validation's PATH_RESPONSE answers an ack-eliciting PATH_CHALLENGE): with
``rtt_samples: true`` (the default) path 0 starts with the handshake's last
round trip as its first RTT sample (none for ``zero_rtt``), and path ``i >=
1`` gets its validation round trip when it opens. So the first data flight
is paced (``envs/path_sender.py``) and every scheduler knows a validated
path's RTT before its first data packet. Units: seconds.
"""

from __future__ import annotations

from envs.errors import ConfigError, check_flag

#: handshake name -> round trips of the initial path before the request leaves
HANDSHAKE_RTTS: dict[str, int] = {"quic": 1, "gquic": 2, "tcp_tls": 2, "zero_rtt": 0, "none": 0}
#: ``path_validation: mutual``: round trips of path 0 until the client's handshake is complete and
#: it may open another path (QUIC: handshake confirmed; MPTCP: the TCP handshake before MP_JOIN)
CLIENT_READY_RTTS: dict[str, int] = {"quic": 1, "gquic": 2, "tcp_tls": 1, "zero_rtt": 1}
MUTUAL = "mutual"
SETUP_DEFAULTS: dict = {
    "handshake": "quic",
    "path_validation": MUTUAL,
    "rtt_samples": True,
    "handshake_link": True,
}
#: ``setup: none``: today's model (no handshake, every path open at once)
SETUP_NONE: dict = {
    "handshake": "none",
    "path_validation": False,
    "rtt_samples": False,
    "handshake_link": False,
}
#: ``handshake_link: true``: the server's setup datagram on the wire [bytes] (a full Initial's
#: 1200 bytes of UDP payload, RFC 9000 §14.1, which tquic's coalesced Initial + Handshake fills, plus IPv4 and UDP)
FLIGHT_BYTES = 1228


def normalise_setup(value) -> dict:
    """The ``setup:`` block (:mod:`envs.setup`): null = the default (IETF
    QUIC, paths validated); a handshake name is short for that handshake
    with validated paths, ``none`` for no setup at all."""
    if value is None:
        return dict(SETUP_DEFAULTS)
    if isinstance(value, str):
        value = dict(SETUP_NONE) if value == "none" else {"handshake": value}
    if not isinstance(value, dict):
        raise ConfigError(
            f"scenario.setup: expected none, a handshake name or a mapping "
            f"{{handshake, path_validation, rtt_samples}}, got {value!r}"
        )
    unknown = set(value) - set(SETUP_DEFAULTS)
    if unknown:
        raise ConfigError(
            f"scenario.setup: unknown key(s) {sorted(unknown)}; known: {sorted(SETUP_DEFAULTS)}"
        )
    out = {**SETUP_DEFAULTS, **value}
    if not isinstance(out["handshake"], str) or out["handshake"] not in HANDSHAKE_RTTS:
        raise ConfigError(
            f"scenario.setup.handshake: unknown {out['handshake']!r}; "
            f"choose one of {list(HANDSHAKE_RTTS)}"
        )
    for key in ("rtt_samples", "handshake_link"):
        check_flag(out[key], f"scenario.setup.{key}")
    if not isinstance(out["path_validation"], bool) and out["path_validation"] != MUTUAL:
        raise ConfigError(
            f"scenario.setup.path_validation: expected true, false or {MUTUAL!r}, "
            f"got {out['path_validation']!r}"
        )
    return out


def crossed(path, t_send: float, size: int = FLIGHT_BYTES) -> float:
    """When a datagram of ``size`` bytes sent at ``t_send`` [s] has left ``path``'s
    bottleneck (``envs.link.Path``): when its link has offered ``size`` bytes
    from ``t_send`` on, as on an empty queue [s] (a trace's outage: after it)."""
    link = path.link
    cap, off = link.capacity, link.offset
    return cap.time_at(cap.cum_bytes(t_send + off) + size) - off


def _round_trip(path, t: float, rtt: float, on_link: bool) -> float:
    """A setup round trip started at ``t`` [s] with the RTT draw ``rtt`` [s]; with
    ``on_link`` the server's half waits for its datagram to cross the link (:func:`crossed`)."""
    if not on_link:
        return rtt
    t_srv = t + 0.5 * rtt
    return rtt + crossed(path, t_srv) - t_srv


def setup_timeline(paths, setup: dict, t0: float) -> tuple[float, list[float], list]:
    """``(t_up, open_times, rtts)``: when the server receives the request [s],
    when each path may carry data [s], and the round trip [s] the server
    measured on each path during the setup (None where it measured none:
    ``zero_rtt`` on path 0, paths opened without validation), for a
    connection started at ``t0``. ``paths`` are the link-level paths
    (``envs.link.Path``: ``delay.sample_rtt``); ``setup: none`` draws nothing
    from their delay models."""
    if setup["handshake"] == "none":
        return t0, [t0] * len(paths), [None] * len(paths)
    d0 = paths[0].delay
    t = t0
    rtt0 = None
    k = HANDSHAKE_RTTS[setup["handshake"]]
    on_link = setup["handshake_link"]
    for _ in range(k):
        rtt0 = _round_trip(paths[0], t, d0.sample_rtt(t), on_link)
        t += rtt0
    t_up = t + 0.5 * d0.sample_rtt(t)  # the request's trip to the server
    opens, rtts = [t_up], [rtt0]
    validation = setup["path_validation"]
    if validation == MUTUAL:
        hs = CLIENT_READY_RTTS[setup["handshake"]]
        t_hs = (
            t if hs == k else t0 + d0.sample_rtt(t0)
        )  # zero_rtt: the handshake still takes a round trip
        for p in paths[1:]:
            rtt = p.delay.sample_rtt(t_hs)
            if on_link:  # the server's own challenge leaves half of it later
                server = _round_trip(p, t_hs + 0.5 * rtt, rtt, on_link)
                opens.append(t_hs + 0.5 * rtt + server)
                rtts.append(server)
            else:
                opens.append(t_hs + 1.5 * rtt)
                rtts.append(rtt)
        return t_up, opens, rtts
    for p in paths[1:]:
        rtt = _round_trip(p, t_up, p.delay.sample_rtt(t_up), on_link) if validation else None
        opens.append(t_up if rtt is None else t_up + rtt)
        rtts.append(rtt)
    return t_up, opens, rtts


def establish(conn) -> float:
    """Start ``conn``'s setup at the current time: each secondary path is
    closed (``is_open``) until its validation completes (``open_time``).
    Returns when the server receives the request [s] (now for ``setup:
    none``): the app opens its streams then."""
    now = conn.sim.now
    t_up, opens, rtts = setup_timeline([ps.path for ps in conn.paths], conn.setup, now)
    sample = conn.setup["rtt_samples"]
    for ps, t, rtt in zip(conn.paths, opens, rtts):
        ps.open_time = t
        rtt = rtt if sample else None
        if t > now and ps.index > 0:
            ps.is_open = False
            conn.sim.schedule(t, _open_path, (conn, ps.index, rtt))
        elif rtt is not None:
            ps.update_rtt(rtt, 0.0)  # path 0: known when the request arrives, before any data
    return t_up


def _open_path(arg) -> None:
    """Event: a secondary path's validation completes; its round trip is its first RTT sample."""
    conn, index, rtt = arg
    if rtt is not None:
        conn.paths[index].update_rtt(rtt, 0.0)
    conn._on_path_open(index)


__all__ = [
    "HANDSHAKE_RTTS",
    "CLIENT_READY_RTTS",
    "MUTUAL",
    "SETUP_DEFAULTS",
    "SETUP_NONE",
    "FLIGHT_BYTES",
    "establish",
    "normalise_setup",
    "setup_timeline",
    "crossed",
]
