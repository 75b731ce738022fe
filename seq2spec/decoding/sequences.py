"""The tokens generated so far, per row, and logits processing over them."""

from __future__ import annotations

import torch
from transformers import LogitsProcessorList


class TokenBuffer:
    """Right-padded generated tokens of a whole batch (the decoder prompt first) and each row's length."""

    def __init__(self, prompt: torch.Tensor, capacity: int, pad_id: int) -> None:
        rows, prompt_length = prompt.shape
        self.tokens = torch.full((rows, capacity), pad_id, dtype=torch.long, device=prompt.device)
        self.tokens[:, :prompt_length] = prompt
        self.lengths = torch.full((rows,), prompt_length, dtype=torch.long, device=prompt.device)

    def append(self, rows: torch.Tensor, new_tokens: torch.Tensor, counts: torch.Tensor) -> None:
        """Append the first ``counts[i]`` of ``new_tokens[i]`` to row ``rows[i]``."""
        width = new_tokens.shape[1]
        offsets = torch.arange(width, device=new_tokens.device)[None, :]
        valid = offsets < counts[:, None]
        columns = self.lengths[rows][:, None] + offsets
        row_index = rows[:, None].expand_as(columns)
        self.tokens[row_index[valid], columns[valid]] = new_tokens[valid]
        self.lengths[rows] += counts

    def output(self) -> torch.Tensor:
        """``[rows, longest]``: what ``generate`` returns, pad after each row's end."""
        return self.tokens[:, : int(self.lengths.max())].clone()


class PrefixProcessor:
    """Applies ``generate``'s logits processors to scores that follow each row's tokens plus candidate tokens.

    Rows of one batch have different lengths under per-row acceptance, while a logits processor takes one
    ``[rows, length]`` tensor, so rows are grouped by prefix length.
    """

    def __init__(self, processors: LogitsProcessorList, buffer: TokenBuffer) -> None:
        self.processors = processors
        self.buffer = buffer

    def __bool__(self) -> bool:
        return len(self.processors) > 0

    def positions(self, rows: torch.Tensor, candidates: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """``scores[:, j]`` follows row tokens + ``candidates[:, :j]``; processes every ``j`` in place."""
        if not self:
            return scores
        prefixes, lengths = self._with_candidates(rows, candidates)
        for j in range(scores.shape[1]):
            scores[:, j] = self._apply(prefixes, lengths + j, scores[:, j])
        return scores

    def step(self, rows: torch.Tensor, candidates: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """``scores`` (``[rows, vocab]``) follow row tokens + all of ``candidates``."""
        if not self:
            return scores
        prefixes, lengths = self._with_candidates(rows, candidates)
        return self._apply(prefixes, lengths + candidates.shape[1], scores)

    def _with_candidates(self, rows: torch.Tensor, candidates: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lengths = self.buffer.lengths[rows]
        width = int(lengths.max()) + candidates.shape[1]
        prefixes = torch.zeros((rows.numel(), width), dtype=torch.long, device=candidates.device)
        copied = min(width, self.buffer.tokens.shape[1])
        prefixes[:, :copied] = self.buffer.tokens[rows, :copied]
        if candidates.shape[1]:
            columns = lengths[:, None] + torch.arange(candidates.shape[1], device=candidates.device)[None, :]
            prefixes.scatter_(1, columns, candidates)
        return prefixes, lengths

    def _apply(self, prefixes: torch.Tensor, lengths: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        groups = lengths.unique().tolist()
        if len(groups) == 1:  # every row has the same prefix length (always so for one row): one call, no regrouping
            return self.processors(prefixes[:, : groups[0]], scores.clone())
        scores = scores.clone()
        for length in groups:
            group = lengths == length
            scores[group] = self.processors(prefixes[group, :length], scores[group])
        return scores
