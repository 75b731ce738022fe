"""Deciding, per row, how many candidates to keep and which token the big model adds after them.

``verify(candidates [rows, k], scores [rows, k + 1, vocab], draft_probs)`` returns ``(accepted, bonus)``: row ``r``
keeps ``candidates[r, :accepted[r]]`` and then ``bonus[r]``. ``scores[:, j]`` are the big model's processed scores
after the row's tokens and ``candidates[:, :j]``.

- Greedy: keep candidates while they equal the big model's argmax; the bonus is the argmax after them. The output
  is exactly the big model's greedy decoding.
- Sampling (Leviathan et al. 2023; Chen et al. 2023): candidate ``x`` drawn from the draft's ``q`` is kept with
  probability ``min(1, p(x) / q(x))``; at the first rejection the bonus is *sampled* from the normalised positive
  part of ``p - q``; after a fully kept block it is sampled from ``p``. Every emitted token is then distributed
  exactly as when sampling from the big model's ``p``. A proposer that picks candidates deterministically (input
  copy, a greedy draft) is the special case of a one-hot ``q``.
"""

from __future__ import annotations

from typing import Literal, Protocol

import torch

from seq2spec.options import Acceptance

Residual = Literal["sample", "argmax"]


class Verifier(Protocol):
    def verify(
        self, candidates: torch.Tensor, scores: torch.Tensor, draft_probs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


def _batch_minimum(accepted: torch.Tensor, acceptance: Acceptance) -> torch.Tensor:
    if acceptance == "batch-min" and accepted.numel():
        return accepted.min().expand_as(accepted).clone()
    return accepted


class GreedyVerifier:
    """Keeps the longest prefix equal to the big model's argmax, then adds the big model's argmax."""

    def __init__(self, acceptance: Acceptance = "per-row") -> None:
        self.acceptance = acceptance

    def verify(
        self, candidates: torch.Tensor, scores: torch.Tensor, draft_probs: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        targets = scores.argmax(dim=-1)
        width = candidates.shape[1]
        matches = (candidates == targets[:, :width]).long()
        accepted = _batch_minimum(matches.cumprod(dim=1).sum(dim=1), self.acceptance)
        bonus = targets.gather(1, accepted[:, None]).squeeze(1)
        return accepted, bonus


class SamplingVerifier:
    """Speculative sampling: the output follows the big model's sampling distribution, row by row.

    ``residual="argmax"`` takes the argmax of ``p - q`` after a rejection instead of sampling it: a known mistake
    that changes the distribution, kept only so that the statistical tests can show they detect it.
    """

    def __init__(
        self, generator: torch.Generator | None, acceptance: Acceptance = "per-row", residual: Residual = "sample"
    ) -> None:
        if residual not in ("sample", "argmax"):
            raise ValueError(f"residual must be 'sample' or 'argmax', got {residual!r}")
        self.generator = generator
        self.acceptance = acceptance
        self.residual = residual

    def verify(
        self, candidates: torch.Tensor, scores: torch.Tensor, draft_probs: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows, width = candidates.shape
        vocab = scores.shape[-1]
        p = torch.softmax(scores.float(), dim=-1)  # -inf scores (filtered tokens) get probability 0
        if draft_probs is None:  # deterministic proposals: q is one-hot on each candidate
            q = torch.nn.functional.one_hot(candidates, vocab).to(p.dtype)
        else:
            q = draft_probs[:, :width].to(p.device, p.dtype)
        p_candidate = p[:, :width].gather(2, candidates[..., None]).squeeze(-1)
        q_candidate = q.gather(2, candidates[..., None]).squeeze(-1)
        uniform = torch.rand((rows, width), generator=self.generator, device=p.device)
        keep = (uniform * q_candidate < p_candidate).long()  # u < p/q, without dividing by q
        accepted = _batch_minimum(keep.cumprod(dim=1).sum(dim=1), self.acceptance)
        rejected_there = keep.cumprod(dim=1).sum(dim=1) <= accepted  # rows whose own first rejection is here

        # Distribution of the token after the kept candidates: p - q (positive part) after a rejection, else p.
        index = accepted[:, None, None].expand(rows, 1, vocab)
        p_next = p.gather(1, index).squeeze(1)
        q_next = torch.nn.functional.pad(q, (0, 0, 0, 1)).gather(1, index).squeeze(1)  # zero after the block
        residual = (p_next - q_next).clamp_(min=0)
        mass = residual.sum(dim=-1, keepdim=True)
        residual = torch.where(mass > 0, residual / mass.clamp(min=1e-30), p_next)  # p == q: nothing to correct
        bonus = torch.multinomial(residual, 1, generator=self.generator).squeeze(1)
        if self.residual == "argmax":
            rejected = (accepted < width)[:, None]
            bonus = torch.where(rejected.squeeze(1), residual.argmax(dim=-1), bonus)
        if self.acceptance == "batch-min" and width:
            # Rows that had kept more than the batch minimum keep their candidate there: an accepted draft token
            # is itself a sample from p.
            own_candidate = candidates.gather(1, accepted.clamp(max=width - 1)[:, None]).squeeze(1)
            bonus = torch.where(rejected_there, bonus, own_candidate)
        return accepted, bonus
