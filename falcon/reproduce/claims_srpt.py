"""The verdicts of the SRPT-ECF paper's claims (see :mod:`falcon.reproduce.claims`):
the toy examples (exact completion times) and the stream-aware page replay."""

from __future__ import annotations

from collections.abc import Mapping

from falcon.reproduce.verdict import Verdict, _medians, _missing, paper


def check_toys(res: Mapping, fig: Mapping) -> list[Verdict]:
    vals = {c["id"]: paper(fig, c["id"]) for c in fig["claims"]}
    sw = res["fig3"]["switch_ms"]
    f5 = res["fig5"]["completion_ms"]
    f6 = res["fig6"]["completion_ms_1dp"]
    g8 = res["fig8"]["stream0_gain_pct"]
    return [
        Verdict(
            "fig3_ecf",
            round(sw, 2) == vals["fig3_ecf"]["switch_ms"],
            {"path 1 stops [ms]": sw, "completion [ms]": res["fig3"]["completion_ms"]},
            "the switch date equal to the paper's to 2 decimals",
            f"{sw:.4f} ms (exact: 90/7)",
        ),
        Verdict(
            "fig5_srpt_ecf",
            all(abs(a - b) < 1e-9 for a, b in zip(f5, vals["fig5_srpt_ecf"]["completion_ms"])),
            {"completion times [ms]": f5},
            "the completion sequence equal",
            "exact",
        ),
        Verdict(
            "fig6_sa_ecf",
            f6 == vals["fig6_sa_ecf"]["completion_ms"],
            {"completion times [ms]": res["fig6"]["completion_ms"], "to one decimal": f6},
            "the completion sequence equal to one decimal",
            "11.25 ms prints as 11.2 with round-half-to-even, as the paper's Python simulator does",
        ),
        Verdict(
            "fig8_offline",
            g8 > 0,
            {"stream 0 gain [%]": g8, "streams [B, ms]": res["fig8"]["streams"]},
            "the offline algorithm finishes stream 0 earlier than online SRPT-ECF",
            f"{g8:.1f} % on our streams; the paper's {vals['fig8_offline']['stream0_gain_pct']:g} % is on stream "
            "sizes its text does not give",
        ),
    ]


def check_stream_aware(res: Mapping, fig: Mapping) -> list[Verdict]:
    mean = _medians(res, "object_time_mean_s")
    p95 = _medians(res, "object_time_p95_s")
    if not mean:
        return [_missing("srpt_ecf_best", "no page replay")]
    key = next(iter(mean))
    m, p = mean[key], p95[key]
    rivals = [n for n in ("sa_ecf", "fcfs_minrtt") if n in p]
    if "srpt_ecf" not in p or not rivals:
        return [_missing("srpt_ecf_best", "needs srpt_ecf, sa_ecf and fcfs_minrtt")]
    ok = all(p["srpt_ecf"] < p[n] for n in rivals) and m["srpt_ecf"] <= min(m.values())
    return [
        Verdict(
            "srpt_ecf_best",
            ok,
            {f"{n}: p95 object time [s]": p[n] for n in p}
            | {f"{n}: mean object time [s]": m[n] for n in m},
            "SRPT-ECF's p95 object time below SA-ECF's and FCFS-minRTT's, and its mean the lowest",
            f"p95 {p['srpt_ecf']:.3f} s against " + ", ".join(f"{n} {p[n]:.3f} s" for n in rivals),
        )
    ]


__all__ = ["check_toys", "check_stream_aware"]
