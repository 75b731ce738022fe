"""How wide a round of copied candidates is: the rows' proposals cut to the width that emits the most per second.

A verification forward feeds every row as many positions as the longest proposal (shorter rows are padded), so one
row copying 20 candidates makes each of the other rows pay for 21 positions. Where the big model's forward costs
little per position (a GPU, or one row), that is free and every proposal is kept whole; where it costs in proportion
to the positions fed (a CPU with many rows) the padding is most of the work. ``WidthChooser`` decides per round:

- what a round costs, ``a + b * positions`` seconds (positions: rows x (width + 1)), fitted by least squares on the
  rounds' own times, taken on the host from one proposal to the next (the loop reads each verdict on the host, so a
  round's work has finished by then), the older rounds weighing less (``RoundCost``, kept across batches);
- what each row keeps: a candidate that follows a kept one is kept with probability ``q`` (per row, from the
  candidates it kept and the proposals the big model broke off, the older rounds weighing less), so ``j``
  candidates keep ``q + q^2 + ... + q^j`` on average;
- the width whose expected emitted tokens (one per row, plus the kept candidates) per second of round is highest.

Until the cost is fitted, and wherever a position costs nothing, every proposal is kept whole. Which candidates are
proposed never changes what the big model emits: each kept token is its own greedy choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from time import perf_counter

NEGLIGIBLE = 0.02  # a share of a round's time that cutting proposals is not searched for


@dataclass
class RoundCost:
    """A round's seconds as ``per_round + per_position * positions``, fitted on the rounds observed, each weighing
    ``forgetting`` times the one after it; no fit before ``min_rounds`` rounds or while their positions barely vary."""

    forgetting: float = 0.95
    min_rounds: int = 6
    rounds: int = field(default=0, init=False)
    _sums: list[float] = field(default_factory=lambda: [0.0] * 5, init=False, repr=False)  # w, x, y, xx, xy

    def observe(self, positions: int, seconds: float) -> None:
        """One round that fed ``positions`` positions in ``seconds``."""
        decay, x, y = self.forgetting, float(positions), seconds
        for index, value in enumerate((1.0, x, y, x * x, x * y)):
            self._sums[index] = decay * self._sums[index] + value
        self.rounds += 1

    def fitted(self) -> tuple[float, float] | None:
        """``(per_round, per_position)`` seconds, both at least 0, or None while not enough is known."""
        if self.rounds < self.min_rounds:
            return None
        weight, x, y, xx, xy = self._sums
        mean_x, mean_y = x / weight, y / weight
        variance = xx / weight - mean_x * mean_x
        if variance <= (0.1 * mean_x) ** 2:  # positions too alike to tell the two parts apart
            return None
        per_position = max(0.0, (xy / weight - mean_x * mean_y) / variance)
        return max(0.0, mean_y - per_position * mean_x), per_position


def best_width(lengths: Sequence[int], agreement: Sequence[float], per_round: float, per_position: float) -> int:
    """The width (at least 1, at most the longest of ``lengths``) whose expected emitted tokens per second is
    highest: each row emits one token, plus ``q + q^2 + ...`` for its first ``min(length, width)`` candidates
    (``q``: its ``agreement``), in a round of ``per_round + per_position * rows * (width + 1)`` seconds. Ties go
    to the narrower width."""
    rows, widest = len(lengths), max(lengths, default=0)
    if rows == 0 or widest <= 1:
        return max(widest, 1)
    if per_position * rows * (widest - 1) <= NEGLIGIBLE * (per_round + per_position * rows * (widest + 1)):
        return widest  # the narrowest width would save next to nothing: not worth the search
    powers = [1.0] * rows
    gain, best, best_rate = float(rows), 1, -1.0
    for width in range(1, widest + 1):
        for row, (length, kept) in enumerate(zip(lengths, agreement, strict=True)):
            if length >= width:
                powers[row] *= kept
                gain += powers[row]
        seconds = per_round + per_position * rows * (width + 1)
        rate = gain / seconds if seconds > 0 else float(width)
        if rate > best_rate * (1 + 1e-9):
            best, best_rate = width, rate
    return best


@dataclass
class WidthChooser:
    """Per batch of one proposer: ``choose`` at each proposal, ``verified`` with its verdict, ``select`` when rows
    leave. ``cost`` is shared by the batches of a speculator (the same model on the same device)."""

    cost: RoundCost
    prior_kept: float = 4.0  # a new row's agreement: as if 4 candidates had been kept and 1 proposal broken off
    prior_broken: float = 1.0
    forgetting: float = 0.8
    _kept: list[float] = field(default_factory=list, init=False, repr=False)
    _broken: list[float] = field(default_factory=list, init=False, repr=False)
    _started: float | None = field(default=None, init=False, repr=False)
    _positions: int = field(default=0, init=False, repr=False)
    _first: bool = field(default=True, init=False, repr=False)

    def start(self, rows: int) -> None:
        """A new batch of ``rows``: its first round (which also starts the big model's cache) is not timed."""
        self._kept, self._broken = [self.prior_kept] * rows, [self.prior_broken] * rows
        self._started, self._first = None, True

    def agreement(self) -> list[float]:
        return [kept / (kept + broken) for kept, broken in zip(self._kept, self._broken, strict=True)]

    def choose(self, lengths: Sequence[int]) -> int:
        """The width of this round's proposals (each row's ``lengths`` are what it would propose); ends the round
        before it, whose time the cost is fitted on."""
        now = perf_counter()
        if self._started is not None and not self._first:
            self.cost.observe(self._positions, now - self._started)
        self._first = self._started is None
        self._started = now
        widest = max(lengths, default=0)
        fitted = self.cost.fitted()
        width = widest if fitted is None else min(widest, best_width(lengths, self.agreement(), *fitted))
        self._positions = len(lengths) * (max((min(length, width) for length in lengths), default=0) + 1)
        return width

    def verified(self, proposed: Sequence[int], kept: Sequence[int]) -> None:
        """Each row's candidates proposed and kept this round."""
        decay = self.forgetting
        for row, (count, accepted) in enumerate(zip(proposed, kept, strict=True)):
            if count == 0:
                continue
            accepted = min(accepted, count)
            self._kept[row] = decay * self._kept[row] + accepted
            self._broken[row] = decay * self._broken[row] + (1.0 if accepted < count else 0.0)

    def select(self, rows: Sequence[int]) -> None:
        """Only ``rows`` (positions among the current ones) stay."""
        self._kept = [self._kept[row] for row in rows]
        self._broken = [self._broken[row] for row in rows]
