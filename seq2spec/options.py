"""User-facing options and per-call statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Acceptance = Literal["per-row", "batch-min"]
ACCEPTANCE_MODES: tuple[str, ...] = ("per-row", "batch-min")


@dataclass(frozen=True)
class SpeculationOptions:
    """How many tokens the draft proposes and how the big model's verdict is applied.

    ``num_draft_tokens`` is the starting draft length. With ``adaptive`` it grows by 2 for a row whose proposals
    were all accepted and shrinks by 1 otherwise, within ``[min_draft_tokens, max_draft_tokens]``; a batch drafts
    the rounded mean of its live rows' lengths. ``acceptance="batch-min"`` rolls every row back to the batch's
    earliest mismatch (the published batched design), kept for comparison. ``min_draft_confidence`` ends a
    draft model's proposal early once every row has proposed a token it gave less than that probability
    (0 turns it off); it changes the speed, never the output. ``lean_draft`` runs a T5/MT5 draft's decoder steps
    through seq2spec's own few-operation step (``lean_t5.py``, checked against transformers' logits before use)
    instead of transformers' module stack, whose per-call overhead dominates a small draft's cost; the big model
    always runs through transformers, so this too changes the speed only.
    """

    num_draft_tokens: int = 5
    adaptive: bool = True
    min_draft_tokens: int = 1
    max_draft_tokens: int = 16
    acceptance: Acceptance = "per-row"
    min_draft_confidence: float = 0.0
    lean_draft: bool = True

    def __post_init__(self) -> None:
        confidence = self.min_draft_confidence
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence < 1:
            raise ValueError(f"min_draft_confidence must be a number in [0, 1), got {confidence!r}")
        for name in ("num_draft_tokens", "min_draft_tokens", "max_draft_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.min_draft_tokens <= self.num_draft_tokens <= self.max_draft_tokens:
            raise ValueError(
                "expected min_draft_tokens <= num_draft_tokens <= max_draft_tokens, got "
                f"{self.min_draft_tokens}, {self.num_draft_tokens}, {self.max_draft_tokens}"
            )
        if not isinstance(self.lean_draft, bool):
            raise ValueError(f"lean_draft must be True or False, got {self.lean_draft!r}")
        if self.acceptance not in ACCEPTANCE_MODES:
            raise ValueError(f"acceptance must be one of {ACCEPTANCE_MODES}, got {self.acceptance!r}")


@dataclass
class SpeculationStats:
    """Counters of one ``generate``/``correct`` call.

    A *row forward* is one row's share of one batched decoder call; ``tokens_per_big_forward`` is generated
    tokens per big-model row forward (plain greedy decoding has exactly 1).
    """

    big_forwards: int = 0
    big_row_forwards: int = 0
    draft_forwards: int = 0
    big_encoder_calls: int = 0
    draft_encoder_calls: int = 0
    generated_tokens: int = 0
    proposed_draft_tokens: int = 0
    accepted_draft_tokens: int = 0
    # of the above, candidates copied from the source (input-copy drafting) and how many of those were kept
    proposed_copy_tokens: int = 0
    accepted_copy_tokens: int = 0
    accepted_length_histogram: list[int] = field(default_factory=list)

    @property
    def acceptance_rate(self) -> float:
        """Share of proposed draft tokens that ended up in the output."""
        return self.accepted_draft_tokens / self.proposed_draft_tokens if self.proposed_draft_tokens else 0.0

    @property
    def tokens_per_big_forward(self) -> float:
        return self.generated_tokens / self.big_row_forwards if self.big_row_forwards else 0.0

    def record_accepted_lengths(self, lengths: list[int]) -> None:
        for length in lengths:
            if length >= len(self.accepted_length_histogram):
                self.accepted_length_histogram.extend([0] * (length + 1 - len(self.accepted_length_histogram)))
            self.accepted_length_histogram[length] += 1

    def merge(self, other: SpeculationStats) -> None:
        """Add another call's counters to these."""
        for name in (
            "big_forwards",
            "big_row_forwards",
            "draft_forwards",
            "big_encoder_calls",
            "draft_encoder_calls",
            "generated_tokens",
            "proposed_draft_tokens",
            "accepted_draft_tokens",
            "proposed_copy_tokens",
            "accepted_copy_tokens",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for length, count in enumerate(other.accepted_length_histogram):
            self.record_accepted_lengths([length] * count)

    def as_dict(self) -> dict[str, float | int | list[int]]:
        return {
            "big_forwards": self.big_forwards,
            "big_row_forwards": self.big_row_forwards,
            "draft_forwards": self.draft_forwards,
            "big_encoder_calls": self.big_encoder_calls,
            "draft_encoder_calls": self.draft_encoder_calls,
            "generated_tokens": self.generated_tokens,
            "proposed_draft_tokens": self.proposed_draft_tokens,
            "accepted_draft_tokens": self.accepted_draft_tokens,
            "proposed_copy_tokens": self.proposed_copy_tokens,
            "accepted_copy_tokens": self.accepted_copy_tokens,
            "acceptance_rate": self.acceptance_rate,
            "tokens_per_big_forward": self.tokens_per_big_forward,
            "accepted_length_histogram": list(self.accepted_length_histogram),
        }
