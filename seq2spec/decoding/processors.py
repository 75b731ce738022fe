"""Logits processors the loop applies in place of transformers' own, with the same scores: Whisper's with less work,
and those that keep state per row of ``generate``'s batch applied to any subset of its rows.

transformers' ``SuppressTokensLogitsProcessor`` and ``SuppressTokensAtBeginLogitsProcessor`` rebuild a
vocabulary-sized mask with ``torch.isin`` on every call (the second one even when it changes nothing). Whisper's
generation config suppresses ~90 tokens, so on a CPU that rebuild costs about as much as a small model's decoder
step, and the speculative loop processes several positions per big forward. These subclasses compute the same
scores (``-inf`` at the same tokens, the scores' dtype kept) with a mask cached per device and vocabulary size.
``WhisperTimestampRules`` applies ``WhisperTimeStampLogitsProcessor``'s rules with tensor operations over all rows
instead of a Python loop over each row's tokens (the rules and their order unchanged; tested equal on random
sequences). ``PromptNoSpeechDetection`` is Whisper's no-speech detection without the whole extra model forward
(encoder included) that ``WhisperNoSpeechDetection`` runs per window: the loop hands it the big model's logits of the
prompt from its first verification forward, which covers the same positions.

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

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.generation.logits_process import (
    EncoderNoRepeatNGramLogitsProcessor,
    EncoderRepetitionPenaltyLogitsProcessor,
    PrefixConstrainedLogitsProcessor,
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
    WhisperNoSpeechDetection,
    WhisperTimeStampLogitsProcessor,
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

    def process_ragged(self, prefixes: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill_(self._mask(scores), -float("inf"))


class CachedSuppressTokensAtBegin(SuppressTokensAtBeginLogitsProcessor):
    """``SuppressTokensAtBeginLogitsProcessor`` with its mask built once and used only at the begin index."""

    def __init__(self, original: SuppressTokensAtBeginLogitsProcessor) -> None:
        self.__dict__.update(original.__dict__)
        self._mask = _CachedMask(self.begin_suppress_tokens)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[-1] != self.begin_index:
            return scores
        return scores.masked_fill(self._mask(scores), -float("inf"))

    def process_ragged(self, prefixes: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        at_begin = lengths == self.begin_index
        if lengths.device.type == "cpu" and not bool(at_begin.any()):  # a host check: no row at the begin index
            return scores
        return scores.masked_fill_(self._mask(scores)[None, :] & at_begin.to(scores.device)[:, None], -float("inf"))


class WhisperTimestampRules(WhisperTimeStampLogitsProcessor):
    """``WhisperTimeStampLogitsProcessor`` with each row's timestamp state read by tensor operations."""

    def __init__(self, original: WhisperTimeStampLogitsProcessor) -> None:
        self.__dict__.update(original.__dict__)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        lengths = torch.full((input_ids.shape[0],), input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        return self.process_ragged(input_ids, lengths, scores.clone())

    def process_ragged(self, prefixes: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """The rules for each row after its own first ``lengths[row]`` tokens of ``prefixes`` (in place)."""
        scores_processed = scores
        scores_processed[:, self.no_timestamps_token_id] = -float("inf")
        begin = self.timestamp_begin
        generated = prefixes[:, self.begin_index :]
        at_begin = (lengths == self.begin_index).to(scores.device)[:, None]
        lengths = (lengths.to(generated.device) - self.begin_index).clamp(min=0)  # each row's generated tokens
        rows, width = generated.shape
        positions = torch.arange(width, device=generated.device)
        is_timestamp = (generated >= begin) & (positions[None, :] < lengths[:, None])
        padded = torch.nn.functional.pad(is_timestamp, (2, 0))  # column 2 + p holds token p; columns 0, 1: none
        last_was_timestamp = padded.gather(1, (lengths + 1)[:, None]).squeeze(1)
        penultimate_was_timestamp = padded.gather(1, lengths[:, None]).squeeze(1) | (lengths < 2)
        # timestamps come in pairs, except directly before the end: after a pair, text; after a single one, no text
        after_pair = (last_was_timestamp & penultimate_was_timestamp).to(scores.device)
        after_single = (last_was_timestamp & ~penultimate_was_timestamp).to(scores.device)
        # no timestamp below the row's last one (below the one after it, unless a pair is open)
        last_index = torch.where(is_timestamp, positions, -1).max(dim=1).values if width else lengths - 1
        last_timestamp = (
            generated.gather(1, last_index.clamp(min=0)[:, None]).squeeze(1) if width else torch.zeros_like(lengths)
        )
        last_timestamp = last_timestamp.to(scores.device)
        floor = torch.where(after_single, last_timestamp, last_timestamp + 1)
        floor = torch.where(last_index.to(scores.device) >= 0, floor, torch.full_like(floor, begin))
        # The rules mask whole rows of the text tokens (below the end token, and the special tokens up to the first
        # timestamp) and ranges of the timestamps: the text columns take one row-broadcast fill each, and only the
        # timestamp columns (about 1,500 of Whisper's 51,865) take per-column masks.
        text_end = min(self.eos_token_id, begin)
        scores_processed[:, :text_end].masked_fill_((after_single | at_begin[:, 0])[:, None], -float("inf"))
        scores_processed[:, text_end:begin].masked_fill_(at_begin, -float("inf"))
        stamps = torch.arange(begin, scores_processed.shape[-1], device=scores.device)[None, :]
        stamp_mask = (
            after_pair[:, None] | (stamps < floor[:, None]) | (after_single[:, None] & (stamps < self.eos_token_id))
        )
        if self.max_initial_timestamp_index is not None:
            stamp_mask |= at_begin & (stamps > begin + self.max_initial_timestamp_index)
        scores_processed[:, begin:].masked_fill_(stamp_mask, -float("inf"))
        if self._detect_timestamp_from_logprob:
            logprobs = torch.nn.functional.log_softmax(scores_processed.float(), dim=-1)
            timestamp_logprob = logprobs[:, begin:].logsumexp(dim=-1)
            max_text_token_logprob = logprobs[:, :begin].max(dim=-1).values
            sample_timestamp = (timestamp_logprob > max_text_token_logprob).unsqueeze(-1)
            scores_processed[:, :begin].masked_fill_(sample_timestamp, -float("inf"))
        return scores_processed


class PromptNoSpeechDetection(LogitsProcessor):
    """``WhisperNoSpeechDetection`` fed by the loop: it sets the original's ``no_speech_prob`` (which Whisper's
    generate reads) from the prompt logits of the big model's first forward instead of running its own forward.

    Whisper's processor, at the step after the prompt, takes the probability of the no-speech token after the
    start-of-transcript token: from its own forward of the prompt when tokens follow that token (language, task),
    else from the step's scores. ``observe_prompt`` covers the first case, ``__call__`` the second.
    """

    def __init__(self, original: WhisperNoSpeechDetection) -> None:
        self.original = original

    @property
    def reads_prompt(self) -> bool:
        return self.original.start_of_trans_offset > 1

    @property
    def ragged(self) -> bool:
        """Rows of different lengths in one call: only when it leaves the scores alone (it reads the prompt)."""
        return self.reads_prompt

    def process_ragged(self, prefixes: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if not self.reads_prompt:
            raise RuntimeError("this no-speech detection reads the step's scores: apply it to rows of one length")
        return scores

    def observe_prompt(self, logits: torch.Tensor) -> None:
        """``logits``: the big model's raw logits ``[rows, prompt length, vocab]`` over each row's prompt."""
        if not self.reads_prompt:
            return
        original = self.original
        at_start = logits[:, original.begin_index - original.start_of_trans_offset]
        original._no_speech_prob = at_start.float().softmax(dim=-1)[:, original.no_speech_token]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if not self.reads_prompt:
            return self.original(input_ids, scores)  # reads the scores only
        return scores


_REPLACEMENTS: dict[type, type] = {
    WhisperNoSpeechDetection: PromptNoSpeechDetection,
    SuppressTokensLogitsProcessor: CachedSuppressTokens,
    SuppressTokensAtBeginLogitsProcessor: CachedSuppressTokensAtBegin,
    WhisperTimeStampLogitsProcessor: WhisperTimestampRules,
}


def with_cached_masks(processors: LogitsProcessorList) -> LogitsProcessorList:
    """The same processors in the same order, the token-suppressing ones replaced by their cached versions."""
    replaced: list[LogitsProcessor] = []
    for processor in processors:
        replacement = _REPLACEMENTS.get(type(processor))
        replaced.append(replacement(processor) if replacement is not None else processor)
    return LogitsProcessorList(replaced)


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
