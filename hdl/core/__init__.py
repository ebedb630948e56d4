"""The V-Rex core: the LXE and the DRE of one core with the retrieval-path sequencer (docs/formats.md §Core)."""

from .geometry import CORE_CAUSES, CoreGeometry, command_layout, response_layout
from .sequencer import PHASES, SEQUENCER_COUNTERS, Sequencer
from .top import Core

__all__ = ["Core", "CoreGeometry", "Sequencer", "CORE_CAUSES", "PHASES", "SEQUENCER_COUNTERS", "command_layout",
           "response_layout"]
