"""Whisper's own ``generate`` with the speculative loop as its inner decoding method.

Whisper's ``generate`` prepares everything (decoder prompt with language and task tokens, suppress and timestamp
logits processors, 30-second windows for long-form audio, seeking by timestamps) and calls transformers'
``GenerationMixin.generate`` once per batch of windows. It passes ``custom_generate`` through to each of those
calls, where the ``SpeculativeSearch`` runs instead of greedy search with exactly the prompt, generation config and
logits processors Whisper built. Whisper's code does everything else, so the result is what ``big.generate``
returns.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import PreTrainedModel

from seq2spec.decoding.search import SpeculativeSearch

# generate() arguments Whisper would hand to a decoding method that the loop does not honour
_REFUSED = ("stopping_criteria", "prefix_allowed_tokens_fn", "assistant_model", "streamer", "custom_generate")


def check_features(features: Any) -> torch.Tensor:
    if not isinstance(features, torch.Tensor) or features.dim() != 3 or not features.is_floating_point():
        shape = tuple(features.shape) if isinstance(features, torch.Tensor) else type(features).__name__
        raise ValueError(f"Whisper needs input_features as a float [batch, mel bins, frames] tensor, got {shape}")
    return features


def temperatures(arguments: dict[str, Any]) -> tuple[float, ...]:
    """The temperatures Whisper's generate will decode at (its fallback sequence, or the single one)."""
    temperature = arguments.get("temperature")
    if temperature is None:
        return (1.0,) if arguments.get("do_sample") else (0.0,)
    values = tuple(temperature) if isinstance(temperature, (list, tuple)) else (temperature,)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"temperature must be a number >= 0 or a sequence of them, got {temperature!r}")
    return tuple(float(value) for value in values)


def samples(arguments: dict[str, Any]) -> bool:
    """Whether any pass of this call samples (a temperature above 0, or do_sample)."""
    return bool(arguments.get("do_sample")) or any(value > 0 for value in temperatures(arguments))


def check_arguments(arguments: dict[str, Any]) -> None:
    """Refuse Whisper settings the loop cannot reproduce, naming them and what to do instead."""
    temperatures(arguments)
    if arguments.get("num_beams", 1) not in (None, 1):
        raise ValueError(
            "Seq2SeqSpeculator decodes greedily or by sampling (temperature fallback included), not by beam "
            "search; call the model's own generate for num_beams > 1"
        )
    if arguments.get("output_hidden_states"):
        raise NotImplementedError("Seq2SeqSpeculator does not return hidden states (output_hidden_states)")
    for name in _REFUSED:
        if arguments.get(name):  # None or an empty list: nothing to honour
            raise NotImplementedError(f"Seq2SeqSpeculator does not support Whisper generate with {name}")


def generate_whisper(
    big: PreTrainedModel,
    features: torch.Tensor,
    search: SpeculativeSearch,
    *,
    attention_mask: torch.Tensor | None = None,
    max_new_tokens: int | None = None,
    **arguments: Any,
) -> Any:
    """``big.generate(features, **arguments)`` with ``search`` as the decoding method of every window batch (and of
    every pass of its temperature fallback)."""
    check_arguments(arguments)
    features = check_features(features).to(big.device, big.dtype)
    if attention_mask is not None:
        arguments["attention_mask"] = attention_mask.to(big.device)
    if max_new_tokens is not None:
        arguments["max_new_tokens"] = max_new_tokens
    # Whisper's generate switches the model to eager attention for token timestamps, for good; put back the user's
    attention = big.config._attn_implementation
    try:
        with _whisper_internal_warning_silenced():
            return big.generate(features, custom_generate=search, **arguments)
    finally:
        big.config._attn_implementation = attention


class _WhisperInternalWarning(logging.Filter):
    """Warnings transformers gives on every first call that say nothing about Whisper: its own generate passes a
    generation config together with suppress-token arguments to the generate it calls, and a batch of 30-s windows
    (which need no attention mask: every window is 3,000 frames) gets the text models' warning about a batch without
    one ("you may observe unexpected behavior")."""

    IGNORED = (
        "Passing `generation_config` together with generation-related",
        "The attention mask is not set with a batched input",
    )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in self.IGNORED)


@contextmanager
def _whisper_internal_warning_silenced() -> Iterator[None]:
    logger = logging.getLogger("transformers.generation.utils")
    silencer = _WhisperInternalWarning()
    logger.addFilter(silencer)
    try:
        yield
    finally:
        logger.removeFilter(silencer)
