"""Pausing a draft model whose kept tokens do not pay for its steps.

A round that drafts emits ``1 + g`` tokens per row (``g``: the row's kept candidates) in ``T``, a whole round: the
draft's steps, the big model's wider verification, and the work every round does (cutting caches back, the loop's
own); a round without candidates emits 1 token in ``T0``. Drafting pays while ``(1 + g) / T > 1 / T0``. Both times
come from the rounds themselves, timed on the host from one proposal to the next (the loop reads each round's
verdict on the host, so a round's work has finished by then); until a round without candidates has been timed,
``T0`` is taken as ``T`` less the draft's steps. The first round after a pause, whose draft forward catches up on
the tokens it missed, is not counted. Where a draft rarely agrees with the big model (a language it was not trained
on, a user's ill-matched pair) it is paused and tried again after a pause that doubles each time it still does not
pay. Which candidates are proposed, or whether any are, never changes what the big model emits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter
from typing import Literal

RoundKind = Literal["first", "drafted", "catch-up", "plain"]


@dataclass
class DraftGate:
    """Per batch: whether the next round drafts, from running means of the rounds' gains and times.

    ``warmup_rounds`` drafting rounds are counted before the first pause (the batch's first round, which feeds the
    prompt, is not timed); a pause lasts 2, 4, ... up to ``max_pause`` rounds while the draft keeps failing to pay.
    """

    warmup_rounds: int = 4
    max_pause: int = 32
    smoothing: float = 0.3  # weight of the newest round in each running mean
    gain: float | None = field(default=None, init=False)  # kept candidates per row per drafting round
    draft_seconds: float | None = field(default=None, init=False)  # the draft's steps in a drafting round
    drafted_round_seconds: float | None = field(default=None, init=False)  # a whole drafting round
    plain_round_seconds: float | None = field(default=None, init=False)  # a whole round without candidates
    rounds: int = field(default=0, init=False)
    drafted_rounds: int = field(default=0, init=False)
    paused_rounds: int = field(default=0, init=False)
    paused_for: int = field(default=0, init=False)
    pause_length: int = field(default=1, init=False)
    _started: float | None = field(default=None, init=False, repr=False)  # when the open round began
    _kind: RoundKind = field(default="first", init=False, repr=False)  # the open round's

    def reset(self) -> None:
        """A new batch: nothing measured yet."""
        self.gain = self.draft_seconds = self.drafted_round_seconds = self.plain_round_seconds = None
        self.rounds = self.drafted_rounds = self.paused_rounds = self.paused_for = 0
        self.pause_length = 1
        self._started, self._kind = None, "first"

    def steps(self, wanted: int) -> int:
        """How many steps the coming round drafts (each call is one round): ``wanted``, or 0 while paused."""
        now = perf_counter()
        if self._started is not None:  # the round before ends here
            seconds = now - self._started
            if self._kind == "drafted":
                self.drafted_round_seconds = self._mean(self.drafted_round_seconds, seconds)
            elif self._kind == "plain":
                self.plain_round_seconds = self._mean(self.plain_round_seconds, seconds)
        after = self._kind if self._started is not None else "first"
        self._started = now
        if wanted > 0 and self.paused_for > 0:
            self.paused_for -= 1
            self.paused_rounds += 1
            self._kind = "plain"
            return 0
        if self.rounds == 0:
            self._kind = "first"
        elif wanted == 0:
            self._kind = "plain"
        else:
            self._kind = "catch-up" if after == "plain" else "drafted"
        return wanted

    def proposed(self, drafted: bool) -> None:
        """The proposal is made, with draft steps or without."""
        if self._started is None:
            return
        if not drafted and self._kind in ("drafted", "catch-up"):
            self._kind = "plain"
        if self._kind == "drafted":
            self.draft_seconds = self._mean(self.draft_seconds, perf_counter() - self._started)

    def verified(self, kept: list[int]) -> None:
        """The round's verdict: each row's kept candidates."""
        self.rounds += 1
        if self._kind not in ("drafted", "catch-up") or not kept:
            return
        self.gain = self._mean(self.gain, sum(kept) / len(kept))
        self.drafted_rounds += 1
        if self.drafted_rounds < self.warmup_rounds:
            return
        if self.pays():
            self.pause_length = 1
        else:
            self.pause_length = min(self.max_pause, 2 * self.pause_length)
            self.paused_for = self.pause_length

    def pays(self) -> bool:
        """Whether drafting emits more tokens per second than rounds without candidates, by the running means."""
        drafted, gain = self.drafted_round_seconds, self.gain
        if gain is None or drafted is None:
            return True
        plain = self.plain_round_seconds
        if plain is None:
            plain = drafted - (self.draft_seconds or 0.0)
        return (1 + gain) * plain > drafted

    def _mean(self, mean: float | None, value: float) -> float:
        return value if mean is None else (1 - self.smoothing) * mean + self.smoothing * value
