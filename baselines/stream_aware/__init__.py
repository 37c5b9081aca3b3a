"""Stream-aware multipath scheduling (Jonglez, Heusse, Gaujal, "SRPT-ECF:
Challenging Round-Robin for Stream-Aware Multipath Scheduling", FIT 2020).

* :mod:`~baselines.stream_aware.fluid`: the exact fluid-model calculator
  (ECF, SRPT-ECF offline/online, the offline oracle, SA-ECF).
* Packet-level schedulers for the emulator: :class:`SRPTECF`, :class:`SAECF`,
  :class:`FCFSMinRTT`, :class:`SRPTMinRTT`.
* :mod:`~baselines.stream_aware.plots`: CDF of stream completion times and
  active streams over time (matplotlib, imported on use).
"""

from baselines.stream_aware.fcfs_minrtt import FCFSMinRTT
from baselines.stream_aware.sa_ecf import SAECF
from baselines.stream_aware.srpt_ecf import SRPTECF
from baselines.stream_aware.srpt_minrtt import SRPTMinRTT

__all__ = ["SRPTECF", "SAECF", "FCFSMinRTT", "SRPTMinRTT"]
