"""Agent configs of the plug-ins (``agent/*.yaml``), found by Hydra with
``hydra.searchpath=[pkg://extsched.conf]``."""
