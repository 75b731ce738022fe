"""The proposer of plain greedy decoding: nothing, so every round is one big forward for one token per row."""

from __future__ import annotations

import torch

from seq2spec.decoding.proposal import DecodingBatch, Proposal, ScoreProcessor


class NoDraft:
    """Proposes no candidates: the loop then emits exactly the big model's next token per round."""

    def __init__(self) -> None:
        self.rows, self.device = 0, torch.device("cpu")

    def start(self, batch: DecodingBatch) -> None:
        self.rows, self.device = batch.rows, batch.device

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        return Proposal(torch.empty((self.rows, 0), dtype=torch.long, device=self.device))

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        pass

    def select(self, rows: list[int]) -> None:
        self.rows = len(rows)
