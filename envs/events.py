"""The numbers of a connection's events (:class:`envs.sim.Handler`,
:meth:`envs.transport.Connection.handle`): the per-packet events and the
timers, which the simulator queues as typed numbers instead of bound methods.
The compiled core's modules read them as C integers (their ``.pxd``)."""

#: the oldest data packet on a path's wire reaches the receiver (argument: the path)
DATA_ARRIVAL = 1
#: the oldest ACK frame on a path's return wire reaches the sender (argument: the path)
ACK_ARRIVAL = 2
#: a path's delayed-ACK timer (argument: the path)
ACK_TIMER = 3
#: a path's loss-detection timer (argument: the path)
LOSS_TIMER = 4
#: the pacer's wake-up: a path held back only by its pacer may send (argument unused)
PACE_WAKE = 5
#: ask an idle scheduler again (argument unused)
REASK = 6

__all__ = ["ACK_ARRIVAL", "ACK_TIMER", "DATA_ARRIVAL", "LOSS_TIMER", "PACE_WAKE", "REASK"]
