"""The seam between the loop and whatever proposes candidate tokens.

Per batch the loop calls ``start(batch)`` once; then per round ``propose(max_tokens, process)`` returns a
``Proposal`` for the tokens that follow each row's last kept token, ``accept(accepted, bonus)`` says that row ``r``
kept its first ``accepted[r]`` candidates followed by the big model's own token ``bonus[r]``, and ``select(rows)``
drops finished rows. The loop reads nothing from a proposer but the ``Proposal`` values it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

# process(candidates_so_far [rows, j], scores [rows, vocab]) -> the scores after generate's logits processors for
# the position that follows each live row's tokens plus ``candidates_so_far``. The loop's process also takes a third
# argument, ``rows`` (positions among the live rows, a long tensor), for a proposer of some rows only
# (``RowGroupProposer``); its inputs then hold those rows.
ScoreProcessor = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class DecodingBatch:
    """What a proposer may know about the batch it proposes for (rows in the order of the loop's first round)."""

    encoder_inputs: torch.Tensor  # input_ids [rows, source length] or Whisper's input_features
    attention_mask: torch.Tensor | None  # the encoder inputs' padding mask
    encoder_hidden_states: torch.Tensor  # the big model's encoder output
    prompt: torch.Tensor  # [rows, P] the decoder's first tokens (start token, Whisper's language and task, ...)
    eos_token_ids: tuple[int, ...]
    pad_token_id: int
    do_sample: bool = False  # speculative sampling: a draft model samples its candidates and reports their q
    generator: torch.Generator | None = None
    # per row, how many of the prompt's first tokens are left padding (Whisper's previous-text prompts); () if none
    prompt_padding: tuple[int, ...] = ()
    # the prompt column where the transcript's own prompt starts: Whisper's start-of-transcript token, after any
    # previous text or initial prompt (0 when there is none)
    transcript_start: int = 0
    # the big model's cross-attention keys and values of one decoder layer (computed once, for its own first forward
    # as well), or None where they cannot be had outside that forward: for a draft that shares those projections
    big_cross_attention: Callable[[int], tuple[torch.Tensor, torch.Tensor] | None] | None = None
    # the big model's encoder output object as its encoder returned it (its class and other per-row tensors are what
    # a draft reading the same encoder output is given besides the hidden states)
    encoder_output: object = None

    @property
    def rows(self) -> int:
        return self.prompt.shape[0]

    @property
    def device(self) -> torch.device:
        return self.prompt.device

    def source_ids(self) -> list[list[int]]:
        """Each row's source token ids without padding (text models; what a copying proposer copies from)."""
        if self.encoder_inputs.is_floating_point():
            raise TypeError("this batch's encoder inputs are features, not token ids")
        if self.attention_mask is None:
            return self.encoder_inputs.tolist()
        return [
            [token for token, keep in zip(ids, mask, strict=True) if keep]
            for ids, mask in zip(self.encoder_inputs.tolist(), self.attention_mask.tolist(), strict=True)
        ]


@dataclass(frozen=True)
class Proposal:
    """One round's candidates.

    ``tokens`` is ``[rows, k]``; row ``r``'s real candidates are its first ``counts[r]`` (default: all ``k``), the
    rest is filler that the big model verifies like any token and that cannot change the output. ``copied`` says how
    many of the real ones were copied from the source (statistics only). ``draft_probs`` (``[rows, k, vocab]``) is the
    distribution each candidate was sampled from, for speculative sampling; None means chosen deterministically.
    ``draft_forwards`` counts the draft-model decoder calls spent on this proposal.
    """

    tokens: torch.Tensor
    counts: list[int] | None = None
    copied: list[int] | None = None
    draft_probs: torch.Tensor | None = None
    draft_forwards: int = 0

    def real_counts(self) -> list[int]:
        if self.counts is not None:
            return self.counts
        rows, width = self.tokens.shape
        return [width] * rows


@runtime_checkable
class Proposer(Protocol):
    """Anything that proposes candidates; see the module docstring for the order of calls."""

    def start(self, batch: DecodingBatch) -> None: ...

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal: ...

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None: ...

    def select(self, rows: torch.Tensor) -> None: ...


def check_proposal(proposal: object, rows: int, max_tokens: int) -> Proposal:
    """A proposer's return value, checked before the loop uses it (a user's proposer may return anything)."""
    if not isinstance(proposal, Proposal):
        raise TypeError(f"propose() must return a seq2spec Proposal, got {type(proposal).__name__}")
    tokens = proposal.tokens
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.shape[0] != rows:
        shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise ValueError(f"Proposal.tokens must be a [{rows}, k] tensor of token ids, got {shape}")
    if tokens.shape[1] > max_tokens:
        raise ValueError(f"the proposer returned {tokens.shape[1]} candidates per row; at most {max_tokens} were asked")
    if tokens.dtype != torch.long:
        raise TypeError(f"Proposal.tokens must be torch.long token ids, got {tokens.dtype}")
    for name in ("counts", "copied"):
        values = getattr(proposal, name)
        if values is not None and (len(values) != rows or any(not 0 <= v <= tokens.shape[1] for v in values)):
            raise ValueError(f"Proposal.{name} must hold {rows} counts within [0, {tokens.shape[1]}], got {values}")
    return proposal
