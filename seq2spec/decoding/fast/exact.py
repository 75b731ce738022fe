"""The big model's decoder forward without transformers' per-call work, where a probe found it bit-exact: the T5/MT5
mirror (``exact_t5.py``) or the Whisper mirror (``exact_whisper.py``), chosen by the model's type."""

from __future__ import annotations

from collections.abc import Callable

from transformers import PreTrainedModel

from seq2spec.decoding.fast.checked import StateCache, model_state
from seq2spec.decoding.fast.exact_t5 import EXACT_FAMILIES, ExactT5Forward
from seq2spec.decoding.fast.exact_whisper import ExactWhisperForward
from seq2spec.decoding.fast.step import DecoderStep


def exact_builder(model: PreTrainedModel) -> Callable[[PreTrainedModel], DecoderStep | None] | None:
    """The checked mirror's constructor for ``model``'s family, or None where there is no mirror."""
    if model.config.model_type in EXACT_FAMILIES:
        return ExactT5Forward.checked
    if model.config.model_type == "whisper":
        return ExactWhisperForward.checked
    return None


class ExactForwards:
    """The big model's exact forward (a T5/MT5 or a Whisper), rebuilt and re-checked whenever the model's weights,
    device, dtype, mode or attention implementation change."""

    def __init__(self) -> None:
        self._cache: StateCache[DecoderStep | None] = StateCache()

    def for_model(self, model: PreTrainedModel) -> DecoderStep | None:
        build = exact_builder(model)
        if build is None:
            return None
        return self._cache.get((id(model), model_state(model)), lambda: build(model))
