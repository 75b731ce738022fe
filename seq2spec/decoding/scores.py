"""The per-token scores ``generate(output_scores=True, output_logits=True)`` returns, collected from verification.

Every token the loop emits was checked in a big-model forward, whose logits (raw) and processed scores at that
position are the ones ``generate`` computes for the token: the same prefix, the same logits processors. The
recorder keeps, per round, the positions each row emitted and lays them out as ``generate`` does: one
``[rows, vocab]`` tensor per generated step.

A row that finished early is not decoded further, so its steps after its last token have no model output. They
hold the scores of a certain pad token (0 for the pad token, -inf elsewhere), which every reader of Whisper's
fallback statistics ignores: those read a row's scores only up to its own last token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class _Round:
    rows: torch.Tensor  # [live] batch rows
    first_step: torch.Tensor  # [live] step index of each row's first emitted token this round
    counts: torch.Tensor  # [live] tokens emitted this round
    scores: torch.Tensor | None  # [live, width, vocab]
    logits: torch.Tensor | None


@dataclass
class ScoreRecorder:
    """Collects the processed scores and/or raw logits of every emitted token."""

    rows: int
    pad_token_id: int
    keep_scores: bool
    keep_logits: bool
    _rounds: list[_Round] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.keep_scores or self.keep_logits

    def add(
        self,
        rows: torch.Tensor,
        first_step: torch.Tensor,
        counts: torch.Tensor,
        width: int,
        scores: torch.Tensor,
        logits: torch.Tensor | None,
    ) -> None:
        """Row ``rows[i]`` emitted ``counts[i]`` (at most ``width``) tokens from step ``first_step[i]``, scored by
        ``scores[i, :counts[i]]`` (raw: ``logits[i, :counts[i]]``)."""
        self._rounds.append(
            _Round(
                rows,
                first_step,
                counts,
                scores[:, :width].clone() if self.keep_scores else None,
                logits[:, :width].clone() if self.keep_logits and logits is not None else None,
            )
        )

    def scores(self, steps: int) -> tuple[torch.Tensor, ...] | None:
        return self._laid_out(steps, "scores") if self.keep_scores else None

    def logits(self, steps: int) -> tuple[torch.Tensor, ...] | None:
        return self._laid_out(steps, "logits") if self.keep_logits else None

    def _laid_out(self, steps: int, kind: str) -> tuple[torch.Tensor, ...]:
        pieces = [(record, getattr(record, kind)) for record in self._rounds]
        if not pieces:
            return ()
        sample = pieces[0][1]
        filled = sample.new_full((self.rows, steps, sample.shape[-1]), float("-inf"))
        filled[:, :, self.pad_token_id] = 0.0
        for record, values in pieces:
            offsets = torch.arange(values.shape[1], device=values.device)[None, :]
            emitted = offsets < record.counts[:, None]
            rows = record.rows[:, None].expand_as(offsets.expand(values.shape[0], -1))
            filled[rows[emitted], (record.first_step[:, None] + offsets)[emitted]] = values[emitted]
        return tuple(filled.unbind(1))
