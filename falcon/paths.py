"""Where FALCON finds its configs and where it keeps caches and results.

Three places, each with one setting (``docs/guide/install.md``):

* **configs** (read): the Hydra config tree. An installed wheel ships
  ``configs/`` of the repository as package data, ``falcon/_configs/``
  (``setup.py``'s ``SHIPPED``); an editable install reads the checkout's
  ``configs/``. :func:`config_dir` finds whichever is there.
* **cache** (shared by every working folder): built meta-model banks, keyed
  by their build fingerprint, so that a bank is built once per machine and
  user whatever folder a job starts in. ``$FALCON_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/falcon``, else ``~/.cache/falcon``: :func:`cache_dir`.
* **outputs**: the ``results/`` folder of the jobs' outputs and the MLflow
  store ``mlflow.db`` (with ``mlartifacts/``). ``$FALCON_HOME``, else the
  working directory: :func:`output_root`. ``output=`` of a job and
  ``tracking.uri`` / ``$MLFLOW_TRACKING_URI`` still choose one run's folder
  and the tracking store explicitly.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from omegaconf import OmegaConf

from envs.errors import ConfigError

#: the environment variable of :func:`output_root`
HOME_ENV = "FALCON_HOME"
#: the environment variable of :func:`cache_dir`
CACHE_ENV = "FALCON_CACHE_DIR"
#: the folder of the package that holds the configs in an installed wheel
PACKAGED_CONFIGS = "_configs"
#: the folder of job outputs under :func:`output_root`
RESULTS = "results"


def _packaged_configs() -> Path | None:
    """``falcon/_configs/`` of an installed wheel, or None (an editable checkout)."""
    found = resources.files("falcon") / PACKAGED_CONFIGS
    return Path(str(found)) if isinstance(found, Path) and found.is_dir() else None


def checkout_configs() -> Path:
    """``configs/`` of the source tree the package was imported from (may not exist)."""
    return Path(__file__).resolve().parent.parent / "configs"


def config_dir() -> Path:
    """The Hydra config folder: the wheel's package data, else the checkout's ``configs/``.

    Raises a one-line :class:`ConfigError` when neither is there (a broken install)."""
    packaged = _packaged_configs()
    if packaged is not None:
        return packaged
    checkout = checkout_configs()
    if checkout.is_dir():
        return checkout
    where = resources.files("falcon") / PACKAGED_CONFIGS
    raise ConfigError(
        f"configs: found neither {where} (an installed wheel) nor {checkout} (a checkout); "
        "reinstall falcon-mpsched"
    )


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """The user's FALCON cache folder (not created here): ``$FALCON_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/falcon``, else ``~/.cache/falcon``."""
    own = _env_path(CACHE_ENV)
    if own is not None:
        return own
    xdg = _env_path("XDG_CACHE_HOME")
    return (xdg if xdg is not None and xdg.is_absolute() else Path.home() / ".cache") / "falcon"


def bank_cache_path(name: str, fingerprint: str) -> Path:
    """Where the bank of preset ``name`` built with ``fingerprint`` is kept:
    ``<cache_dir>/banks/<name>-<fingerprint>.h5`` (the fingerprint of
    :meth:`metalearning.build.BankBuildSpec.fingerprint`: the settings that
    determine the weights, so one file per distinct bank)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(name)) or "bank"
    return cache_dir() / "banks" / f"{safe}-{fingerprint}.h5"


def output_root() -> Path:
    """The folder that holds ``results/`` and the MLflow store: ``$FALCON_HOME``
    if set, else the working directory (returned as the relative ``.``)."""
    return _env_path(HOME_ENV) or Path()


def results_dir() -> Path:
    """``<output_root>/results``: the default parent of every job's output folder."""
    return output_root() / RESULTS


#: the OmegaConf resolver of :func:`results_dir` (``${falcon_results:}``: the
#: multirun sweep folder of configs/train.yaml and configs/evaluate.yaml)
RESULTS_RESOLVER = "falcon_results"
OmegaConf.register_new_resolver(RESULTS_RESOLVER, lambda: str(results_dir()), replace=True)


__all__ = [
    "CACHE_ENV",
    "HOME_ENV",
    "bank_cache_path",
    "cache_dir",
    "checkout_configs",
    "config_dir",
    "output_root",
    "results_dir",
]
