"""FALCON's online learning module: condition estimation, the FALCON / FALCON-S
schedulers (change detection, meta-model selection, few-shot fine-tuning) and
the offline update loop that folds online experience back into the bank.

Modules: ``scheduler`` (FALCON, Algorithm 1's online module), ``falcon_s``
(FALCON-S's stream-aware state), ``estimator`` (the condition window),
``events`` (adaptation events, phases, the prior conditions),
``offline_update`` (the offline loop), ``bank_cache`` (banks read once per
process)."""

from falcon.online.bank_cache import cached_bank
from falcon.online.estimator import ConditionEstimator, WindowConfig
from falcon.online.events import AdaptationEvent
from falcon.online.falcon_s import FalconSScheduler
from falcon.online.offline_update import OfflineUpdater
from falcon.online.scheduler import FalconScheduler

__all__ = [
    "ConditionEstimator",
    "WindowConfig",
    "OfflineUpdater",
    "FalconScheduler",
    "FalconSScheduler",
    "AdaptationEvent",
    "cached_bank",
]
