"""BPM (Balancing Preservation and Modification): a region-aware metric for instruction-based edits.

* :mod:`augclip_demo.instructions` - :class:`ParsedInstruction` (o1, o2, size state, position state,
  reference), :func:`parse_instruction` (offline rules or an LLM); re-exported here
* :mod:`.components` - the region rules (f_size, f_position; the paper's Region-Aware Judge) and the
  semantic measures (S_modify, S_preserve; its Semantic-Aware Judge), BPM = alpha S_semantic +
  (1 - alpha) S_region; numpy only
* :mod:`.localize` - Sec. 3.2's add / remove region rules and the not-found fallbacks
* :mod:`.bpm_score` - :func:`bpm_score`: parse -> detect (GroundingDINO) -> segment (SAM) -> judge, or
  parse -> given masks (:class:`ObjectMasks`, an edit mask) -> judge with ``BPMOptions(regions="masks")``
"""

from ..errors import InstructionParseError
from ..instructions import POSITION_STATES, SIZE_STATES, ParsedInstruction, parse_instruction
from .bpm_score import BPMOptions, BPMResult, bpm_score, bpm_score_many
from .components import BPMComponents, RegionCheck, RegionThresholds
from .localize import ObjectMasks, Region

__all__ = [
    "BPMComponents",
    "BPMOptions",
    "BPMResult",
    "InstructionParseError",
    "ObjectMasks",
    "RegionCheck",
    "POSITION_STATES",
    "ParsedInstruction",
    "Region",
    "RegionThresholds",
    "SIZE_STATES",
    "bpm_score",
    "bpm_score_many",
    "parse_instruction",
]
