"""Fuzzing the app input files: page JSON (our page schema, and the HAR and
WProf converters' inputs) and stream trace CSVs. Generated files either load
(and build an app) or raise :class:`envs.errors.ConfigError` with one line;
nothing else may come out.

Default suite: 800 page files, 400 HAR, 400 WProf graphs, 800 stream
traces, seeded (``tests/fuzz_scale.py``: x10 in the slow run).
"""

from __future__ import annotations

import json
import math

import pytest
from fuzz_scale import SCALES, examples
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from envs.apps import make_app
from envs.apps.pages import PageModel, load_page, page_from_har, page_from_wprof
from envs.apps.streams import load_stream_trace
from envs.errors import ConfigError

ODD = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        -1,
        1,
        2,
        3,
        7,
        10**30,
        0.5,
        -0.0,
        math.nan,
        math.inf,
        -math.inf,
        "",
        "x",
        "0",
        "html",
        "css",
        "js",
        "image",
        "font",
        "other",
        "text/html",
        [],
        {},
        [1],
        {"a": 1},
    ]
)
KIND = st.one_of(st.sampled_from(["html", "css", "js", "image", "font", "other"]), ODD)


def _small(v):
    return st.one_of(v, ODD)


@st.composite
def page_doc(draw):
    """A page file's content: mostly well-formed objects with a few odd fields."""
    n = draw(st.integers(0, 8))
    objects = []
    for i in range(n):
        o = {
            "id": draw(_small(st.just(i))),
            "size": draw(_small(st.integers(1, 10**6))),
            "parent": draw(_small(st.just(None) if i == 0 else st.integers(0, max(0, i - 1)))),
            "kind": draw(KIND),
        }
        if draw(st.booleans()):
            o["depth"] = draw(_small(st.integers(0, 4)))
        if draw(st.booleans()):
            o["weight"] = draw(_small(st.floats(0, 300)))
        if draw(st.integers(0, 9)) == 0:
            del o[draw(st.sampled_from(sorted(o)))]
        objects.append(o)
    doc = {
        "name": draw(_small(st.text(max_size=5))),
        "objects": draw(st.one_of(st.just(objects), ODD)),
    }
    if draw(st.booleans()):
        doc["total_bytes"] = draw(_small(st.integers(0, 10**6)))
    return draw(st.one_of(st.just(doc), st.just(doc), st.just(doc), ODD))


def _dump(doc) -> str:
    return json.dumps(doc, allow_nan=True)  # NaN and Infinity: what a careless writer emits


CONTENT = st.one_of(
    page_doc().map(_dump),
    page_doc().map(_dump),
    page_doc().map(_dump),
    st.text(max_size=40),
    st.binary(max_size=60),
)


@st.composite
def har_doc(draw):
    entries = []
    for _ in range(draw(st.integers(0, 5))):
        e = {
            "request": {
                "url": draw(
                    _small(
                        st.sampled_from(
                            [
                                "https://a/",
                                "https://a/x.css",
                                "http://b/y.js#f",
                                "ftp://c",
                                "https://a/i.png",
                            ]
                        )
                    )
                ),
                "headers": draw(
                    _small(
                        st.lists(
                            st.fixed_dictionaries(
                                {
                                    "name": _small(st.sampled_from(["Referer", "Accept"])),
                                    "value": _small(st.just("https://a/")),
                                }
                            ),
                            max_size=2,
                        )
                    )
                ),
            },
            "response": {
                "status": draw(_small(st.sampled_from([200, 404]))),
                "content": draw(
                    _small(
                        st.fixed_dictionaries(
                            {
                                "size": _small(st.integers(-5, 10**5)),
                                "mimeType": _small(st.just("text/css")),
                            }
                        )
                    )
                ),
                "bodySize": draw(_small(st.integers(-1, 10**5))),
            },
            "pageref": draw(_small(st.just("p0"))),
        }
        if draw(st.integers(0, 5)) == 0:
            e = draw(ODD)
        entries.append(e)
    log = {
        "entries": draw(st.one_of(st.just(entries), ODD)),
        "pages": draw(st.one_of(st.just([{"id": "p0"}]), st.just([]), ODD)),
    }
    return draw(
        st.one_of(st.just({"log": log}), st.just({"log": log}), st.just({"log": draw(ODD)}), ODD)
    )


@st.composite
def wprof_doc(draw):
    n = draw(st.integers(0, 5))
    objs = []
    for k in range(n):
        o = {
            "id": draw(_small(st.just(f"o{k}"))),
            "url": draw(_small(st.just(f"https://a/{k}.js"))),
            "download": draw(
                st.one_of(
                    st.fixed_dictionaries(
                        {"id": _small(st.just(f"d{k}")), "type": _small(st.just("js"))}
                    ),
                    ODD,
                )
            ),
            "comps": draw(
                st.one_of(
                    st.lists(
                        st.fixed_dictionaries(
                            {
                                "id": _small(st.sampled_from(["c0", "c1"])),
                                "e_time": _small(st.floats(0, 9)),
                            }
                        ),
                        max_size=2,
                    ),
                    ODD,
                )
            ),
        }
        objs.append(o)
    acts = [f"d{k}" for k in range(max(n, 1))] + ["c0", "c1", "zz"]
    deps = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "a1": _small(st.sampled_from(acts)),
                    "a2": _small(st.sampled_from(acts)),
                    "time": _small(st.sampled_from([-1, 0, 5])),
                }
            ),
            max_size=6,
        )
    )
    doc = {
        "objs": draw(st.one_of(st.just(objs), ODD)),
        "deps": draw(st.one_of(st.just(deps), ODD)),
        "start_activity": draw(_small(st.sampled_from(acts))),
    }
    return draw(st.one_of(st.just(doc), st.just(doc), ODD))


SIZES = st.one_of(
    st.lists(st.one_of(st.integers(-1, 10**6), ODD), max_size=6),
    st.integers(0, 10**5).map(lambda b: lambda kind: b),
)

CELLS = [
    "0",
    "0.5",
    "1",
    "10",
    "1e9",
    "1e400",
    "-1",
    "nan",
    "inf",
    "-inf",
    "",
    "x",
    " 2 ",
    "3.0",
    "99999999999999999999",
]
stream_row = st.lists(st.sampled_from(CELLS), min_size=0, max_size=4).map(",".join)
stream_header = st.sampled_from(
    [
        "release_s,size_bytes,priority",
        "release_s,size_bytes",
        "size_bytes,release_s",
        "release_s",
        "a,b,c",
        "",
        "release_s,size_bytes,priority,x",
    ]
)
stream_csv = st.one_of(
    st.tuples(stream_header, st.lists(stream_row, max_size=8)).map(
        lambda hr: "\n".join([hr[0], *hr[1]])
    ),
    st.text(max_size=40),
)
STREAM_CONTENT = st.one_of(stream_csv, stream_csv, stream_csv, st.binary(max_size=60))


def _write(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return str(path)


def _outcome_ok(call) -> object:
    try:
        return call()
    except ConfigError as e:
        assert "\n" not in str(e), str(e)
        return None


def _fuzz(n: int, seed_: int, strategy, check) -> None:
    @seed(seed_)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case):
        check(case)

    run()


@pytest.mark.parametrize("scale", SCALES)
def test_generated_page_files_load_or_raise_one_error(tmp_path, scale):
    def check(content):
        path = _write(tmp_path, "page.json", content)
        page = _outcome_ok(lambda: load_page(path))
        if page is not None:
            assert isinstance(page, PageModel) and page.total_bytes > 0
            make_app({"kind": "web", "page": path}, 0.01)  # a loaded page builds the web app

    _fuzz(examples(1.0, scale), 31 + scale, CONTENT, check)


@pytest.mark.parametrize("scale", SCALES)
def test_generated_har_and_wprof_files_convert_or_raise_one_error(tmp_path, scale):
    def check(case):
        kind, doc, index, sizes = case
        path = _write(
            tmp_path, f"page.{kind}.json", _dump(doc) if not isinstance(doc, bytes) else doc
        )
        if kind == "har":
            page = _outcome_ok(lambda: page_from_har(path, index))
        else:
            page = _outcome_ok(lambda: page_from_wprof(path, sizes))
        assert page is None or (isinstance(page, PageModel) and page.total_bytes > 0)

    case = st.one_of(
        st.tuples(
            st.just("har"),
            st.one_of(har_doc(), st.binary(max_size=30)),
            st.integers(-1, 2),
            st.just(None),
        ),
        st.tuples(
            st.just("wprof"), st.one_of(wprof_doc(), st.binary(max_size=30)), st.just(0), SIZES
        ),
    )
    _fuzz(examples(1.0, scale), 41 + scale, case, check)


@pytest.mark.parametrize("scale", SCALES)
def test_generated_stream_traces_load_or_raise_one_error(tmp_path, scale):
    def check(content):
        path = _write(tmp_path, "streams.csv", content)
        rows = _outcome_ok(lambda: load_stream_trace(path))
        if rows is not None:
            assert rows and all(
                math.isfinite(r["release_s"]) and r["release_s"] >= 0 and r["size_bytes"] > 0
                for r in rows
            )
            make_app({"kind": "streams", "trace": path}, 0.01)

    _fuzz(examples(1.0, scale), 51 + scale, STREAM_CONTENT, check)
