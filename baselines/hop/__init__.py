"""HOP (seed 003): latency-bounded multipath with FEC, SKIP capacity
forecasts and the JUMP / LEAP / FLIP block schedulers (SPEC-hop)."""
