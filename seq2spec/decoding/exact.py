"""The big model's decoder forward without transformers' per-call work, where a probe found it bit-exact: the T5/MT5
mirror (``exact_t5.py``) or the Whisper mirror (``exact_whisper.py``), chosen by the model's type."""

from __future__ import annotations

from typing import Protocol

import torch
from transformers import EncoderDecoderCache, PreTrainedModel

from seq2spec.decoding.exact_t5 import EXACT_FAMILIES, ExactT5Forward, model_state
from seq2spec.decoding.exact_whisper import ExactWhisperForward


class ExactForward(Protocol):
    """A big model's decoder forward computed outside transformers: float32 logits for ``tokens`` appended to the
    cache, where row ``r``'s first ``pad[r]`` cache slots are padding (None: no row has any)."""

    def __call__(
        self,
        tokens: torch.Tensor,
        cache: EncoderDecoderCache,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        pad: torch.Tensor | None,
    ) -> torch.Tensor: ...


class ExactForwards:
    """The big model's exact forward (a T5/MT5 or a Whisper), rebuilt and re-checked whenever the model's weights,
    device, dtype, mode or attention implementation change."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._exact: ExactForward | None = None

    def for_model(self, model: PreTrainedModel) -> ExactForward | None:
        if model.config.model_type in EXACT_FAMILIES:
            build = ExactT5Forward.checked
        elif model.config.model_type == "whisper":
            build = ExactWhisperForward.checked
        else:
            return None
        key = (id(model), model_state(model))
        if key != self._key:
            self._key, self._exact = key, build(model)
        return self._exact
