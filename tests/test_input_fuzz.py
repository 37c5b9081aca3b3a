"""Fuzzing the other inputs: scenario and app configs (condition schedules
included) and the HDF5 files (bank, exported model, experience log).
Generated inputs either work or raise the documented error,
:class:`envs.errors.FalconInputError` (``ConfigError``, ``TraceError``,
``ModelFileError``, ``ExperienceFileError``), with one line; nothing else may
come out, and no read may hang.

Default suite: 1 200 scenarios, 600 apps, 200 damaged files (truncated,
garbage, a few bytes changed), 200 structurally damaged ones (an object or
attribute deleted, a wrong dtype or shape, NaN, empty), seeded; the slow run
10x (``tests/fuzz_scale.py``).
"""

from __future__ import annotations

import math
import shutil
import warnings

import numpy as np
import pytest
from fuzz_scale import SCALES, examples
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from envs.apps import make_app, normalise_app
from envs.emulation import Emulation
from envs.errors import FalconInputError
from envs.scenario import normalise_scenario

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**7),
    st.sampled_from(
        [
            0.0,
            -1.0,
            0.5,
            1.0,
            2.0,
            30.0,
            1e9,
            math.nan,
            math.inf,
            "",
            "x",
            "4g",
            "wlan",
            "olia",
            "cubic",
            "random",
            "gilbert_elliott",
            "bernoulli",
            "google",
            "bulk",
            "web",
            "streams",
            "aydin_multipath_wifi_cellular/7_1_wifi.csv",
        ]
    ),
)
PATH_KEYS = [
    "link",
    "name",
    "bandwidth_mbps",
    "trace",
    "synthetic",
    "trace_start_s",
    "rtt_ms",
    "rtt_std_ms",
    "loss",
    "loss_model",
    "ge",
    "buffer_packets",
    "buffer_bytes",
    "buffer_bdp",
    "cc",
    "return_bandwidth_mbps",
    "shared_link",
    "schedule",
    "junk",
]
SCENARIO_KEYS = [
    "name",
    "packet_size",
    "header_bytes",
    "initial_window_packets",
    "min_window_packets",
    "max_duration_s",
    "ack",
    "flow_control",
    "cc",
    "setup",
    "junk",
]
segment = st.dictionaries(
    st.sampled_from(["at_s", "rtt_ms", "rtt_std_ms", "loss", "bandwidth_mbps", "x"]),
    st.one_of(SCALARS, st.floats(0, 5)),
    max_size=4,
)
schedule = st.one_of(
    st.lists(segment, max_size=4),
    st.fixed_dictionaries(
        {"segments": st.lists(segment, max_size=3)},
        optional={"period_s": st.one_of(SCALARS, st.floats(0, 10))},
    ),
    SCALARS,
)
value = st.one_of(
    SCALARS,
    st.dictionaries(
        st.sampled_from(
            [
                "every",
                "max_delay_ms",
                "size_bytes",
                "p_gb",
                "p_bg",
                "loss_good",
                "loss_bad",
                "kind",
                "file",
            ]
        ),
        SCALARS,
        max_size=3,
    ),
)
path = st.one_of(
    st.dictionaries(st.sampled_from(PATH_KEYS), value, max_size=6),
    st.fixed_dictionaries(
        {"bandwidth_mbps": st.floats(0.1, 2000), "rtt_ms": st.floats(0.5, 500)},
        optional={
            "loss": st.floats(0, 0.99),
            "rtt_std_ms": st.floats(0, 300),
            "schedule": schedule,
            "cc": st.sampled_from(["olia", "cubic", "bbr"]),
        },
    ),
    SCALARS,
)
setup = st.one_of(
    st.sampled_from(["none", "quic", "gquic", "tcp_tls", "zero_rtt", "tls"]),
    st.dictionaries(
        st.sampled_from(["handshake", "path_validation", "x"]),
        st.one_of(SCALARS, st.sampled_from(["quic", "zero_rtt"])),
        max_size=2,
    ),
    SCALARS,
)
scenario = st.fixed_dictionaries(
    {"paths": st.one_of(st.lists(path, max_size=3), SCALARS)},
    optional={k: setup if k == "setup" else value for k in SCENARIO_KEYS},
)
app = st.one_of(
    st.dictionaries(
        st.sampled_from(["kind", "size_bytes", "page", "trace", "streams", "x"]),
        st.one_of(
            SCALARS,
            st.lists(
                st.dictionaries(st.sampled_from(["release_s", "size_bytes", "priority"]), SCALARS),
                max_size=3,
            ),
        ),
    ),
    SCALARS,
)


def one_line(e: Exception) -> None:
    assert "\n" not in str(e), str(e)


@pytest.mark.parametrize("scale", SCALES)
def test_generated_scenarios_normalise_and_build_or_raise_one_error(scale):
    @seed(7 + scale)
    @settings(
        max_examples=examples(1.5, scale),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(s=scenario)
    def run(s):
        try:
            norm = normalise_scenario(s)
        except FalconInputError as e:
            one_line(e)
            return
        from baselines import make_scheduler

        try:
            Emulation(0).connect(norm, make_scheduler("minrtt"))
        except FalconInputError as e:
            one_line(e)

    run()


@pytest.mark.parametrize("scale", SCALES)
def test_generated_apps_normalise_or_raise_one_error(scale):
    @seed(8 + scale)
    @settings(
        max_examples=examples(0.75, scale),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(a=app)
    def run(a):
        try:
            make_app(normalise_app(a), 0.01)
        except FalconInputError as e:
            one_line(e)

    run()


@pytest.fixture(scope="module")
def good_files(tmp_path_factory):
    """A real bank file, an exported model file and a real experience log to damage."""
    from baselines.dqn.dqn_off import DQNOff
    from baselines.dqn.experience import write_experience
    from baselines.dqn.export import write_hdf5
    from baselines.dqn.network import QNetSpec
    from envs.mdp import n_inputs
    from metalearning.bank import MetaModelBank
    from metalearning.grid import ConditionGrid

    d = tmp_path_factory.mktemp("good")
    bank = MetaModelBank.initial(
        ConditionGrid(n_paths=1), QNetSpec(n_inputs(1, "completion"), 1, (4, 4, 4)), seed=1
    )
    bank.write(d / "bank.h5")
    write_hdf5(d / "model.h5", bank.records()[:2])
    off = DQNOff(seed=0, log_every=10**9)
    exp = off.collect(
        {"paths": [{"link": "4g"}, {"link": "wlan"}]},
        {"kind": "bulk", "size_bytes": 300_000},
        0,
        1,
        "rules",
        0.3,
        progress=False,
    )
    write_experience(d / "experience.h5", exp)
    return d


def _read(kind: str, path) -> None:
    from baselines.dqn.experience import read_experience
    from baselines.dqn.export import read_hdf5
    from metalearning.bank import MetaModelBank

    {"bank.h5": MetaModelBank.read, "experience.h5": read_experience, "model.h5": read_hdf5}[kind](
        path
    )


FILES = ["bank.h5", "experience.h5", "model.h5"]


def _outcome(kind: str, path) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "error"
            )  # e.g. a complex number cast to an integer is not a result
            _read(kind, path)
        return "ok"
    except FalconInputError as e:
        return "error" if "\n" not in str(e) else f"a multi-line error: {e}"
    except Exception as e:  # noqa: BLE001 (the point: nothing else may come out)
        return f"{type(e).__name__}: {e}"


def _read_in_worker(cases, out) -> None:
    for kind, path in cases:
        out.put(_outcome(kind, path))


def outcomes_guarded(cases: list[tuple[str, str]], timeout_s: float = 60.0) -> list[str]:
    """:func:`_outcome` of every case, read in one forked worker process: a
    read that hangs (inside the HDF5 C library, where no Python-level check
    can stop it) or kills the process fails the test instead of hanging it."""
    import multiprocessing as mp
    import queue

    ctx = mp.get_context("fork")
    out = ctx.Queue()
    worker = ctx.Process(target=_read_in_worker, args=(cases, out), daemon=True)
    worker.start()
    got = []
    try:
        for case in cases:
            try:
                got.append(out.get(timeout=timeout_s))
            except queue.Empty:
                pytest.fail(
                    f"reading {case} hung for {timeout_s:.0f} s or killed the reader "
                    f"(exit code {worker.exitcode})"
                )
    finally:
        worker.kill()
        worker.join()
    return got


@pytest.mark.parametrize("scale", SCALES)
def test_damaged_model_files_raise_one_error(tmp_path, good_files, scale):
    """Truncated files, garbage bytes and files with a few bytes changed
    anywhere: read or one error line, never a hang (checksummed HDF5, see
    ``baselines/dqn/files.py``)."""
    rng = np.random.default_rng(9 + scale)
    cases = []
    for k in range(examples(0.25, scale)):
        kind = FILES[k % 3]
        data = bytearray((good_files / kind).read_bytes())
        how = (k // 3) % 3
        if how == 0:
            data = data[: int(rng.integers(0, len(data)))]
        elif how == 1:
            data = bytearray(
                rng.integers(0, 256, int(rng.integers(0, 4096)), dtype=np.uint8).tobytes()
            )
        else:
            for i in rng.integers(0, len(data), int(rng.integers(1, 20))):
                data[i] = int(rng.integers(0, 256))
        target = tmp_path / f"{k}_{kind}"
        target.write_bytes(bytes(data))
        cases.append((kind, str(target)))
    outcomes = outcomes_guarded(cases)
    bad = [(c, o) for c, o in zip(cases, outcomes) if o not in ("ok", "error")]
    assert not bad, bad[:3]
    # a few changed bytes are (almost) always caught by a checksum
    flipped = [o for k, o in enumerate(outcomes) if (k // 3) % 3 == 2]
    assert flipped.count("error") >= 0.9 * len(flipped)
    shutil.rmtree(tmp_path, ignore_errors=True)


def _objects(path) -> tuple[list[str], list[tuple[str, str]]]:
    """The datasets and groups, and the (object, attribute) pairs of an HDF5 file."""
    import h5py

    names, attrs = [], []
    with h5py.File(path, "r") as f:
        attrs.extend(("/", a) for a in f.attrs)

        def visit(name, obj):
            names.append(name)
            attrs.extend((name, a) for a in obj.attrs)

        f.visititems(visit)
    return names, attrs


ODD_VALUES = [
    np.float64(np.nan),
    np.int64(-1),
    np.int64(10**9),
    "x",
    "",
    b"\xff",
    np.zeros(3, np.float32),
    np.array(["a", "b"], dtype=object),
    np.array([[1, 2], [3, 4]]),
    np.complex64(1j),
]


@pytest.mark.parametrize("scale", SCALES)
def test_structurally_damaged_model_files_raise_one_error(tmp_path, good_files, scale):
    """Valid HDF5 with the wrong content: an object or attribute deleted or
    replaced (wrong dtype, wrong shape, NaN, empty)."""
    import h5py

    listing = {kind: _objects(good_files / kind) for kind in FILES}

    @seed(11 + scale)
    @settings(
        max_examples=examples(0.25, scale),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        kind=st.sampled_from(FILES),
        pick=st.integers(0, 10**6),
        how=st.sampled_from(["del_object", "del_attr", "attr", "dtype", "shape", "nan", "empty"]),
        odd=st.sampled_from(range(len(ODD_VALUES))),
    )
    def run(kind, pick, how, odd):
        names, attrs = listing[kind]
        target = tmp_path / kind
        shutil.copy(good_files / kind, target)
        with h5py.File(target, "a") as f:
            datasets = [n for n in names if isinstance(f[n], h5py.Dataset)]
            if how == "del_object":
                name = names[pick % len(names)]
                if name in f:
                    del f[name]
            elif how in ("del_attr", "attr"):
                obj, a = attrs[pick % len(attrs)]
                if how == "del_attr":
                    del f[obj].attrs[a]
                else:
                    f[obj].attrs[a] = ODD_VALUES[odd]
            else:
                name = datasets[pick % len(datasets)]
                old = f[name][()]
                del f[name]
                if (
                    how == "dtype"
                ):  # numbers as strings, or as complex numbers (strings: as numbers)
                    old = np.asarray(old)
                    if odd % 2 or old.dtype.kind not in "biuf":
                        as_text = old.dtype.kind in "biuf"
                        new = (
                            old.astype(str).astype(object)
                            if as_text
                            else np.ones(old.shape, np.complex64)
                        )
                        f.create_dataset(
                            name, data=new, dtype=h5py.string_dtype() if as_text else None
                        )
                    else:
                        f.create_dataset(name, data=old.astype(np.complex64))
                elif how == "shape":
                    f.create_dataset(name, data=np.ones((odd % 4 + 1,) * (1 + odd % 3), np.float32))
                elif how == "nan":
                    f.create_dataset(name, data=np.full(np.shape(old), np.nan, np.float32))
                else:
                    f.create_dataset(name, data=np.zeros((0,), np.float32))
        outcome = _outcome(kind, target)
        assert outcome in ("ok", "error"), (kind, how, outcome)

    run()
