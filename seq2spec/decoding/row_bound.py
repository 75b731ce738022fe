"""Logits processors that keep state per row of the batch ``generate`` laid out, applied to any subset of its rows.

Three of transformers' processors index their state by a row's place in the batch: the source n-grams of
``encoder_no_repeat_ngram_size`` (Blenderbot's generation config sets it), the source ids of
``encoder_repetition_penalty``, and the row number handed to ``prefix_allowed_tokens_fn``. The speculative loop
processes rows grouped by prefix length, and finished rows leave the batch, so the rows a call sees are a subset of
generate's. ``RowBound.for_rows(rows)`` is the same processor with its state taken for those rows only: each row's
scores are exactly what the original computes for that row.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from transformers import LogitsProcessor, LogitsProcessorList
from transformers.generation.logits_process import (
    EncoderNoRepeatNGramLogitsProcessor,
    EncoderRepetitionPenaltyLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
)

ROW_BOUND = (
    EncoderNoRepeatNGramLogitsProcessor,
    EncoderRepetitionPenaltyLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
)


class RowBound(LogitsProcessor):
    """Wraps a processor whose state is indexed by generate's batch rows; call ``for_rows`` before use."""

    def __init__(self, original: LogitsProcessor) -> None:
        if not isinstance(original, ROW_BOUND):
            raise TypeError(f"{type(original).__name__} keeps no per-row state")
        self.original = original

    def __call__(self, input_ids, scores):  # noqa: ANN001 - the LogitsProcessor signature
        raise RuntimeError("a row-bound processor is applied through for_rows(rows)")

    def for_rows(self, rows: Sequence[int]) -> LogitsProcessor:
        """The original processor with its state for ``rows`` (generate's row numbers), in that order."""
        rows = list(rows)
        original = self.original
        selected = copy.copy(original)
        if isinstance(original, EncoderNoRepeatNGramLogitsProcessor):
            selected.generated_ngrams = [original.generated_ngrams[row] for row in rows]
            selected.batch_size = len(rows)
        elif isinstance(original, EncoderRepetitionPenaltyLogitsProcessor):
            index = original.encoder_input_ids.new_tensor(rows)
            selected.encoder_input_ids = original.encoder_input_ids.index_select(0, index)
        else:
            allowed = original._prefix_allowed_tokens_fn
            selected._prefix_allowed_tokens_fn = lambda batch_id, sentence: allowed(rows[batch_id], sentence)
        return selected


def with_row_bound(processors: LogitsProcessorList) -> LogitsProcessorList:
    """``processors`` with each row-bound one wrapped in ``RowBound``."""
    return LogitsProcessorList(RowBound(p) if isinstance(p, ROW_BOUND) else p for p in processors)


def has_row_bound(processors: LogitsProcessorList) -> bool:
    return any(isinstance(p, RowBound) for p in processors)


def for_rows(processors: LogitsProcessorList, rows: Sequence[int]) -> LogitsProcessorList:
    """The list as it applies to ``rows`` (generate's row numbers)."""
    return LogitsProcessorList(p.for_rows(rows) if isinstance(p, RowBound) else p for p in processors)
