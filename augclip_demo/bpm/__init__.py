"""BPM (Balancing Preservation and Modification): a region-aware metric for instruction-based edits.

* :mod:`.parsing` - :class:`ParsedInstruction` (o1, o2, size state, position state, reference),
  :func:`parse_instruction` with the offline :mod:`.rules` parser or the :mod:`.llm_parser`
* :mod:`.judges` - the Region-Aware Judge (f_size, f_position) and the Semantic-Aware Judge
  (S_modify, S_preserve), BPM = alpha S_semantic + (1 - alpha) S_region; numpy only
* :mod:`.localize` - Sec. 3.2's add / remove region rules and the not-found fallbacks
* :mod:`.score` - :func:`bpm_score`: parse -> detect (GroundingDINO) -> segment (SAM) -> judge
"""

from ..errors import InstructionParseError
from ..instructions import POSITION_STATES, SIZE_STATES, ParsedInstruction, parse_instruction
from .judges import BPMComponents, Judgement, RegionThresholds
from .localize import Region
from .score import BPMOptions, BPMResult, bpm_score, bpm_score_many

__all__ = [
    "BPMComponents",
    "BPMOptions",
    "BPMResult",
    "InstructionParseError",
    "Judgement",
    "POSITION_STATES",
    "ParsedInstruction",
    "Region",
    "RegionThresholds",
    "SIZE_STATES",
    "bpm_score",
    "bpm_score_many",
    "parse_instruction",
]
