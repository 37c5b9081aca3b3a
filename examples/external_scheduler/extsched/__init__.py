"""Example FALCON scheduler plug-ins (examples/external_scheduler/README.md).

``smooth_rtt`` (:class:`extsched.smooth.SmoothedRTT`): the lowest smoothed
RTT with hysteresis; ``rate_split`` (:class:`extsched.split.RateSplit`):
packets split over the paths in proportion to their estimated rates. Both
are registered in ``pyproject.toml`` under the entry-point group
``falcon.schedulers``.
"""

__version__ = "0.1.0"
