"""Drop-in versions of transformers' token-suppressing logits processors that build their vocabulary mask once.

transformers' ``SuppressTokensLogitsProcessor`` and ``SuppressTokensAtBeginLogitsProcessor`` rebuild a
vocabulary-sized mask with ``torch.isin`` on every call (the second one even when it changes nothing). Whisper's
generation config suppresses ~90 tokens, so on a CPU that rebuild costs about as much as a small model's decoder
step, and the speculative loop processes several positions per big forward. These subclasses compute the same
scores (``-inf`` at the same tokens, the scores' dtype kept) with a mask cached per device and vocabulary size.
"""

from __future__ import annotations

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.generation.logits_process import (
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
)


class _CachedMask:
    def __init__(self, tokens: torch.Tensor) -> None:
        self._tokens = tokens
        self._masks: dict[tuple[torch.device, int], torch.Tensor] = {}

    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        key = (scores.device, scores.shape[-1])
        mask = self._masks.get(key)
        if mask is None:
            vocabulary = torch.arange(scores.shape[-1], device=scores.device)
            mask = self._masks[key] = torch.isin(vocabulary, self._tokens.to(scores.device))
        return mask


class CachedSuppressTokens(SuppressTokensLogitsProcessor):
    """``SuppressTokensLogitsProcessor`` with its mask built once."""

    def __init__(self, original: SuppressTokensLogitsProcessor) -> None:
        self.__dict__.update(original.__dict__)
        self._mask = _CachedMask(self.suppress_tokens)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill(self._mask(scores), -float("inf"))


class CachedSuppressTokensAtBegin(SuppressTokensAtBeginLogitsProcessor):
    """``SuppressTokensAtBeginLogitsProcessor`` with its mask built once and used only at the begin index."""

    def __init__(self, original: SuppressTokensAtBeginLogitsProcessor) -> None:
        self.__dict__.update(original.__dict__)
        self._mask = _CachedMask(self.begin_suppress_tokens)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[-1] != self.begin_index:
            return scores
        return scores.masked_fill(self._mask(scores), -float("inf"))


_REPLACEMENTS: dict[type, type] = {
    SuppressTokensLogitsProcessor: CachedSuppressTokens,
    SuppressTokensAtBeginLogitsProcessor: CachedSuppressTokensAtBegin,
}


def with_cached_masks(processors: LogitsProcessorList) -> LogitsProcessorList:
    """The same processors in the same order, the token-suppressing ones replaced by their cached versions."""
    replaced: list[LogitsProcessor] = []
    for processor in processors:
        replacement = _REPLACEMENTS.get(type(processor))
        replaced.append(replacement(processor) if replacement is not None else processor)
    return LogitsProcessorList(replaced)
