"""Web page models: objects with sizes and a dependency tree (FALCON Table II).

A page is a tree of objects. The root is the HTML document. Every other
object is requested when its parent has been completely received (the web
app in `envs.apps` opens one stream per object). Sizes are in bytes (the
response body only, without HTTP or QUIC headers).

Page file schema (`data/web/<name>.json`, UTF-8 JSON)::

    {
      "name": "google",              # free text
      "source": "...",               # provenance: where the structure and sizes come from
      "method": "...",               # optional: how the file was made
      "seed": 1,                     # optional: generator seed
      "total_bytes": 1300000,        # optional; if present it must equal the sum of sizes
      "objects": [                   # ids 0..n-1 in order; a parent's id < its child's id
        {"id": 0, "size": 120000, "parent": null, "kind": "html",
         "depth": 0, "weight": 256},
        {"id": 1, "size": 40000, "parent": 0, "kind": "css",
         "depth": 1, "weight": 220},
        ...
      ]
    }

`size` is an integer number of bytes (> 0). `kind` is one of `KINDS`.
`depth` (hops from the root) and `weight` are optional: a missing depth is
computed, a given one must match; a missing weight follows `default_weight`.

Weights are for weighted round-robin (WRR) stream scheduling: while several
objects are outstanding, each gets a share of the sending opportunities
proportional to its weight (values 1..256, as HTTP/2 weights). The rule,
`default_weight`, follows Chrome's HTTP/2 priorities, which rank HTML and
CSS first, then scripts, fonts, XHR and images last, on the five weight
levels 256, 220, 183, 147, 110 of its SPDY-era mapping: the root HTML 256,
CSS and JS 220 (render-blocking, found directly below the root), fonts 183,
other (XHR/JSON, frames, plugins) 147,
images 110. Weight therefore falls with the object's position in the
canonical tree HTML -> CSS/JS -> images; a non-root HTML object (a frame) gets
147 like other sub-resources.

Converters from real material (used by `scripts/make_page_models.py`):
`page_from_har` (sizes and MIME types from a HAR 1.2 file, parents from the
Referer header) and `page_from_wprof` (dependency structure from a WProf
graph; it has no sizes, so they are passed in).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag

from envs.errors import ConfigError, is_whole_number
from envs.traces.catalog import data_dir

PAGE_NAMES = ("google", "github", "stackoverflow")
KINDS = ("html", "css", "js", "image", "font", "other")
KIND_WEIGHT = {
    "html": 256.0,
    "css": 220.0,
    "js": 220.0,
    "font": 183.0,
    "other": 147.0,
    "image": 110.0,
}


def default_weight(kind: str, depth: int) -> float:
    """WRR weight (1..256) of an object of `kind` at `depth` (0 = root)."""
    if depth == 0:
        return 256.0
    if kind == "html":
        return KIND_WEIGHT["other"]
    return KIND_WEIGHT[kind]


def kind_of_mime(mime: str | None, url: str = "") -> str:
    """Map a MIME type (or, failing that, a URL suffix) to one of `KINDS`."""
    m = (mime or "").split(";")[0].strip().lower()
    if m in ("text/html", "application/xhtml+xml"):
        return "html"
    if m == "text/css":
        return "css"
    if "javascript" in m or "ecmascript" in m:
        return "js"
    if m.startswith("image/"):
        return "image"
    if m.startswith("font/") or "font" in m or "woff" in m:
        return "font"
    if not m:
        path = urldefrag(url)[0].split("?")[0].lower()
        for suffixes, kind in (
            ((".css",), "css"),
            ((".js",), "js"),
            ((".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico"), "image"),
        ):
            if path.endswith(suffixes):
                return kind
    return "other"


@dataclass
class WebObject:
    """One object of a page.

    id: index in the page (0 = root); size: response body in bytes;
    parent: id of the object whose completion triggers the request (None for
    the root); kind: one of `KINDS`; depth: hops from the root; weight: WRR
    weight (1..256, relative).
    """

    id: int
    size: int
    parent: int | None
    kind: str
    depth: int
    weight: float


@dataclass
class PageModel:
    """A web page: `objects[i].id == i`, a tree rooted at one HTML object."""

    name: str
    objects: list[WebObject]
    source: str = ""
    meta: dict = field(default_factory=dict)  # method, seed, ... (free form)

    @property
    def total_bytes(self) -> int:
        """Sum of object sizes in bytes."""
        return sum(o.size for o in self.objects)

    def children(self, obj_id: int) -> list[WebObject]:
        """Objects whose parent is `obj_id`, in id order."""
        return [o for o in self.objects if o.parent == obj_id]

    def roots(self) -> list[WebObject]:
        """Objects without a parent (exactly one in a valid page)."""
        return [o for o in self.objects if o.parent is None]

    def validate(self, where: str | os.PathLike | None = None) -> PageModel:
        """Check the tree; raise ConfigError naming `where` (file) on failure."""
        where = where or self.name

        def bad(msg):
            raise ConfigError(f"page {where}: {msg}")

        if not self.objects:
            bad("no objects")
        for i, o in enumerate(self.objects):
            if o.id != i:
                bad(f"object #{i} has id {o.id}; ids must be 0..n-1 in order")
            if o.kind not in KINDS:
                bad(f"object {i}: kind {o.kind!r} not in {KINDS}")
            if not is_whole_number(o.size, 1):
                bad(f"object {i}: size must be a positive integer of bytes, got {o.size!r}")
            if not (0 < o.weight <= 256):
                bad(f"object {i}: weight must be in (0, 256], got {o.weight!r}")
            if o.parent is None:
                if i != 0:
                    bad(f"object {i} has no parent; only object 0 may be the root")
                exp_depth = 0
            else:
                if not isinstance(o.parent, int) or not 0 <= o.parent < len(self.objects):
                    bad(f"object {i}: parent {o.parent!r} does not exist")
                if o.parent >= i:
                    bad(
                        f"object {i}: parent {o.parent} must have a smaller id (cycle or "
                        "unordered tree)"
                    )
                exp_depth = self.objects[o.parent].depth + 1
            if o.depth != exp_depth:
                bad(f"object {i}: depth {o.depth} but its position gives {exp_depth}")
        if self.objects[0].parent is not None:
            bad("object 0 must be the root (parent null)")
        if self.objects[0].kind != "html":
            bad(f"the root must be html, got {self.objects[0].kind!r}")
        return self

    def to_dict(self) -> dict:
        """The page as a JSON-ready dict (schema in the module docstring)."""
        d = {
            "name": self.name,
            "source": self.source,
            **self.meta,
            "total_bytes": self.total_bytes,
            "n_objects": len(self.objects),
        }
        d["objects"] = [
            {
                "id": o.id,
                "size": o.size,
                "parent": o.parent,
                "kind": o.kind,
                "depth": o.depth,
                "weight": o.weight,
            }
            for o in self.objects
        ]
        return d


def build_page(
    name: str,
    sizes,
    parents,
    kinds,
    source: str = "",
    meta: dict | None = None,
    weights=None,
) -> PageModel:
    """Make a page from parallel lists (ids 0..n-1, parent id < child id)."""
    objs: list[WebObject] = []
    for i, (size, parent, kind) in enumerate(zip(sizes, parents, kinds, strict=True)):
        depth = 0 if parent is None or not 0 <= parent < i else objs[parent].depth + 1
        w = weights[i] if weights is not None else default_weight(kind, depth)
        objs.append(WebObject(i, int(size), parent, kind, depth, float(w)))
    return PageModel(name, objs, source, dict(meta or {})).validate(name)


def load_page(name_or_path: str | os.PathLike) -> PageModel:
    """Load and validate a page: a name in `PAGE_NAMES` or a path to a JSON file."""
    if str(name_or_path) in PAGE_NAMES:
        path = data_dir() / "web" / f"{name_or_path}.json"
    else:
        path = Path(name_or_path)
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"page {path}: no such file (known pages: {', '.join(PAGE_NAMES)})"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"page {path}: not valid JSON ({e})") from None
    if not isinstance(d, dict) or not isinstance(d.get("objects"), list):
        raise ConfigError(f"page {path}: expected an object with an 'objects' list")
    objs: list[WebObject] = []
    try:
        for o in d["objects"]:
            parent = o.get("parent")
            kind = o["kind"]
            if parent is None:
                depth = 0
            elif isinstance(parent, int) and 0 <= parent < len(objs):
                depth = objs[parent].depth + 1
            else:
                depth = -1  # rejected by validate() with a precise message
            depth = o.get("depth", depth)
            weight = o.get("weight")
            if weight is None:
                weight = default_weight(kind, depth) if kind in KINDS else 1.0
            objs.append(WebObject(o["id"], o["size"], parent, kind, depth, float(weight)))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ConfigError(f"page {path}: object #{len(objs)} malformed ({e!r})") from None
    meta = {k: d[k] for k in ("method", "seed") if k in d}
    page = PageModel(str(d.get("name", Path(path).stem)), objs, str(d.get("source", "")), meta)
    page.validate(path)
    if "total_bytes" in d and d["total_bytes"] != page.total_bytes:
        raise ConfigError(
            f"page {path}: total_bytes {d['total_bytes']} != sum of sizes {page.total_bytes}"
        )
    return page


# --------------------------------------------------------------------------- converters


def _har_size(entry: dict) -> int:
    """Response body bytes: decoded content.size, else bodySize (the wire size)."""
    resp = entry.get("response", {})
    size = (resp.get("content") or {}).get("size") or 0
    if size <= 0:
        size = resp.get("bodySize") or 0
    return max(int(size), 0)


def har_objects(har_path: str | os.PathLike, page_index: int | None = 0) -> list[dict]:
    """Real objects of one page view of a HAR file (all entries if page_index is None).

    Kept: http(s) URLs with status 200 and a body > 0 bytes, first occurrence
    of each URL. Returns dicts with url, size (bytes), mime, kind, referer.
    A file that is not such a HAR raises a one-line ConfigError.
    """
    if page_index is not None and not is_whole_number(page_index, 0):
        raise ConfigError(
            f"page {har_path}: page_index must be an integer >= 0 or None, got {page_index!r}"
        )
    try:
        return _har_objects(har_path, page_index)
    except ConfigError:
        raise
    except (
        OSError,
        UnicodeDecodeError,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
        OverflowError,
    ) as e:
        raise ConfigError(
            f"page {har_path}: not a usable HAR file ({' '.join(repr(e).split())[:200]})"
        ) from None


def _har_objects(har_path, page_index: int | None) -> list[dict]:
    log = json.loads(Path(har_path).read_text(encoding="utf-8"))["log"]
    entries = log["entries"]
    if not isinstance(entries, list):
        raise TypeError(f"log.entries is {type(entries).__name__}, not a list")
    if page_index is not None and log.get("pages"):
        pid = log["pages"][page_index]["id"]
        entries = [e for e in entries if isinstance(e, dict) and e.get("pageref") == pid]
    out, seen = [], set()
    for e in entries:
        url = urldefrag(e["request"]["url"])[0]
        if not url.startswith(("http://", "https://")) or url in seen:
            continue
        if e["response"].get("status") != 200 or _har_size(e) <= 0:
            continue
        seen.add(url)
        heads = {h["name"].lower(): h["value"] for h in e["request"].get("headers", [])}
        mime = (e["response"].get("content") or {}).get("mimeType")
        out.append(
            {
                "url": url,
                "size": _har_size(e),
                "mime": mime,
                "kind": kind_of_mime(mime, url),
                "referer": heads.get("referer"),
            }
        )
    return out


def har_parents(objs: list[dict]) -> list[int | None]:
    """Parent index per `har_objects` item: the earlier object named by its Referer, else 0."""
    index: dict[str, int] = {}
    parents: list[int | None] = []
    for i, o in enumerate(objs):
        parents.append(None if i == 0 else index.get(o["referer"], 0))
        index.setdefault(o["url"], i)
    return parents


def page_from_har(
    har_path: str | os.PathLike, page_index: int = 0, name: str | None = None
) -> PageModel:
    """Page from one page view of a HAR 1.2 file.

    Sizes (bytes) from `response.content.size` (decoded body), else
    `bodySize`; kinds from the MIME type. HAR has no dependency tree, so an
    object's parent is the earlier object named by its Referer header (CSS
    for images referenced from a stylesheet), else the first (HTML) object.
    """
    objs = har_objects(har_path, page_index)
    if not objs:
        raise ConfigError(f"page {har_path}: page {page_index} has no usable objects")
    parents = har_parents(objs)
    kinds = [o["kind"] for o in objs]
    return build_page(
        name or Path(har_path).stem,
        [o["size"] for o in objs],
        parents,
        kinds,
        source=f"HAR {Path(har_path).name} page {page_index}",
    )


def wprof_tree(json_path: str | os.PathLike) -> list[dict]:
    """:func:`_wprof_tree`; a file that is not a usable WProf graph raises a one-line ConfigError."""
    try:
        return _wprof_tree(json_path)
    except ConfigError:
        raise
    except (
        OSError,
        UnicodeDecodeError,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
        RecursionError,
    ) as e:
        raise ConfigError(
            f"page {json_path}: not a usable WProf graph ({' '.join(repr(e).split())[:200]})"
        ) from None


def _wprof_tree(json_path) -> list[dict]:
    """Dependency tree of a WProf graph, ordered by depth (parent index < child index).

    The parent of an object is the object whose activity triggers its
    download (a dep a1 -> download); if that activity is an HTML evaluation
    chunk that itself waits (dep time -1) on another object's computation
    (a blocking script), the parent is that object instead, since the request
    cannot be issued before it completes. Returns dicts with wprof id, url,
    mime, kind and parent (index into the list).
    """
    g = json.loads(Path(json_path).read_text(encoding="utf-8"))
    objs, deps, start = g["objs"], g["deps"], g["start_activity"]
    owner = {}
    for k, o in enumerate(objs):
        owner[o["download"]["id"]] = k
        for c in o.get("comps", []):
            owner[c["id"]] = k
    end = {c["id"]: c.get("e_time", 0.0) for o in objs for c in o.get("comps", [])}
    root = owner.get(start)
    if root is None:
        raise ConfigError(f"page {json_path}: start_activity {start!r} is not a download")
    parent: dict[int, int] = {}
    for k, o in enumerate(objs):
        if k == root:
            continue
        triggers = [d["a1"] for d in deps if d["a2"] == o["download"]["id"] and d["a1"] in owner]
        if not triggers:
            parent[k] = root
            continue
        a1 = triggers[0]
        gates = [
            d["a1"]
            for d in deps
            if d["a2"] == a1 and d.get("time") == -1 and owner.get(d["a1"], owner[a1]) != owner[a1]
        ]
        p = owner[max(gates, key=lambda a: end.get(a, 0.0))] if gates else owner[a1]
        parent[k] = p if p != k else root
    # depth by walking up (guard against cycles in malformed graphs)
    depth = {root: 0}

    def depth_of(k, seen=()):
        if k not in depth:
            if k in seen:
                raise ConfigError(f"page {json_path}: dependency cycle at {objs[k]['id']}")
            depth[k] = depth_of(parent[k], (*seen, k)) + 1
        return depth[k]

    order = sorted(range(len(objs)), key=lambda k: (depth_of(k), k))
    pos = {k: i for i, k in enumerate(order)}
    return [
        {
            "wprof_id": objs[k]["id"],
            "url": objs[k].get("url", ""),
            "mime": objs[k]["download"].get("type"),
            "kind": kind_of_mime(objs[k]["download"].get("type"), objs[k].get("url", "")),
            "parent": None if k == root else pos[parent[k]],
        }
        for k in order
    ]


def page_from_wprof(json_path: str | os.PathLike, sizes, name: str | None = None) -> PageModel:
    """Page from a WProf graph's structure (see `wprof_tree`) and given sizes.

    WProf graphs carry no sizes: `sizes` is a sequence of bytes in the tree's
    order (root first), or a callable `kind -> bytes` called once per object.
    """
    tree = wprof_tree(json_path)
    if callable(sizes):
        sizes = [sizes(t["kind"]) for t in tree]
    if len(sizes) != len(tree):
        raise ConfigError(f"page {json_path}: {len(sizes)} sizes for {len(tree)} objects")
    return build_page(
        name or Path(json_path).stem,
        sizes,
        [t["parent"] for t in tree],
        [t["kind"] for t in tree],
        source=f"WProf {Path(json_path).name}",
    )
