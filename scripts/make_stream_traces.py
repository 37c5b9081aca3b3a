"""Write the stream traces of data/streams/ from real HAR captures (deterministic).

A stream trace is a CSV ``release_s,size_bytes,priority`` (plus ``kind`` and
``url`` for provenance; the emulator reads the first three): one stream per
web resource, released at the date of the original request, of the size of
the response body. This is the SRPT-ECF paper's replay method (Section
IV-C: "for each web resource, we create a message of the same size ... the
release date r_m is the date of the original request").

Source: ``web_har_http_samples/hruellan/fr.wikipedia.org.har`` (Chrome
WebInspector, 2012-09-18), first page view (``page_49``: the French
Wikipedia main page, loaded with a cold cache). Kept: http(s) entries with
status 200, first occurrence of each URL (``data:`` URIs are inlined in the
page, not fetched). Size: the response's ``bodySize`` (the body bytes as
transferred, i.e. compressed for gzip'ed text) when positive, else
``content.size``. Release: ``startedDateTime`` minus the page's, in
seconds (millisecond resolution).

Outputs (``--out``, default data/streams/):

* ``frwiki_main.csv``: every stream priority 0 (the paper's replay has no
  application priorities);
* ``frwiki_main_prio.csv``: the same streams with priorities by type, after
  Chrome's HTTP/2 ordering: 0 = HTML/CSS/JS, 1 = fonts and other, 2 = images;
* ``configs/app/page_replay.yaml`` (``--app-config``): the streams app with
  ``frwiki_main`` inline, so that the config works from any directory.

    python scripts/make_stream_traces.py --har /path/to/traces/web_har_http_samples/hruellan/fr.wikipedia.org.har
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from datetime import datetime
from pathlib import Path
from urllib.parse import urldefrag

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from envs.apps.pages import kind_of_mime  # noqa: E402

DEFAULT_HAR = Path("/work/shared/traces/web_har_http_samples/hruellan/fr.wikipedia.org.har")
PRIORITY_OF_KIND = {"html": 0, "css": 0, "js": 0, "font": 1, "other": 1, "image": 2}


def _ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def har_streams(har_path: Path, page_index: int = 0) -> list[dict]:
    """Streams (release_s, size_bytes, kind, url) of one page view of a HAR file."""
    log = json.loads(Path(har_path).read_text(encoding="utf-8"))["log"]
    page = log["pages"][page_index]
    t0 = _ts(page["startedDateTime"])
    out, seen = [], set()
    for e in log["entries"]:
        if e.get("pageref") != page["id"]:
            continue
        url = urldefrag(e["request"]["url"])[0]
        resp = e["response"]
        if not url.startswith(("http://", "https://")) or url in seen or resp.get("status") != 200:
            continue
        body = resp.get("bodySize") or 0
        content = (resp.get("content") or {}).get("size") or 0
        size = body if body > 0 else content
        if size <= 0:
            continue
        seen.add(url)
        mime = (resp.get("content") or {}).get("mimeType")
        out.append(
            {
                "release_s": round(_ts(e["startedDateTime"]) - t0, 3),
                "size_bytes": int(size),
                "kind": kind_of_mime(mime, url),
                "url": url,
            }
        )
    out.sort(key=lambda s: s["release_s"])  # stable: HAR order on ties
    return out


def write_csv(streams: list[dict], path: Path, priorities: bool) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["release_s", "size_bytes", "priority", "kind", "url"])
    for s in streams:
        prio = PRIORITY_OF_KIND[s["kind"]] if priorities else 0
        w.writerow([f"{s['release_s']:.3f}", s["size_bytes"], prio, s["kind"], s["url"]])
    path.write_text(buf.getvalue(), encoding="utf-8")


def app_yaml(streams: list[dict]) -> str:
    total = sum(s["size_bytes"] for s in streams)
    lines = [
        "# Page-trace replay for stream-aware scheduling (SRPT-ECF paper, Section IV-C):",
        f"# the {len(streams)} resources of the French Wikipedia main page (real HAR, 2012),",
        "# one stream per resource released at its original request date, sized like its",
        f"# response body ({total} bytes in all). Same data as data/streams/frwiki_main.csv",
        "# (see data/streams/README.md); inline so that the config works from any",
        "# directory. Written by scripts/make_stream_traces.py: do not edit by hand.",
        "# Another trace: app.trace=<absolute path to a CSV> app.streams=null.",
        "kind: streams",
        "size_bytes: null      # (bulk only)",
        "page: null            # (web only)",
        "trace: null",
        "streams:",
    ]
    for s in streams:
        lines.append(
            f"  - {{release_s: {s['release_s']:.3f}, size_bytes: {s['size_bytes']}, priority: 0}}"
            f"   # {s['kind']}"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--har", type=Path, default=DEFAULT_HAR, help="fr.wikipedia.org.har (HAR 1.2)")
    ap.add_argument("--page-index", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "data" / "streams")
    ap.add_argument(
        "--app-config", type=Path, default=REPO / "configs" / "app" / "page_replay.yaml"
    )
    args = ap.parse_args(argv)
    streams = har_streams(args.har, args.page_index)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(streams, args.out / "frwiki_main.csv", priorities=False)
    write_csv(streams, args.out / "frwiki_main_prio.csv", priorities=True)
    args.app_config.write_text(app_yaml(streams), encoding="utf-8")
    total = sum(s["size_bytes"] for s in streams)
    print(
        f"{len(streams)} streams, {total} bytes, releases {streams[0]['release_s']}..{streams[-1]['release_s']} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
