"""Web page models (data/web) and their loader/generator."""

import importlib.util
import json
import os
import statistics
from pathlib import Path

import pytest

from envs.apps.pages import (
    PAGE_NAMES,
    PageModel,
    default_weight,
    load_page,
    page_from_har,
    page_from_wprof,
)
from envs.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
TABLE2 = {
    "google": (8, 1_300_000),
    "github": (61, 4_500_000),
    "stackoverflow": (120, 7_000_000),
}
TRACES = Path(os.environ.get("FALCON_TRACES_DIR", REPO.parent / "shared" / "traces"))
needs_traces = pytest.mark.skipif(
    not (TRACES / "web_wprof_depgraphs").is_dir(),
    reason="real traces folder (../traces) not available",
)


def _script():
    spec = importlib.util.spec_from_file_location(
        "make_page_models", REPO / "scripts" / "make_page_models.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", PAGE_NAMES)
def test_shipped_pages_match_table2(name):
    page = load_page(name)
    n, total = TABLE2[name]
    assert len(page.objects) == n
    assert page.total_bytes == total
    (root,) = page.roots()
    assert root.id == 0 and root.kind == "html" and root.weight == 256
    for o in page.objects[1:]:
        assert o.parent < o.id
        assert o.depth == page.objects[o.parent].depth + 1
        assert o.size > 0 and 0 < o.weight <= 256
    assert sum(len(page.children(o.id)) for o in page.objects) == n - 1
    sizes = [o.size for o in page.objects]
    assert max(sizes) / statistics.median(sizes) > 5  # heavy tailed
    assert page.source and page.meta["method"]


def test_load_by_path_equals_by_name():
    assert load_page(REPO / "data" / "web" / "google.json") == load_page("google")


def test_weights_follow_tree_position():
    assert default_weight("html", 0) == 256
    assert default_weight("css", 1) == default_weight("js", 1) > default_weight("image", 2)
    page = load_page("github")
    for o in page.objects:
        assert o.weight == default_weight(o.kind, o.depth)


def test_regeneration_is_byte_identical(tmp_path):
    assert _script().main(["--out", str(tmp_path)]) == 0
    for name in PAGE_NAMES:
        shipped = (REPO / "data" / "web" / f"{name}.json").read_bytes()
        assert (tmp_path / f"{name}.json").read_bytes() == shipped, name


@needs_traces
def test_extraction_from_real_material_is_reproducible(tmp_path):
    inputs = tmp_path / "real_inputs.json"
    assert (
        _script().main(["--extract", str(TRACES), "--inputs", str(inputs), "--out", str(tmp_path)])
        == 0
    )
    assert inputs.read_bytes() == (REPO / "data/web/sources/real_inputs.json").read_bytes()
    assert (tmp_path / "google.json").read_bytes() == (REPO / "data/web/google.json").read_bytes()


@needs_traces
def test_converters_on_real_files():
    g = page_from_har(TRACES / "web_har_http_samples/hruellan/google.com.har")
    assert len(g.objects) == 8 and g.total_bytes == 560_319
    so = page_from_wprof(
        TRACES / "web_wprof_depgraphs/stackoverflow.com_.json", sizes=lambda kind: 1000
    )
    assert len(so.objects) == 24 and so.objects[0].kind == "html"
    assert [o.id for o in so.children(0)] == [1, 2, 3]  # jquery, stub.js, all.css


def _write(tmp_path, objects, **extra):
    path = tmp_path / "bad_page.json"
    path.write_text(json.dumps({"name": "bad", "objects": objects, **extra}))
    return path


def _obj(i, parent, size=100, kind="image"):
    return {"id": i, "size": size, "parent": parent, "kind": "html" if i == 0 else kind}


@pytest.mark.parametrize(
    "objects, extra, words",
    [
        ([_obj(0, None), _obj(1, 2), _obj(2, 1)], {}, "smaller id"),  # cycle
        ([_obj(0, None), _obj(1, 7)], {}, "does not exist"),  # missing parent
        ([_obj(0, None), _obj(1, 0, size=-5)], {}, "size"),  # negative size
        ([_obj(0, None), _obj(1, 0, size=1.5)], {}, "size"),  # fractional size
        ([_obj(0, None), _obj(1, None)], {}, "root"),  # two roots
        ([_obj(0, None, kind="css") | {"kind": "css"}], {}, "html"),  # root not html
        ([_obj(0, None), _obj(1, 0, kind="video")], {}, "kind"),  # unknown kind
        ([_obj(0, None), {"id": 1, "parent": 0}], {}, "malformed"),  # missing field
        ([_obj(0, None), _obj(1, 0)], {"total_bytes": 7}, "total_bytes"),  # wrong total
        ([], {}, "no objects"),
    ],
)
def test_malformed_pages_raise_config_error(tmp_path, objects, extra, words):
    path = _write(tmp_path, objects, **extra)
    with pytest.raises(ConfigError) as err:
        load_page(path)
    msg = str(err.value)
    assert str(path) in msg and words in msg and "\n" not in msg


def test_bad_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"objects": [')
    with pytest.raises(ConfigError, match="broken.json.*not valid JSON"):
        load_page(path)
    with pytest.raises(ConfigError, match="nope.json.*no such file"):
        load_page(tmp_path / "nope.json")


def test_validate_names_where(tmp_path):
    page = PageModel("x", [])
    with pytest.raises(ConfigError, match="page somefile.json: no objects"):
        page.validate("somefile.json")
