"""FALCON's online learning module: condition estimation, the FALCON / FALCON-S
schedulers (change detection, meta-model selection, few-shot fine-tuning) and
the offline update loop that folds online experience back into the bank."""

from falcon.online.estimator import ConditionEstimator, WindowConfig
from falcon.online.offline_update import OfflineUpdater
from falcon.online.scheduler import AdaptationEvent, FalconScheduler, FalconSScheduler, cached_bank

__all__ = ["ConditionEstimator", "WindowConfig", "OfflineUpdater", "FalconScheduler",
           "FalconSScheduler", "AdaptationEvent", "cached_bank"]
