"""What differs between the encoder-decoder families seq2spec decodes.

The speculative loop keeps each row's decoder self-attention cache left-padded (see ``cache.py``), so a row's
tokens sit at cache slots that are shifted by its padding. Families with relative positions (T5, MT5) see the
same distances either way. Families with learned absolute positions (BART, mBART) must be told each row's own
positions; this module does that with a forward hook on the decoder's position embedding, for the duration of
one decoder call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel

RELATIVE_POSITION_FAMILIES = frozenset({"t5", "mt5"})
LEARNED_POSITION_FAMILIES = frozenset({"bart", "mbart", "whisper"})
SUPPORTED_FAMILIES = RELATIVE_POSITION_FAMILIES | LEARNED_POSITION_FAMILIES


@dataclass(frozen=True)
class Family:
    """Family-specific facts about one model."""

    model_type: str
    learned_positions: bool
    max_source_length: int | None
    max_target_length: int | None
    encoder_input_name: str = "input_ids"  # Whisper's encoder reads "input_features"
    # a decoder-only assistant (WhisperForCausalLM, as distil-whisper publishes them): it reads the big model's
    # encoder output and has no encoder of its own
    decoder_only: bool = False


def family_of(model: PreTrainedModel, role: str = "model") -> Family:
    """Check that ``model`` is an encoder-decoder seq2spec supports, and describe it."""
    config = getattr(model, "config", None)
    if config is not None and type(model).__name__ == "WhisperForCausalLM":
        return Family("whisper", True, None, config.max_target_positions, "input_features", decoder_only=True)
    if config is None or not hasattr(model, "get_encoder"):
        raise TypeError(f"{role} must be a transformers encoder-decoder model, got {type(model).__name__}")
    if not getattr(config, "is_encoder_decoder", False):
        raise TypeError(
            f"{role} ({type(model).__name__}, model_type={config.model_type!r}) is not an encoder-decoder model; "
            "Seq2SeqSpeculator needs an encoder-decoder such as T5, MT5, BART or Whisper"
        )
    model_type = config.model_type
    if model_type not in SUPPORTED_FAMILIES:
        raise NotImplementedError(
            f"{role} has model_type={model_type!r}; supported families are {sorted(SUPPORTED_FAMILIES)}"
        )
    if model_type == "whisper":
        return Family(model_type, True, None, config.max_target_positions, "input_features")
    learned = model_type in LEARNED_POSITION_FAMILIES
    limit = getattr(config, "max_position_embeddings", None) if learned else None
    return Family(model_type, learned, limit, limit)


@contextmanager
def row_positions(model: PreTrainedModel, family: Family, pad: torch.Tensor | None) -> Iterator[None]:
    """Within the block, decoder position ``p`` of row ``r`` is embedded as ``p - pad[r]`` (None: no row is padded)."""
    if not family.learned_positions or pad is None:
        yield
        return
    embedding: nn.Embedding = model.get_decoder().embed_positions
    offset = getattr(embedding, "offset", 0)

    def shifted(module: nn.Embedding, args: tuple, kwargs: dict, output: torch.Tensor) -> torch.Tensor:
        positions = kwargs.get("position_ids")
        if positions is None:  # called positionally: (input_ids, past_key_values_length)
            past = args[1] if len(args) > 1 else kwargs.get("past_key_values_length", 0)
            positions = torch.arange(past, past + args[0].shape[1], device=pad.device)
        if positions.dim() == 2:  # [rows, length] (Whisper): the same cache positions on every row
            positions = positions[0]
        # a padded slot is embedded at position 0, as generate does for a left-padded decoder prompt
        per_row = (positions.reshape(1, -1) - pad.to(positions.device)[:, None]).clamp(min=0)
        return nn.functional.embedding(per_row + offset, module.weight)

    handle = embedding.register_forward_hook(shifted, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()
