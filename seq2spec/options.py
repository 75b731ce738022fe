"""User-facing options and per-call statistics."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

Acceptance = Literal["per-row", "batch-min"]
ACCEPTANCE_MODES: tuple[str, ...] = ("per-row", "batch-min")


def _option(default: Any, description: str, **metadata: Any) -> Any:
    return field(default=default, metadata={"help": description, **metadata})


@dataclass(frozen=True)
class SpeculationOptions:
    """How candidates are proposed and how the big model's verdict is applied; none of them changes the output.

    This dataclass is the one list of speculation options: the commands derive their flags from its fields and
    help texts. A shipped draft carries the options it was tuned with (``recommended_options``); they apply unless
    the caller passes options of their own.
    """

    num_draft_tokens: int = _option(5, "starting proposal length per row")
    adaptive: bool = _option(
        True,
        "adapt each row's proposal length: a draft model's grows by 2 after a fully accepted proposal and shrinks by "
        "1 otherwise (a batch drafts the rounded mean of its rows); input copy doubles and halves",
    )
    min_draft_tokens: int = _option(1, "shortest proposal when adapting")
    max_draft_tokens: int = _option(16, "longest proposal from a draft model")
    acceptance: Acceptance = _option(
        "per-row",
        "per-row: each row keeps its own agreeing prefix; batch-min: every row is rolled back to the batch's earliest "
        "mismatch (the published batched design, for comparison)",
        choices=ACCEPTANCE_MODES,
    )
    min_draft_confidence: float = _option(
        0.0,
        "end a draft model's proposal once every row has proposed a token the draft gave less than this probability "
        "(fewer wasted draft forwards; 0 turns it off)",
    )
    lean_draft: bool = _option(
        True,
        "run a T5/MT5 or Whisper draft's decoder step (and a T5/MT5 draft's own encoder) through seq2spec's "
        "few-operation versions instead of transformers' modules (checked against transformers on a probe before use)",
    )
    int8_draft: bool = _option(
        True,
        "on a CPU, run the lean draft step's linear layers in int8 (the draft only proposes; the big model decides "
        "every token in its own precision)",
    )
    draft_cuda_graphs: bool = _option(
        True,
        "on a CUDA device, replay a Whisper draft's lean step (over a fixed-size cache) and a draft's Whisper logits "
        "processing as CUDA graphs (each checked against its eager version before use)",
    )
    exact_big_forward: bool = _option(
        True,
        "run a T5/MT5 or Whisper big model's decoder forward through seq2spec's operation-for-operation mirror of it, "
        "without transformers' per-call work; used only if a probe at load finds its logits and caches bit-identical",
    )
    pause_draft: bool = _option(
        True,
        "pause a draft model while the tokens it adds do not pay for its steps (each round timed: its kept candidates "
        "per row against the draft's time beside the big model's), trying it again after 2, 4, ... 32 rounds",
    )
    draft_reads_prompt: bool = _option(
        False,
        "Whisper: the draft also reads the previous text and initial prompt before the start-of-transcript token "
        "(for drafts trained with them; a draft distilled without them, as the shipped one, proposes better without)",
    )
    input_copy: bool = _option(
        False,
        "with a draft model: propose each row's own source where it aligns and the draft model elsewhere "
        "(correction tasks)",
    )
    max_copy_tokens: int = _option(32, "longest proposal copied from the source (copies cost no forwards)")
    fit_copy_width: bool = _option(
        True,
        "input copy: cut each round's copied proposals to the width that emits the most tokens per second, by a "
        "cost per round and per position fitted on the rounds' own times (rows are padded to the longest proposal; "
        "where positions cost nothing, as on a GPU, proposals stay whole)",
    )
    spellcheck_copy: bool = _option(
        False,
        "input copy (alone or with a draft model) copies from the source after a classical word-by-word spell check "
        "(symspellpy's English dictionary), so its proposals run on through the typos the checker fixes "
        "(English spelling correctors)",
    )

    def __post_init__(self) -> None:
        confidence = self.min_draft_confidence
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence < 1:
            raise ValueError(f"min_draft_confidence must be a number in [0, 1), got {confidence!r}")
        for name in ("num_draft_tokens", "min_draft_tokens", "max_draft_tokens", "max_copy_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.min_draft_tokens <= self.num_draft_tokens <= self.max_draft_tokens:
            raise ValueError(
                "expected min_draft_tokens <= num_draft_tokens <= max_draft_tokens, got "
                f"{self.min_draft_tokens}, {self.num_draft_tokens}, {self.max_draft_tokens}"
            )
        for name in (
            "adaptive",
            "lean_draft",
            "int8_draft",
            "draft_cuda_graphs",
            "exact_big_forward",
            "pause_draft",
            "draft_reads_prompt",
            "input_copy",
            "fit_copy_width",
            "spellcheck_copy",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.acceptance not in ACCEPTANCE_MODES:
            raise ValueError(f"acceptance must be one of {ACCEPTANCE_MODES}, got {self.acceptance!r}")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(item.name for item in fields(cls))

    def updated(self, **changes: Any) -> SpeculationOptions:
        """A copy with ``changes`` applied; an unknown name is a ``TypeError`` that lists the known ones."""
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            raise TypeError(f"unknown speculation option(s) {unknown}; known: {', '.join(self.field_names())}")
        return replace(self, **changes)


def recommended_options(draft: object) -> dict[str, Any]:
    """The options a draft was tuned with (``draft.seq2spec_options``, set by the shipped loaders), else none."""
    options = getattr(draft, "seq2spec_options", None)
    return dict(options) if isinstance(options, dict) else {}


@dataclass
class SpeculationStats:
    """Counters of one ``generate``/``correct`` call.

    A *row forward* is one row's share of one batched decoder call; ``tokens_per_big_forward`` is generated
    tokens per big-model row forward (plain greedy decoding has exactly 1).
    """

    big_forwards: int = 0
    big_row_forwards: int = 0
    big_positions: int = 0  # positions fed to the big model's decoder, padding included (rows x width per forward)
    draft_forwards: int = 0
    big_encoder_calls: int = 0
    draft_encoder_calls: int = 0
    generated_tokens: int = 0
    proposed_draft_tokens: int = 0
    accepted_draft_tokens: int = 0
    # of the above, candidates copied from the source (input-copy drafting) and how many of those were kept
    proposed_copy_tokens: int = 0
    accepted_copy_tokens: int = 0
    # rounds that verified no candidate (nothing to propose, or a draft paused because it did not pay)
    rounds_without_candidates: int = 0
    accepted_length_histogram: list[int] = field(default_factory=list)

    @property
    def acceptance_rate(self) -> float:
        """Share of proposed draft tokens that ended up in the output."""
        return self.accepted_draft_tokens / self.proposed_draft_tokens if self.proposed_draft_tokens else 0.0

    @property
    def tokens_per_big_forward(self) -> float:
        return self.generated_tokens / self.big_row_forwards if self.big_row_forwards else 0.0

    def record_round(
        self,
        accepted: list[int],
        emitted: list[int],
        proposed: list[int] | None,
        copied: list[int] | None,
        draft_forwards: int,
        positions: int = 0,
    ) -> None:
        """One round of the loop, per live row: candidates accepted, tokens emitted, real candidates proposed (None:
        the round proposed none) and how many of those were copied from the source (None: no copy); with the draft
        forwards the proposal cost and the ``positions`` the big forward was fed."""
        self.big_forwards += 1
        self.big_row_forwards += len(emitted)
        self.big_positions += positions
        self.generated_tokens += sum(emitted)
        self.draft_forwards += draft_forwards
        if proposed is None:
            self.rounds_without_candidates += 1
            return
        # a filler token the big model happened to agree with is no accepted proposal
        kept = [min(a, e, p) for a, e, p in zip(accepted, emitted, proposed, strict=True)]
        self.proposed_draft_tokens += sum(proposed)
        self.accepted_draft_tokens += sum(kept)
        if copied is not None:
            self.proposed_copy_tokens += sum(copied)
            self.accepted_copy_tokens += sum(map(min, kept, copied))
        self.record_accepted_lengths(accepted)

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
            "big_positions",
            "draft_forwards",
            "big_encoder_calls",
            "draft_encoder_calls",
            "generated_tokens",
            "proposed_draft_tokens",
            "accepted_draft_tokens",
            "proposed_copy_tokens",
            "accepted_copy_tokens",
            "rounds_without_candidates",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for length, count in enumerate(other.accepted_length_histogram):
            self.record_accepted_lengths([length] * count)

    def as_dict(self) -> dict[str, float | int | list[int]]:
        return {
            "big_forwards": self.big_forwards,
            "big_row_forwards": self.big_row_forwards,
            "big_positions": self.big_positions,
            "draft_forwards": self.draft_forwards,
            "big_encoder_calls": self.big_encoder_calls,
            "draft_encoder_calls": self.draft_encoder_calls,
            "generated_tokens": self.generated_tokens,
            "proposed_draft_tokens": self.proposed_draft_tokens,
            "accepted_draft_tokens": self.accepted_draft_tokens,
            "proposed_copy_tokens": self.proposed_copy_tokens,
            "accepted_copy_tokens": self.accepted_copy_tokens,
            "rounds_without_candidates": self.rounds_without_candidates,
            "acceptance_rate": self.acceptance_rate,
            "tokens_per_big_forward": self.tokens_per_big_forward,
            "accepted_length_histogram": list(self.accepted_length_histogram),
        }
