"""The tokens generated so far, per row, and logits processing over them."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from seq2spec.decoding.fast.captured_processing import CapturedStepProcessing, capturable
from seq2spec.decoding.fast.checked import BIT_EQUAL, check
from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.processors import for_rows, has_row_bound


class TokenBuffer:
    """Right-padded generated tokens of a whole batch (the decoder prompt first) and each row's length.

    One column past ``capacity`` takes the writes a row does not keep, so appending needs no boolean mask (a mask
    index makes the host wait for the GPU)."""

    def __init__(self, prompt: torch.Tensor, capacity: int, pad_id: int) -> None:
        rows, prompt_length = prompt.shape
        self.capacity = capacity
        self.tokens = torch.full((rows, capacity + 1), pad_id, dtype=torch.long, device=prompt.device)
        self.tokens[:, :prompt_length] = prompt
        self.lengths = torch.full((rows,), prompt_length, dtype=torch.long, device=prompt.device)

    def append(self, rows: torch.Tensor, new_tokens: torch.Tensor, counts: torch.Tensor) -> None:
        """Append the first ``counts[i]`` of ``new_tokens[i]`` to row ``rows[i]`` (``counts[i]`` at most the row's
        room left)."""
        offsets = torch.arange(new_tokens.shape[1], device=new_tokens.device)[None, :]
        columns = self.lengths.index_select(0, rows)[:, None] + offsets
        columns = torch.where(offsets < counts[:, None], columns, self.capacity)
        self.tokens[rows[:, None].expand_as(columns), columns] = new_tokens
        self.lengths[rows] += counts

    def output(self) -> torch.Tensor:
        """``[rows, longest]``: what ``generate`` returns, pad after each row's end."""
        return self.tokens[:, : int(self.lengths.max())].clone()


def processes_ragged(processor: LogitsProcessor) -> bool:
    """Whether ``processor`` has ``process_ragged(prefixes, lengths, scores)``: the scores of rows whose prefixes
    have different lengths (``prefixes`` right-padded, row ``i``'s prefix its first ``lengths[i]`` tokens), equal
    to calling it row by row on each row's own prefix. ``process_ragged`` may write into the scores it is given."""
    return callable(getattr(processor, "process_ragged", None)) and getattr(processor, "ragged", True)


class PrefixProcessor:
    """Applies ``generate``'s logits processors to scores that follow each row's tokens plus candidate tokens.

    Rows of one batch have different lengths under per-row acceptance, while a logits processor takes one
    ``[rows, length]`` tensor. Processors that handle ragged prefixes (``processes_ragged``: seq2spec's versions of
    Whisper's) take all rows in one call; any other list is applied to the rows grouped by prefix length. The
    callers pass each row's length as host numbers (``lengths``), so grouping never waits for the device.

    With ``capture_steps`` (a draft's processing on a CUDA device) ``step`` runs capturable processors over fixed
    tensors as a CUDA graph (``captured_processing.py``), once its first result equals the eager one.
    """

    def __init__(self, processors: LogitsProcessorList, buffer: TokenBuffer, *, capture_steps: bool = False) -> None:
        self.processors = processors
        self.buffer = buffer
        self.row_bound = has_row_bound(processors)  # some processor must be told the rows' places in generate's batch
        self.ragged = all(processes_ragged(p) for p in processors)
        self.capture_steps = capture_steps and self.ragged and capturable(processors)
        self._captured: CapturedStepProcessing | None = None

    def __bool__(self) -> bool:
        return len(self.processors) > 0

    def positions(
        self,
        rows: torch.Tensor,
        candidates: torch.Tensor,
        scores: torch.Tensor,
        lengths: Sequence[int] | None = None,
    ) -> torch.Tensor:
        """``scores[:, j]`` follows row tokens + ``candidates[:, :j]``; processes every ``j`` in place.
        ``lengths``: the rows' token counts (the buffer's, on the host), when the caller has them."""
        if not self:
            return scores
        prefixes, row_lengths, lengths = self._with_candidates(rows, candidates, lengths)
        if self.ragged:  # every position of every row in one call: row i's position j follows lengths[i] + j tokens
            count, positions, vocabulary = scores.shape
            offsets = torch.arange(positions, device=row_lengths.device)
            flat = scores.reshape(count * positions, vocabulary)  # a view of the scores when they are contiguous
            processed = self._ragged(
                prefixes.repeat_interleave(positions, dim=0),
                (row_lengths[:, None] + offsets[None, :]).flatten(),
                flat,
                copy=False,
            )
            if processed.data_ptr() != scores.data_ptr():  # processed elsewhere (or the scores were not contiguous)
                scores.copy_(processed.view(count, positions, vocabulary))
            return scores
        for j in range(scores.shape[1]):
            scores[:, j] = self._apply(
                prefixes, row_lengths + j, [length + j for length in lengths], scores[:, j], rows
            )
        return scores

    def step(
        self,
        rows: torch.Tensor,
        candidates: torch.Tensor,
        scores: torch.Tensor,
        lengths: Sequence[int] | None = None,
        *,
        capture: bool = True,
    ) -> torch.Tensor:
        """``scores`` (``[rows, vocab]``) follow row tokens + all of ``candidates``. ``capture=False``: eager
        processing whatever ``capture_steps`` says (a subset of the live rows, whose shapes the graph does not hold)."""
        if not self:
            return scores
        if self.capture_steps and capture:
            return self._captured_step(rows, candidates, scores, lengths)
        return self._eager_step(rows, candidates, scores, lengths)

    def _eager_step(
        self, rows: torch.Tensor, candidates: torch.Tensor, scores: torch.Tensor, lengths: Sequence[int] | None
    ) -> torch.Tensor:
        prefixes, row_lengths, lengths = self._with_candidates(rows, candidates, lengths)
        width = candidates.shape[1]
        return self._apply(prefixes, row_lengths + width, [length + width for length in lengths], scores, rows)

    def _captured_step(
        self, rows: torch.Tensor, candidates: torch.Tensor, scores: torch.Tensor, lengths: Sequence[int] | None
    ) -> torch.Tensor:
        if self._captured is not None:
            return self._captured(rows, candidates, scores)
        expected = self._eager_step(rows, candidates, scores, lengths)  # a copy: the scores stay as they were

        def build() -> CapturedStepProcessing:
            graphs = scores.device.type == "cuda"
            return CapturedStepProcessing(
                self.processors, self.buffer.tokens, self.buffer.lengths, scores.shape[-1], graphs=graphs
            )

        self._captured = check(
            "captured draft processing",
            build,
            lambda captured: torch.equal(captured(rows, candidates, scores), expected),  # one host sync per batch
            BIT_EQUAL,
            catching=(RuntimeError,),  # capture failed: the eager processing stays
        )
        self.capture_steps = self._captured is not None
        return expected

    def _with_candidates(
        self, rows: torch.Tensor, candidates: torch.Tensor, lengths: Sequence[int] | None
    ) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        row_lengths = self.buffer.lengths.index_select(0, rows)
        lengths = row_lengths.tolist() if lengths is None else list(lengths)
        width = max(lengths) + candidates.shape[1]
        prefixes = torch.zeros((rows.numel(), width), dtype=torch.long, device=candidates.device)
        copied = min(width, self.buffer.capacity)
        prefixes[:, :copied] = self.buffer.tokens[:, :copied].index_select(0, rows)
        if candidates.shape[1]:
            columns = row_lengths[:, None] + torch.arange(candidates.shape[1], device=candidates.device)[None, :]
            prefixes.scatter_(1, columns, candidates)
        return prefixes, row_lengths, lengths

    def _ragged(
        self, prefixes: torch.Tensor, row_lengths: torch.Tensor, scores: torch.Tensor, *, copy: bool = True
    ) -> torch.Tensor:
        """The processed scores; with ``copy=False`` written into ``scores`` where the processors can."""
        scores = scores.clone() if copy else scores
        for processor in self.processors:
            scores = processor.process_ragged(prefixes, row_lengths, scores)
        return scores

    def _apply(
        self,
        prefixes: torch.Tensor,
        row_lengths: torch.Tensor,
        lengths: list[int],
        scores: torch.Tensor,
        rows: torch.Tensor,
    ) -> torch.Tensor:
        longest = max(lengths)
        if self.ragged:
            return self._ragged(prefixes[:, :longest], row_lengths, scores)
        groups: dict[int, list[int]] = {}
        for row, length in enumerate(lengths):
            groups.setdefault(length, []).append(row)
        places = rows.tolist() if self.row_bound else None  # generate's row numbers, for row-bound processors
        if len(groups) == 1:  # every row has the same prefix length (always so for one row): one call, no regrouping
            return self._processors_for(places)(prefixes[:, :longest], scores.clone())
        scores = scores.clone()
        for length, members in groups.items():
            index = to_device(members, scores.device)
            processors = self._processors_for(None if places is None else [places[row] for row in members])
            processed = processors(prefixes.index_select(0, index)[:, :length], scores.index_select(0, index))
            scores.index_copy_(0, index, processed)
        return scores

    def _processors_for(self, places: list[int] | None) -> LogitsProcessorList:
        return self.processors if places is None else for_rows(self.processors, places)
