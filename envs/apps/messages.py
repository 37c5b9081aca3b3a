"""Messages on a persistent connection (the distributed-edge-learning
workload, :mod:`envs.edge_learning`): the owner calls :meth:`MessageApp.send`
at any time; each message is a new stream of the given size, and the owner's
callback runs when its last byte is delivered in order to the client.

The connection is set up once (:meth:`envs.apps.base.App.start`: the
scenario's ``setup``); a message sent before the setup completes is opened
when it does. The app never stops the simulator (it never calls
:meth:`App._finish`): the owner ends the episode.

Memory stays flat over any number of messages: a completed message's send
stream is dropped at once, its receive stream as soon as no frame of it is in
flight or queued for retransmission (:meth:`MessageApp.retire`), and the
connection's set of acknowledged frames is pruned at each completion
(``Connection._prune_acked``: it keeps every frame that can still be looked up).
"""

from __future__ import annotations

from collections.abc import Callable

from envs.apps.base import App


class MessageApp(App):
    kind = "messages"

    def __init__(self, on_delivered: Callable[[object, float], None]):
        """``on_delivered(tag, now)``: a message sent with ``tag`` is delivered at ``now`` [s]."""
        super().__init__()
        self.on_delivered = on_delivered
        self.ready = False
        self._queued: list[
            tuple[int, int]
        ] = []  # (stream id, size) sent before the setup completed
        self._tags: dict[int, object] = {}  # stream id -> tag of the messages in transfer
        self._done: list[int] = []  # completed stream ids whose receive stream is kept
        self._next_id = 0
        self.messages_sent = 0
        self.messages_delivered = 0

    def _begin(self) -> None:
        self.ready = True
        for sid, size in self._queued:
            self.conn.open_stream(sid, size, send=False)
        self._queued = []
        self.conn.try_send()

    def send(self, size: int, tag) -> int:
        """Release a message of ``size`` bytes now (queued until the setup completes); returns its stream id."""
        sid = self._next_id
        self._next_id += 1
        self._tags[sid] = tag
        self.messages_sent += 1
        if self.ready:
            self.conn.open_stream(sid, int(size))
        else:
            self._queued.append((sid, int(size)))
        return sid

    def on_stream_complete(self, stream_id: int, now: float) -> None:
        conn = self.conn
        conn.send_streams.pop(stream_id, None)  # fully sent: nothing reads it again
        self._done.append(stream_id)
        conn._prune_acked()
        self.retire()
        self.messages_delivered += 1
        self.on_delivered(self._tags.pop(stream_id), now)

    def retire(self) -> None:
        """Drop the receive streams of completed messages that no packet can
        still reach. A data packet in the network is in its path's ``sent``
        map (acknowledged packets have arrived; one declared lost has a later
        packet of its path acknowledged, and paths never reorder, so it was
        dropped or has arrived), and a frame to resend is in ``retx``."""
        if not self._done:
            return
        conn = self.conn
        live = {sid for sid, _off, _len in conn.retx}
        for ps in conn.paths:
            for sp in ps.sent.values():
                live.add(sp[2])
        keep = []
        for sid in self._done:
            if sid in live:
                keep.append(sid)
            else:
                del conn.recv_streams[sid]
        self._done = keep

    def object_times(self) -> list[float]:
        return []

    def object_release_times(self) -> list[float]:
        return []


__all__ = ["MessageApp"]
