"""The link relay: a scenario's paths between a real client and server on loopback.

:class:`Relay` (:mod:`falcon.relay.relay`) applies the emulator's link model
to real UDP datagrams in real time; :func:`self_test`
(:mod:`falcon.relay.selftest`) measures whether it holds the configured
delay and rate on this machine. ``python -m falcon.relay --help``.
"""

from falcon.relay.relay import WIRE_OVERHEAD_BYTES, Relay
from falcon.relay.selftest import format_report, self_test

__all__ = ["Relay", "WIRE_OVERHEAD_BYTES", "self_test", "format_report"]
