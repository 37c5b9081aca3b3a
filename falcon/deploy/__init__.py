"""Deploying exported models in a real transport.

The multipath QUIC transport of ``transports/`` (tquic 1.6.0 with the
project's patch, built by ``make transport``) runs an exported ONNX model as
its packet scheduler. Python reaches it only through processes:
:mod:`falcon.deploy.transport` finds and runs its binaries (a download
through :class:`falcon.relay.Relay`), :mod:`falcon.deploy.experience`
converts its decision logs into the experience-log HDF5 format, and
``python -m falcon.deploy`` (:mod:`falcon.deploy.job`) times the transport's
schedulers on a scenario beside the emulator running the same one.
"""
