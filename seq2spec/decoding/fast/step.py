"""The one signature of a decoder forward computed outside the model's own: a draft's lean step or a big model's
exact mirror, run by ``DecoderRunner`` in place of ``model(...)``."""

from __future__ import annotations

from typing import Protocol

import torch
from transformers import EncoderDecoderCache


class DecoderStep(Protocol):
    """Float32 logits ``[rows, len, vocab]`` for ``tokens`` appended to the cache, where row ``r``'s first ``pad[r]``
    cache slots are padding (``pad`` None: no row has any)."""

    def __call__(
        self,
        tokens: torch.Tensor,
        cache: EncoderDecoderCache,
        encoder_hidden_states: torch.Tensor,
        encoder_attention_mask: torch.Tensor | None,
        pad: torch.Tensor | None,
    ) -> torch.Tensor: ...
