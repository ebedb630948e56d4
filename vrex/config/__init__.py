"""One source of parameters: frozen, validated dataclasses loaded from YAML.

Every section is a frozen dataclass whose defaults are the paper's edge system (V-Rex8, Llama-3-8B, ReSV
defaults). A YAML file overrides any subset of keys; unknown keys, wrong types, out-of-range values and
inconsistent combinations fail at load time with one sentence naming the key, the value and the rule (and the
file and line when the value came from a file).

Each field carries metadata: ``doc`` (shown by ``vrex config show --doc``), ``min`` / ``max`` bounds and
``unit``. Cross-field rules live in each section's ``_check`` method and in :meth:`Config._check`.

The config hash (:meth:`Config.hash`) identifies the resolved parameters (not the ``name``) and keys every
cache and generated-artefact folder.
"""

from ..errors import ConfigError
from .dre import DREConfig, HCUConfig, KVMUConfig, WTUConfig
from .fields import param, section
from .loading import builtin_config_names, field_docs, load_config, read_yaml
from .lxe import CoreConfig, LXEConfig
from .memory import CoreMap, KVMUMap
from .model import ModelConfig
from .perf import (EnergyConfig, GPUConfig, InfiniGenConfig, InfiniGenPConfig, PerfConfig, ReKVConfig,
                   VRexPerfConfig)
from .resv import ReSVConfig
from .system import DRAMConfig, LinkConfig, StorageConfig, SystemConfig
from .technology import ECP5_DEVICES, ECP5_PACKAGES, FPGAConfig, IPConfig, TechnologyConfig
from .top import Config

__all__ = [
    "Config", "ModelConfig", "ReSVConfig", "HCUConfig", "WTUConfig", "KVMUConfig", "DREConfig", "LXEConfig",
    "DRAMConfig", "LinkConfig", "StorageConfig", "SystemConfig", "TechnologyConfig", "IPConfig", "FPGAConfig",
    "PerfConfig", "KVMUMap", "CoreConfig", "CoreMap", "load_config", "builtin_config_names", "ConfigError",
    "read_yaml",
]
