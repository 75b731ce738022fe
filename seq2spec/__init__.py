"""seq2spec: batched speculative greedy decoding for encoder-decoder models, identical to greedy search."""

from seq2spec.options import SpeculationOptions, SpeculationStats
from seq2spec.speculator import Seq2SeqSpeculator

__all__ = ["Seq2SeqSpeculator", "SpeculationOptions", "SpeculationStats"]
__version__ = "0.1.0"
