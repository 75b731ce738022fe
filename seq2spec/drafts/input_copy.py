"""Candidates copied from each row's own source tokens (no draft model): for correction tasks the output is mostly
the input."""

from __future__ import annotations

from collections.abc import Callable

import torch

from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.proposal import DecodingBatch, Proposal, ScoreProcessor
from seq2spec.drafts.schedule import LengthSchedule
from seq2spec.drafts.width import WidthChooser

# rewrites a batch's source token ids into the ids to copy from (a spell-checked source, for instance)
SourceRewrite = Callable[[list[list[int]]], list[list[int]]]


def copy_sources(batch: DecodingBatch, rewrite: SourceRewrite | None) -> list[list[int]]:
    """What a copying proposer copies from: each row's source ids, rewritten by ``rewrite`` when given."""
    sources = batch.source_ids()
    if rewrite is None:
        return sources
    rewritten = rewrite(sources)
    if len(rewritten) != len(sources):
        raise ValueError(f"the copy source rewrite returned {len(rewritten)} rows for {len(sources)}")
    return rewritten


def align(source: list[int], output: list[int], position: int) -> int:
    """Where in ``source`` the continuation of ``output`` most plausibly starts.

    The last 3, 2 or 1 tokens of ``output`` are looked up in ``source``; of the matches, the one ending nearest
    ``position`` (the row's current source position) wins. With no match, ``position`` itself.
    """
    for n in (3, 2, 1):
        if len(output) < n:
            continue
        tail = output[-n:]
        best, best_distance = None, None
        for end in range(n, len(source) + 1):
            if source[end - n : end] == tail:
                distance = abs(end - position)
                if best_distance is None or distance < best_distance:
                    best, best_distance = end, distance
        if best is not None:
            return best
    return min(position, len(source))


def pad_rows(rows: list[list[int]], filler: int, device: torch.device | str) -> torch.Tensor:
    """``[len(rows), longest]`` token ids, shorter rows filled with ``filler``."""
    width = max((len(row) for row in rows), default=0)
    padded = [row + [filler] * (width - len(row)) for row in rows]
    return to_device(padded, device).reshape(len(rows), width)


class SourceCopy:
    """Per-row copy state: where each row stands in its source and what it proposes next.

    Each row's proposal length follows its own ``LengthSchedule`` (doubled after a fully kept block, halved
    otherwise); shorter rows are padded with a filler token.
    """

    def __init__(self, schedule: LengthSchedule) -> None:
        self.schedule = schedule
        self.sources: list[list[int]] = []
        self.outputs: list[list[int]] = []
        self.positions: list[int] = []
        self.starts: list[int] = []
        self.candidates: list[list[int]] = []

    def start(self, sources: list[list[int]]) -> None:
        rows = len(sources)
        self.sources = [list(source) for source in sources]
        self.outputs = [[] for _ in range(rows)]
        self.positions, self.starts = [0] * rows, [0] * rows
        self.candidates = [[] for _ in range(rows)]
        self.schedule.reset(rows)

    def propose(self, max_tokens: int) -> list[list[int]]:
        for row, source in enumerate(self.sources):
            start = align(source, self.outputs[row], self.positions[row])
            self.starts[row] = start
            self.candidates[row] = source[start : start + min(self.schedule.lengths[row], max_tokens)]
        return self.candidates

    def follow(self, proposed: list[list[int]], accepted: list[int], bonus: list[int], adapt: list[bool]) -> None:
        """Advance every row past its kept tokens (``proposed[r][:accepted[r]]`` then ``bonus[r]``); rows with
        ``adapt[r]`` proposed this copy and adapt their copy length to how much of it was kept."""
        full, adapting = [], []
        for row, (count, token) in enumerate(zip(accepted, bonus, strict=True)):
            candidates = proposed[row]
            kept = min(count, len(candidates))
            self.outputs[row].extend(candidates[:kept])
            self.outputs[row].append(token)
            self.positions[row] = self.starts[row] + kept
            if adapt[row]:
                adapting.append(row)
                full.append(bool(candidates) and kept == len(candidates))
        self.schedule.update(full, adapting)

    def select(self, rows: list[int]) -> None:
        for name in ("sources", "outputs", "positions", "starts", "candidates"):
            values = getattr(self, name)
            setattr(self, name, [values[row] for row in rows])
        self.schedule.select(rows)


class InputCopyProposer:
    """Proposes what follows each row's aligned position in its own source (see ``align``; with ``rewrite``, in the
    source as ``rewrite`` returns it); no draft forwards. With ``width``, each round's proposals are cut to the
    width it chooses (``WidthChooser``: padding rows to the longest proposal costs where positions cost)."""

    def __init__(
        self, schedule: LengthSchedule, rewrite: SourceRewrite | None = None, width: WidthChooser | None = None
    ) -> None:
        self.copy = SourceCopy(schedule)
        self.rewrite = rewrite
        self.width = width
        self.filler = 0
        self.device: torch.device | str = "cpu"

    def start(self, batch: DecodingBatch) -> None:
        self.copy.start(copy_sources(batch, self.rewrite))
        self.filler, self.device = batch.pad_token_id, batch.device
        if self.width is not None:
            self.width.start(batch.rows)

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        candidates = self.copy.propose(max_tokens)
        if self.width is not None:
            width = self.width.choose([len(row) for row in candidates])
            candidates = self.copy.candidates = [row[:width] for row in candidates]
        counts = [len(row) for row in candidates]
        return Proposal(pad_rows(candidates, self.filler, self.device), counts=counts, copied=counts)

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        rows = len(accepted)
        if self.width is not None:
            self.width.verified([len(row) for row in self.copy.candidates], accepted)
        self.copy.follow(self.copy.candidates, accepted, bonus.tolist(), [True] * rows)

    def select(self, rows: list[int]) -> None:
        self.copy.select(rows)
        if self.width is not None:
            self.width.select(rows)
