"""HOP (Chiariotti et al., "The HOP Protocol: Reliable Latency-Bounded
End-to-End Multipath Communication", IEEE/ACM ToN 2021): latency-bounded
multipath with FEC, SKIP capacity forecasts and the JUMP / LEAP / FLIP block
schedulers."""
