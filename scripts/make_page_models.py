"""Write the FALCON Table II web page models to data/web/ (deterministic).

Table II gives only object counts and total sizes: Google 8 objects / 1.3 MB,
Github 61 / 4.5 MB, Stackoverflow 120 / 7 MB. MB is taken as 10^6 bytes (as
the bulk app's "2 MB" = 2 000 000 bytes); totals are hit exactly.

Two stages:

1. ``--extract TRACES_DIR`` (optional): read the real material (WProf graphs
   and HAR files, see ../traces/PROVENANCE.md sections 9-10) and write the
   few facts the models use to ``data/web/sources/real_inputs.json``: the
   google.fr home page of ``hruellan/google.com.har`` (first page view:
   per-object kind, bytes, parent), the stackoverflow.com WProf tree
   (kind, parent), the pooled WProf kind mix of all 14 graphs, and a
   lognormal fit of object bytes per kind over all 6 HAR files.
2. Generate (always): from real_inputs.json, with a seeded `random.Random`
   (its `random()` stream is stable across Python versions), write
   ``google.json``, ``github.json``, ``stackoverflow.json``.

Methods (detail in data/web/README.md):

- google: the real 8 objects of the google.fr home page (HAR, 2012): kinds,
  sizes, Referer tree (all objects hang off the HTML, as in the WProf
  www.google.com graph). Sizes scaled by one common factor to 1.3 MB.
- stackoverflow: the real WProf tree (24 objects; the scripts, images and
  frames that the page's blocking script gates hang below it); grown to 120
  objects by sibling cloning (added object j copies the kind and parent of
  non-root real object 1 + j mod 23, so the real kind mix and the real
  gating are kept). Sizes: lognormal draws per kind (HAR fit, truncated to
  the observed range), scaled to 7 MB.
- github: no real data. Kind counts from the pooled WProf mix (largest
  remainder over 60 sub-resources); tree HTML -> CSS/JS/frames/other ->
  images and fonts (fonts under a CSS object, images under a CSS or JS
  object, seeded uniform choice). Sizes as for stackoverflow, scaled to
  4.5 MB.

Usage: ``python scripts/make_page_models.py [--extract DIR] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a plain script from a checkout
    sys.path.insert(0, str(REPO))

from envs.apps.pages import (  # noqa: E402
    KINDS,
    PageModel,
    build_page,
    har_objects,
    har_parents,
    wprof_tree,
)

MB = 10**6  # bytes; Table II "MB" read as SI megabytes
TABLE2 = {
    "google": (8, round(1.3 * MB)),
    "github": (61, round(4.5 * MB)),
    "stackoverflow": (120, 7 * MB),
}
SEEDS = {"google": 0, "github": 2, "stackoverflow": 3}  # google uses no randomness

GOOGLE_HAR = "web_har_http_samples/hruellan/google.com.har"
SO_WPROF = "web_wprof_depgraphs/stackoverflow.com_.json"
HAR_FILES = (
    "web_har_http_samples/hruellan/google.com.har",
    "web_har_http_samples/hruellan/fr.wikipedia.org.har",
    "web_har_http_samples/icing/reddit.com.har",
    "web_har_http_samples/mnot/facebook.com.har",
    "web_har_http_samples/mnot/wikipedia.org.har",
    "web_har_http_samples/mnot/youtube.com.har",
)
MIN_FIT_SAMPLES = 5  # kinds with fewer HAR samples use the pooled fit
DEFAULT_INPUTS = REPO / "data" / "web" / "sources" / "real_inputs.json"
DEFAULT_OUT = REPO / "data" / "web"


# ----------------------------------------------------------------------------- stage 1


def _strip_query(url: str) -> str:
    return url.split("?")[0].split(";")[0]


def extract(traces: Path) -> dict:
    """The facts the page models use, read from the real material under `traces`."""
    google = har_objects(traces / GOOGLE_HAR, page_index=0)
    g_objs = [
        {
            "url": _strip_query(o["url"]),
            "kind": o["kind"],
            "size": o["size"],
            "parent": p,
        }
        for o, p in zip(google, har_parents(google), strict=True)
    ]
    so = [
        {"url": _strip_query(t["url"]), "kind": t["kind"], "parent": t["parent"]}
        for t in wprof_tree(traces / SO_WPROF)
    ]
    wprof_files = sorted(p.name for p in (traces / "web_wprof_depgraphs").glob("*.json"))
    mix = Counter()
    for name in wprof_files:
        mix.update(t["kind"] for t in wprof_tree(traces / "web_wprof_depgraphs" / name)[1:])
    sizes: dict[str, list[int]] = {k: [] for k in KINDS}
    for f in HAR_FILES:
        for o in har_objects(traces / f, page_index=None):
            sizes[o["kind"]].append(o["size"])

    def fit(v):
        logs = [math.log(x) for x in v]
        return {
            "n": len(v),
            "mu_ln": round(statistics.fmean(logs), 6),
            "sigma_ln": round(statistics.stdev(logs), 6),
            "min": min(v),
            "max": max(v),
        }

    fits = {k: fit(v) for k, v in sizes.items() if len(v) >= MIN_FIT_SAMPLES}
    fits["pooled"] = fit([x for v in sizes.values() for x in v])
    return {
        "about": "Facts extracted by scripts/make_page_models.py --extract from the real "
        "material in ../traces (PROVENANCE.md sections 9-10; no licence stated). "
        "Sizes in bytes; parent = index in the same list.",
        "google_har": {
            "file": GOOGLE_HAR,
            "page_index": 0,
            "filter": "http(s), status 200, body > 0 bytes, first occurrence",
            "size": "response.content.size (decoded body), else bodySize",
            "objects": g_objs,
        },
        "stackoverflow_wprof": {"file": SO_WPROF, "objects": so},
        "wprof_kind_mix": {"files": wprof_files, "counts": {k: mix[k] for k in KINDS}},
        "har_size_fit": {
            "files": list(HAR_FILES),
            "model": "lognormal of bytes per kind",
            "per_kind": fits,
        },
    }


# ----------------------------------------------------------------------------- stage 2


def scale_to_total(raw: list[float], total: int) -> list[int]:
    """Integers >= 1, proportional to `raw`, summing exactly to `total` (largest remainder)."""
    s = sum(raw)
    exact = [r * total / s for r in raw]
    out = [max(1, math.floor(x)) for x in exact]
    rest = total - sum(out)
    order = sorted(range(len(raw)), key=lambda i: (-(exact[i] - math.floor(exact[i])), i))
    for i in order[:rest] if rest > 0 else []:
        out[i] += 1
    if rest < 0:  # only if some tiny objects were raised to 1 byte
        out[max(range(len(out)), key=lambda i: out[i])] += rest
    assert sum(out) == total and min(out) >= 1
    return out


def largest_remainder(weights: dict[str, float], n: int) -> dict[str, int]:
    """Split n into integer counts proportional to `weights` (ties by key order)."""
    s = sum(weights.values())
    exact = {k: w * n / s for k, w in weights.items()}
    out = {k: math.floor(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: -(exact[k] - out[k]))[: n - sum(out.values())]:
        out[k] += 1
    return out


def _draw_size(rng: random.Random, fits: dict, kind: str) -> float:
    """Lognormal bytes for `kind`, truncated (redrawn) to the kind's observed HAR range."""
    f = fits.get(kind, fits["pooled"])
    while True:
        u = min(max(rng.random(), 1e-12), 1 - 1e-12)
        x = math.exp(f["mu_ln"] + f["sigma_ln"] * statistics.NormalDist().inv_cdf(u))
        if f["min"] <= x <= f["max"]:
            return x


def _reorder(parents: list[int | None], kinds: list[str]):
    """Renumber a tree breadth-first (stable) so that parent id < child id."""
    depth = [0] * len(parents)
    for i, p in enumerate(parents):  # input already has parents before children
        depth[i] = 0 if p is None else depth[p] + 1
    order = sorted(range(len(parents)), key=lambda i: (depth[i], i))
    pos = {old: new for new, old in enumerate(order)}
    return (
        [None if parents[o] is None else pos[parents[o]] for o in order],
        [kinds[o] for o in order],
    )


def make_google(inp: dict) -> PageModel:
    n, total = TABLE2["google"]
    objs = inp["google_har"]["objects"]
    assert len(objs) == n, f"google HAR page has {len(objs)} objects, Table II says {n}"
    real = sum(o["size"] for o in objs)
    return build_page(
        "google",
        scale_to_total([o["size"] for o in objs], total),
        [o["parent"] for o in objs],
        [o["kind"] for o in objs],
        source=f"real: {inp['google_har']['file']} (google.fr home page, 2012) objects, kinds, "
        "Referer tree and relative sizes",
        meta={
            "method": f"real {real}-byte page scaled by one factor to {total} bytes "
            "(largest-remainder rounding)",
            "seed": SEEDS["google"],
        },
    )


def make_stackoverflow(inp: dict) -> PageModel:
    n, total = TABLE2["stackoverflow"]
    rng = random.Random(SEEDS["stackoverflow"])
    tmpl = inp["stackoverflow_wprof"]["objects"]
    parents = [t["parent"] for t in tmpl]
    kinds = [t["kind"] for t in tmpl]
    for j in range(n - len(tmpl)):  # round-robin over the non-root real objects
        t = tmpl[1 + j % (len(tmpl) - 1)]
        parents.append(t["parent"])
        kinds.append(t["kind"])
    parents, kinds = _reorder(parents, kinds)
    fits = inp["har_size_fit"]["per_kind"]
    raw = [_draw_size(rng, fits, k) for k in kinds]
    return build_page(
        "stackoverflow",
        scale_to_total(raw, total),
        parents,
        kinds,
        source=f"real structure: {inp['stackoverflow_wprof']['file']} ({len(tmpl)} objects); "
        "synthetic sizes",
        meta={
            "method": f"WProf tree grown to {n} objects by sibling cloning (round-robin over "
            "the non-root objects: clone = same kind, same parent); sizes "
            "lognormal per kind (HAR fit, truncated to the observed range) scaled "
            f"to {total} bytes",
            "seed": SEEDS["stackoverflow"],
        },
    )


def make_github(inp: dict) -> PageModel:
    n, total = TABLE2["github"]
    rng = random.Random(SEEDS["github"])
    mix = {k: v for k, v in inp["wprof_kind_mix"]["counts"].items() if v > 0}
    counts = largest_remainder(mix, n - 1)
    first = [k for k in ("css", "js", "html", "other") for _ in range(counts.get(k, 0))]
    if "css" not in first or "js" not in first:
        raise SystemExit("github model needs at least one css and one js object")
    kinds = ["html", *first]
    parents: list[int | None] = [None, *[0] * len(first)]
    css = [i for i, k in enumerate(kinds) if k == "css"]
    css_js = [i for i, k in enumerate(kinds) if k in ("css", "js")]
    for k in ("image", "font"):
        for _ in range(counts.get(k, 0)):
            pool = css if k == "font" else css_js
            parents.append(pool[int(rng.random() * len(pool))])
            kinds.append(k)
    parents, kinds = _reorder(parents, kinds)
    raw = [_draw_size(rng, inp["har_size_fit"]["per_kind"], k) for k in kinds]
    return build_page(
        "github",
        scale_to_total(raw, total),
        parents,
        kinds,
        source="synthetic: no real Github page data available; kind mix from the pooled "
        "WProf graphs, sizes from the HAR fit",
        meta={
            "method": "tree HTML -> CSS/JS/frames/other -> images (under CSS or JS) and "
            "fonts (under CSS), seeded; sizes lognormal per kind (HAR fit, truncated "
            f"to the observed range) scaled to {total} bytes",
            "seed": SEEDS["github"],
        },
    )


def _fmt(v, ind: int = 0) -> str:
    """JSON text: dicts indented one space per level, lists of dicts one element per line."""
    pad = " " * (ind + 1)
    if isinstance(v, dict) and v:
        items = [f"{pad}{json.dumps(k)}: {_fmt(x, ind + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        return "[\n" + ",\n".join(pad + json.dumps(x) for x in v) + "\n" + " " * ind + "]"
    return json.dumps(v)


def write_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_fmt(obj) + "\n", encoding="utf-8", newline="\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--extract",
        type=Path,
        metavar="TRACES_DIR",
        help="re-read the real material (the ../traces folder) into --inputs first",
    )
    ap.add_argument(
        "--inputs",
        type=Path,
        default=DEFAULT_INPUTS,
        help="extracted facts (JSON), default data/web/sources/real_inputs.json",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (data/web)")
    args = ap.parse_args(argv)
    if args.extract is not None:
        write_json(args.inputs, extract(args.extract))
    inp = json.loads(args.inputs.read_text(encoding="utf-8"))
    for make in (make_google, make_github, make_stackoverflow):
        page = make(inp)
        n, total = TABLE2[page.name]
        assert len(page.objects) == n and page.total_bytes == total, page.name
        write_json(args.out / f"{page.name}.json", page.to_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
