"""Web page download over stream multiplexing.

The root (HTML) is requested at time 0. When an object has been fully
delivered to the client, the client requests its children: each request
reaches the server one forward propagation delay later (half the smallest
mean base RTT of the paths; the request itself is small and never queued),
and the server then opens one stream per child object. Concurrent streams
share the connection by smooth weighted round robin with the page model's
weights. Page load time = completion of the last object.
"""

from __future__ import annotations

from envs.apps.base import App


class WebApp(App):
    kind = "web"

    def __init__(self, page, request_delay_s: float):
        super().__init__()
        self.page = page
        self.request_delay = float(request_delay_s)
        self.complete = [-1.0] * len(page.objects)
        self.released = [-1.0] * len(page.objects)
        self._children = {o.id: [] for o in page.objects}
        for o in page.objects:
            if o.parent is not None:
                self._children[o.parent].append(o.id)
        self._left = len(page.objects)

    @property
    def sizes(self) -> list[int]:
        return [o.size for o in self.page.objects]

    def _begin(self) -> None:
        for root in self.page.roots():
            self._open(root.id)

    def _open(self, oid: int, send: bool = True) -> None:
        obj = self.page.objects[oid]
        self.released[oid] = self.conn.sim.now
        self.conn.open_stream(oid, obj.size, weight=obj.weight, priority=obj.depth, send=send)

    def _open_many(self, ids: list[int]) -> None:
        for oid in ids:
            self._open(oid, send=False)
        self.conn.try_send()

    def on_stream_complete(self, stream_id: int, now: float) -> None:
        self.complete[stream_id] = now
        self._left -= 1
        if self._left == 0:
            self._finish(now)
            return
        children = self._children[stream_id]
        if children:  # all requests triggered by one object arrive together
            self.conn.sim.schedule(now + self.request_delay, self._open_many, children)

    def object_release_times(self) -> list[float]:
        out = []
        for o in self.page.objects:
            req = self.start_time if o.parent is None else self.complete[o.parent]
            out.append(req - self.start_time if req >= 0 else float("nan"))
        return out

    def object_times(self) -> list[float]:
        """Per object: completion minus request time at the client [s]."""
        out = []
        for o in self.page.objects:
            req = self.start_time if o.parent is None else self.complete[o.parent]
            c = self.complete[o.id]
            out.append(c - req if c >= 0 and req >= 0 else float("nan"))
        return out
