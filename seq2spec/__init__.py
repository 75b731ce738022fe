"""seq2spec: batched speculative decoding for encoder-decoder models, identical to greedy search.

The public face: ``Seq2SeqSpeculator`` (decode with a big model and a draft), ``SpeculationOptions`` (how candidates
are proposed), ``SpeculationStats`` (what a call did), ``TranscriptionRequest`` (what ``transcribe`` is asked:
language, task, timestamps, long form, batch size), ``WhisperDecoding`` (temperature fallback, previous-text
conditioning and a prompt for Whisper's ``transcribe``), and the ``Proposer`` protocol with its ``Proposal`` and
``DecodingBatch`` values, for proposers of your own; ``retain_freed_memory`` (CPU speed on Linux: glibc keeps freed
memory for reuse, as the commands do). Names that pull in torch load on first use, so the command line starts
quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seq2spec.memory import retain_freed_memory
from seq2spec.options import SpeculationOptions, SpeculationStats

if TYPE_CHECKING:
    from seq2spec.decoding.proposal import DecodingBatch, Proposal, Proposer
    from seq2spec.speculator import Seq2SeqSpeculator
    from seq2spec.whisper.request import TranscriptionRequest, WhisperDecoding

__all__ = [
    "DecodingBatch",
    "Proposal",
    "Proposer",
    "Seq2SeqSpeculator",
    "SpeculationOptions",
    "SpeculationStats",
    "TranscriptionRequest",
    "WhisperDecoding",
    "retain_freed_memory",
]
__version__ = "0.1.0"

_LAZY = {
    "Seq2SeqSpeculator": "seq2spec.speculator",
    "Proposal": "seq2spec.decoding.proposal",
    "Proposer": "seq2spec.decoding.proposal",
    "DecodingBatch": "seq2spec.decoding.proposal",
    "TranscriptionRequest": "seq2spec.whisper.request",
    "WhisperDecoding": "seq2spec.whisper.request",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'seq2spec' has no attribute {name!r}")
