"""What every application shares: attaching to a connection and finishing."""

from __future__ import annotations

from envs.setup import establish


class App:
    """Base of the applications. Subclasses open streams in :meth:`_begin`
    and call :meth:`_finish` when their last object is delivered."""

    kind = "app"

    def __init__(self):
        self.conn = None
        self.start_time = 0.0
        self.done_time = -1.0

    def start(self, conn) -> None:
        """Attach to ``conn`` at the current emulated time (the client's
        connection start: what the app's times are measured from), run the
        connection setup, and open the first streams when the server has
        the request (:func:`envs.setup.establish`)."""
        self.conn = conn
        conn.app = self
        self.start_time = conn.sim.now
        t_up = establish(conn)
        if t_up > self.start_time:
            conn.sim.schedule(t_up, self._on_request, None)
        else:
            self._begin()

    def _on_request(self, _arg) -> None:
        """Event: the request reached the server."""
        self._begin()

    def _begin(self) -> None:
        raise NotImplementedError

    def _finish(self, now: float) -> None:
        """The whole transfer is delivered: stop the episode."""
        self.done_time = now
        self.conn.finished = True
        self.conn.sim.stop()

    @property
    def done(self) -> bool:
        return self.done_time >= 0

    def object_times(self) -> list[float]:
        """Per object: completion time minus request time [s] (each app defines it)."""
        raise NotImplementedError

    def object_release_times(self) -> list[float]:
        """Per object: when the client requested it, relative to the app's
        start [s] (NaN if never requested)."""
        return [0.0]
