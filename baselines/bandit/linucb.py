"""Disjoint LinUCB (Li et al., WWW 2010) and its on-disk state format.

Per arm a: A_a (d x d, initialised to ``ridge`` x I), b_a (d, initialised
to 0), theta_a = A_a^-1 b_a. For a context x (one shared vector, or one
vector per arm):

* UCB score   p_a = theta_a . x + alpha sqrt(x^T A_a^-1 x)
* greedy score g_a = theta_a . x
* update after reward r on arm a: A_a += x x^T, b_a += r x.

A_a^-1 is kept up to date with the Sherman-Morrison identity
(A + x x^T)^-1 = A^-1 - (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x) (A is
symmetric), so an update costs O(d^2) instead of an O(d^3) inverse;
:meth:`LinUCB.inverse_error` compares it with ``numpy.linalg.inv``. A, b
and A^-1 are float64; theta is cached per arm and recomputed on update.

State files (:func:`save_state` / :func:`load_state`) are NumPy ``.npz``
archives (no pickles) with the keys

==============  ===============================================================
``format``      the string ``"falcon-linucb"``
``version``     format version, currently 1 (int)
``kind``        which scheduler wrote it, e.g. ``"peekaboo"``
``arms``        arm names (unicode array), e.g. ``["F", "S"]``
``features``    feature names (unicode array, length d)
``A``           (n_arms, d, d) float64
``b``           (n_arms, d) float64
``A_inv``       (n_arms, d, d) float64, the incrementally kept inverse
``n_updates``   (n_arms,) int64, updates applied per arm
==============  ===============================================================

Writes are atomic (a temporary file in the same folder, fsync, then
``os.replace``), so a reader never sees half a file. :func:`load_state`
checks every key, shape, dtype and value (finite, A symmetric) and raises
:class:`StateFileError` with a one-line reason; the schedulers turn that into
one logged warning and a fresh start.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np

STATE_FORMAT = "falcon-linucb"
STATE_VERSION = 1


class StateFileError(ValueError):
    """A LinUCB state file that cannot be used (missing, corrupt, mismatching)."""


class LinUCB:
    """Disjoint linear UCB over ``n_arms`` arms with ``dim``-dimensional contexts."""

    def __init__(self, n_arms: int, dim: int, alpha: float = 0.75, ridge: float = 1.0) -> None:
        if n_arms < 1 or dim < 1:
            raise ValueError(f"LinUCB needs n_arms >= 1 and dim >= 1, got {n_arms}, {dim}")
        if not (alpha >= 0.0 and math.isfinite(alpha)):
            raise ValueError(f"LinUCB alpha must be finite and >= 0, got {alpha}")
        if not (ridge > 0.0 and math.isfinite(ridge)):
            raise ValueError(f"LinUCB ridge must be finite and > 0, got {ridge}")
        self.n_arms = int(n_arms)
        self.dim = int(dim)
        self.alpha = float(alpha)
        self.ridge = float(ridge)
        self.reset()

    # ------------------------------------------------------------ state
    def reset(self, arm: int | None = None) -> None:
        """Forget everything learned (one arm, or all arms)."""
        d = self.dim
        if arm is None:
            self.A = np.tile(np.eye(d) * self.ridge, (self.n_arms, 1, 1))
            self.b = np.zeros((self.n_arms, d))
            self.A_inv = np.tile(np.eye(d) / self.ridge, (self.n_arms, 1, 1))
            self.theta = np.zeros((self.n_arms, d))
            self.n_updates = np.zeros(self.n_arms, dtype=np.int64)
        else:
            self.A[arm] = np.eye(d) * self.ridge
            self.b[arm] = 0.0
            self.A_inv[arm] = np.eye(d) / self.ridge
            self.theta[arm] = 0.0
            self.n_updates[arm] = 0

    def set_state(self, A, b, A_inv=None, n_updates=None) -> None:
        """Replace A and b (and A^-1, recomputed exactly when not given)."""
        A = np.array(A, dtype=np.float64)
        b = np.array(b, dtype=np.float64)
        shape = (self.n_arms, self.dim)
        if A.shape != shape + (self.dim,) or b.shape != shape:
            raise ValueError(
                f"LinUCB state shapes {A.shape}, {b.shape} do not match "
                f"{self.n_arms} arms x {self.dim} features"
            )
        self.A = A
        self.b = b
        if A_inv is None:
            self.A_inv = np.linalg.inv(A)
        else:
            self.A_inv = np.array(A_inv, dtype=np.float64)
        self._refresh_theta()
        self.n_updates = (
            np.zeros(self.n_arms, dtype=np.int64)
            if n_updates is None
            else np.array(n_updates, dtype=np.int64)
        )

    def recompute_inverse(self) -> None:
        """Replace the incremental A^-1 by numpy's inverse of A."""
        self.A_inv = np.linalg.inv(self.A)
        self._refresh_theta()

    def _refresh_theta(self) -> None:
        # the same product as in update(), so that a loaded model scores bit for bit alike
        self.theta = np.empty_like(self.b)
        for a in range(self.n_arms):
            np.matmul(self.A_inv[a], self.b[a], out=self.theta[a])

    def inverse_error(self) -> float:
        """Largest absolute difference between the kept A^-1 and inv(A)."""
        return float(np.max(np.abs(self.A_inv - np.linalg.inv(self.A))))

    # ------------------------------------------------------------ scores
    def greedy(self, arm: int, x: np.ndarray) -> float:
        """g_a = theta_a . x"""
        return float(self.theta[arm] @ x)

    def bonus(self, arm: int, x: np.ndarray) -> float:
        """alpha sqrt(x^T A_a^-1 x)"""
        q = float(x @ self.A_inv[arm] @ x)
        return self.alpha * math.sqrt(q if q > 0.0 else 0.0)

    def ucb(self, arm: int, x: np.ndarray) -> float:
        """p_a = theta_a . x + alpha sqrt(x^T A_a^-1 x)"""
        return self.greedy(arm, x) + self.bonus(arm, x)

    def scores(self, x: np.ndarray, greedy: bool = False) -> np.ndarray:
        """Scores of every arm: ``x`` is one shared context (d,) or one per
        arm (n_arms, d); UCB scores, or greedy ones when ``greedy``."""
        X = np.asarray(x, dtype=np.float64)
        if X.ndim == 1:
            X = np.broadcast_to(X, (self.n_arms, self.dim))
        g = (self.theta * X).sum(axis=1)
        if greedy:
            return g
        q = ((self.A_inv @ X[:, :, None])[:, :, 0] * X).sum(axis=1)
        return g + self.alpha * np.sqrt(np.maximum(q, 0.0))

    # ------------------------------------------------------------ learning
    def update(self, arm: int, x: np.ndarray, reward: float) -> None:
        """A_a += x x^T, b_a += r x; A_a^-1 by Sherman-Morrison."""
        x = np.asarray(x, dtype=np.float64)
        self.A[arm] += x[:, None] * x
        b = self.b[arm]
        b += reward * x
        inv = self.A_inv[arm]
        u = inv @ x
        inv -= (u[:, None] * u) * (1.0 / (1.0 + float(x @ u)))
        np.matmul(inv, b, out=self.theta[arm])
        self.n_updates[arm] += 1


# ---------------------------------------------------------------- state files


def save_state(path, model: LinUCB, *, kind: str, arms, features) -> Path:
    """Write ``model``'s A, b, A^-1 to ``path`` atomically (format: module docstring)."""
    path = Path(path)
    arms = [str(a) for a in arms]
    features = [str(f) for f in features]
    if len(arms) != model.n_arms or len(features) != model.dim:
        raise ValueError(
            f"save_state: {len(arms)} arm names / {len(features)} feature names "
            f"for a model of {model.n_arms} arms x {model.dim} features"
        )
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(
                fh,
                format=np.array(STATE_FORMAT),
                version=np.array(STATE_VERSION),
                kind=np.array(str(kind)),
                arms=np.array(arms),
                features=np.array(features),
                A=model.A,
                b=model.b,
                A_inv=model.A_inv,
                n_updates=model.n_updates,
            )
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def load_state(path, model: LinUCB, *, kind: str, arms, features) -> None:
    """Load a state file into ``model``; raise :class:`StateFileError` (one
    line, naming the file) if it is missing, unreadable or does not match
    ``kind``, ``arms``, ``features`` and the model's dimensions. ``model`` is
    left untouched on error."""
    path = Path(path)

    def bad(reason: str) -> StateFileError:
        return StateFileError(f"{path}: {reason}")

    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise bad("no such file") from None
    except Exception as exc:  # any unreadable content is "not a state file", never a crash
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise bad(f"not a readable .npz state file ({msg})") from None
    if not hasattr(z, "files"):
        raise bad("not a readable .npz state file (a single .npy array)")
    try:
        with z:
            data = {k: z[k] for k in z.files}
    except Exception as exc:
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise bad(f"not a readable .npz state file ({msg})") from None
    need = ("format", "version", "kind", "arms", "features", "A", "b", "A_inv", "n_updates")
    missing = [k for k in need if k not in data]
    if missing:
        raise bad(f"missing key(s) {', '.join(missing)}")
    if str(data["format"]) != STATE_FORMAT:
        raise bad(f"format {str(data['format'])!r}, expected {STATE_FORMAT!r}")
    try:
        version = int(data["version"])
    except (TypeError, ValueError):
        raise bad("version is not an integer") from None
    if version != STATE_VERSION:
        raise bad(f"format version {version}, this code reads version {STATE_VERSION}")
    if str(data["kind"]) != kind:
        raise bad(f"written by {str(data['kind'])!r}, expected {kind!r}")
    got_arms = [str(a) for a in np.atleast_1d(data["arms"])]
    if got_arms != [str(a) for a in arms]:
        raise bad(f"arms {got_arms}, expected {list(arms)}")
    got_feat = [str(f) for f in np.atleast_1d(data["features"])]
    if got_feat != [str(f) for f in features]:
        raise bad(f"features {got_feat}, expected {list(features)}")
    n, d = model.n_arms, model.dim
    for key, shape in (("A", (n, d, d)), ("b", (n, d)), ("A_inv", (n, d, d)), ("n_updates", (n,))):
        arr = data[key]
        if arr.shape != shape:
            raise bad(f"{key} has shape {arr.shape}, expected {shape}")
        if not np.issubdtype(arr.dtype, np.number):
            raise bad(f"{key} is not numeric ({arr.dtype})")
        if not np.all(np.isfinite(arr)):
            raise bad(f"{key} has non-finite values")
    A = data["A"].astype(np.float64)
    if not np.array_equal(A, np.swapaxes(A, 1, 2)):
        raise bad("A is not symmetric")
    try:
        exact = np.linalg.inv(A)
    except np.linalg.LinAlgError:
        raise bad("A is singular") from None
    A_inv = data["A_inv"].astype(np.float64)
    scale = max(1.0, float(np.max(np.abs(exact))))
    if float(np.max(np.abs(A_inv - exact))) > 1e-6 * scale:
        raise bad("A_inv does not match the inverse of A")
    model.set_state(A, data["b"], A_inv, data["n_updates"])
