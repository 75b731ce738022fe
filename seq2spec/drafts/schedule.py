"""How long each row's next proposal is: grown after a fully accepted proposal, shrunk otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Rule = Literal["add", "double"]


@dataclass
class LengthSchedule:
    """Per-row proposal lengths within ``[minimum, maximum]``.

    ``rule="add"``: +2 after a fully accepted proposal, -1 otherwise (a draft model, whose every token costs a
    forward). ``rule="double"``: doubled or halved (input copy, whose candidates cost nothing to make).
    ``adaptive=False`` keeps every row at ``initial``.
    """

    initial: int
    minimum: int = 1
    maximum: int = 16
    rule: Rule = "add"
    adaptive: bool = True

    def __post_init__(self) -> None:
        if self.rule not in ("add", "double"):
            raise ValueError(f"rule must be 'add' or 'double', got {self.rule!r}")
        self.initial = max(self.minimum, min(self.maximum, self.initial))
        self.lengths: list[int] = []

    def reset(self, rows: int) -> None:
        """A new batch: every row starts at ``initial``."""
        self.lengths = [self.initial] * rows

    def batch_length(self) -> int:
        """One length for the whole batch: the rounded mean of the rows' lengths (a draft model drafts all rows
        together, so the batch shares one number of steps)."""
        if not self.lengths:
            return self.initial
        return int(round(sum(self.lengths) / len(self.lengths)))

    def update(self, full: list[bool], rows: list[int] | None = None) -> None:
        """``full[i]``: row ``rows[i]`` (default: row ``i``) had its whole proposal accepted."""
        if not self.adaptive:
            return
        for row, was_full in zip(rows if rows is not None else range(len(full)), full, strict=True):
            length = self.lengths[row]
            if self.rule == "add":
                length = length + 2 if was_full else length - 1
            else:
                length = 2 * length if was_full else length // 2
            self.lengths[row] = max(self.minimum, min(self.maximum, length))

    def select(self, rows: list[int]) -> None:
        self.lengths = [self.lengths[row] for row in rows]
