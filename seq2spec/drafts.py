"""Where candidate tokens come from. A proposer knows nothing of verification; the loop tells it what was kept.

Protocol, per round: ``propose(k, process)`` returns ``[rows, k']`` candidates (``k' <= k``) for the tokens that
follow each row's last accepted token; ``accept(accepted, bonus)`` says that row ``r`` kept its first
``accepted[r]`` candidates followed by the big model's own token ``bonus[r]``; ``select(rows)`` drops finished rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch

from seq2spec.runner import DecoderRunner

# process(candidates_so_far [rows, j], scores [rows, vocab]) -> processed scores
ScoreProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Proposer(Protocol):
    forward_calls: int

    def start(self, first_tokens: torch.Tensor) -> None: ...

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor: ...

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None: ...

    def select(self, rows: torch.Tensor) -> None: ...


class NoDraft:
    """Proposes nothing: the loop degenerates to plain greedy decoding, one big forward per token."""

    forward_calls = 0

    def start(self, first_tokens: torch.Tensor) -> None:
        self._rows = first_tokens.shape[0]
        self._device = first_tokens.device

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor:
        return torch.empty((self._rows, 0), dtype=torch.long, device=self._device)

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None:
        pass

    def select(self, rows: torch.Tensor) -> None:
        self._rows = rows.numel()


class DraftModelProposer:
    """Greedy proposals from a smaller encoder-decoder (or any model sharing the big model's vocabulary).

    The draft's cache always lags two tokens behind the accepted text: each round starts by feeding the last
    accepted token and the big model's bonus token together, which keeps every row's input the same width no
    matter how many candidates it had accepted (the one recomputed entry costs next to nothing).
    """

    def __init__(self, runner: DecoderRunner, eos_token_ids: tuple[int, ...]) -> None:
        self.runner = runner
        self.eos = torch.tensor(eos_token_ids, dtype=torch.long, device=runner.device)
        self.pending = torch.empty(0)
        self.candidates = torch.empty(0)

    @property
    def forward_calls(self) -> int:
        return self.runner.forward_calls

    def start(self, first_tokens: torch.Tensor) -> None:
        self.pending = first_tokens.to(self.runner.device)

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor:
        rows = self.pending.shape[0]
        self.candidates = candidates = torch.empty((rows, 0), dtype=torch.long, device=self.runner.device)
        if max_tokens <= 0:
            return candidates
        ended = torch.zeros(rows, dtype=torch.bool, device=self.runner.device)
        step_input = self.pending
        for _ in range(max_tokens):
            scores = process(candidates, self.runner.forward(step_input)[:, -1])
            token = scores.argmax(dim=-1)
            candidates = torch.cat([candidates, token[:, None]], dim=1)
            if self.eos.numel():
                ended |= torch.isin(token, self.eos)
                if bool(ended.all()):  # every row has proposed its end: more candidates would be discarded
                    break
            step_input = token[:, None]
        self.candidates = candidates
        return candidates

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None:
        accepted = accepted.to(self.runner.device)
        bonus = bonus.to(self.runner.device)[:, None]
        if self.candidates.shape[1] == 0:  # nothing was fed this round: the bonus joins the pending tokens
            self.pending = torch.cat([self.pending, bonus], dim=1)
            return
        width = self.pending.shape[1]
        fed = width + self.candidates.shape[1] - 1
        # Keep everything before the last accepted token; it is fed again with the bonus token next round.
        self.runner.keep(width - 1 + accepted, fed=fed)
        sequence = torch.cat([self.pending, self.candidates], dim=1)
        last_accepted = sequence.gather(1, (width - 1 + accepted)[:, None])
        self.pending = torch.cat([last_accepted, bonus], dim=1)

    def select(self, rows: torch.Tensor) -> None:
        rows = rows.to(self.runner.device)
        self.runner.select(rows)
        self.pending = self.pending.index_select(0, rows)
        self.candidates = self.candidates.index_select(0, rows)
