"""Write and read time of a 729-cell meta-model bank with 64x3 networks.

    python benchmarks/bank_io.py [--path FILE] [--repeats 3]

Prints the median wall time and this process's CPU time of ``MetaModelBank.write``
and ``MetaModelBank.read`` (on a busy machine the CPU time is what an idle
machine's wall time would be). Nearly all of it is h5py's cost per HDF5
object (a few attributes, datasets and groups per cell), not the data.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from baselines.dqn.network import QNetSpec
from metalearning import ConditionGrid, MetaModelBank


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=None, help="bank file to write (default: a temporary file)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.path or os.path.join(tmp, "bank.h5")
        grid, spec = ConditionGrid(), QNetSpec(8, 2)
        bank = MetaModelBank.initial(
            grid, spec, seed=0, meta={"meta_iterations": [100] * grid.n_cells, "seed": 0}
        )
        res: dict[str, list[float]] = {"write": [], "read": [], "write_cpu": [], "read_cpu": []}
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            bank.write(path)
            t1, c1 = time.perf_counter(), time.process_time()
            back = MetaModelBank.read(path, grid=grid, spec=spec)
            t2, c2 = time.perf_counter(), time.process_time()
            res["write"].append(t1 - t0)
            res["read"].append(t2 - t1)
            res["write_cpu"].append(c1 - c0)
            res["read_cpu"].append(c2 - c1)
        assert np.array_equal(back.params, bank.params)
        med = {k: statistics.median(v) for k, v in res.items()}
        print(
            f"{grid.n_cells} cells x {bank.params.shape[1]} parameters, {os.path.getsize(path) / 1e6:.1f} MB: "
            f"write {med['write']:.2f} s wall / {med['write_cpu']:.2f} s CPU, "
            f"read {med['read']:.2f} s wall / {med['read_cpu']:.2f} s CPU "
            f"(load average {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
