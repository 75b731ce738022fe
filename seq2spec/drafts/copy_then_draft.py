"""Input copy where it aligns, the draft model where it does not (correction tasks with a draft model)."""

from __future__ import annotations

import torch

from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.proposal import DecodingBatch, Proposal, ScoreProcessor
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts.input_copy import SourceCopy, SourceRewrite, copy_sources, pad_rows
from seq2spec.drafts.schedule import LengthSchedule


class CopyThenDraftProposer:
    """Each round the draft model first catches up on the row's accepted tokens it has not seen (one batched forward
    over a per-row, right-padded block) and predicts the next token. A row whose copy candidates start with that
    same token proposes the copy (long, free); a row where they disagree (an error being corrected, or no
    alignment) proposes the draft model's own greedy continuation. The draft model therefore runs once per round
    for copying rows and ``k`` times only while some row needs it. Copying rows adapt their copy length with
    ``copy_schedule``, drafting rows their draft length with ``draft_schedule``. With ``rewrite`` the copy comes from
    the source as ``rewrite`` returns it (a spell-checked source, for instance).
    """

    def __init__(
        self,
        runner: DecoderRunner,
        copy_schedule: LengthSchedule,
        draft_schedule: LengthSchedule,
        rewrite: SourceRewrite | None = None,
    ) -> None:
        self.runner = runner
        self.rewrite = rewrite
        self.copy = SourceCopy(copy_schedule)
        self.draft_schedule = draft_schedule
        self.filler = 0
        self.eos = torch.empty(0, dtype=torch.long)
        self.pending: list[list[int]] = []  # accepted tokens the draft model has not seen
        self.candidates: list[list[int]] = []
        self.copying: list[bool] = []
        self.fed_drafts = 0  # draft tokens fed after the catch-up forward this round (the same for every row)

    def start(self, batch: DecodingBatch) -> None:
        self.copy.start(copy_sources(batch, self.rewrite))
        self.draft_schedule.reset(batch.rows)
        self.filler = batch.pad_token_id
        self.eos = torch.tensor(batch.eos_token_ids, dtype=torch.long, device=self.runner.device)
        self.pending = batch.prompt.tolist()
        self.candidates = [[] for _ in range(batch.rows)]
        self.copying = [False] * batch.rows

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        rows = len(self.pending)
        device = self.runner.device
        self.fed_drafts = 0
        if max_tokens <= 0:
            self.candidates = [[] for _ in range(rows)]
            self.copying = [False] * rows
            return Proposal(torch.empty((rows, 0), dtype=torch.long, device=device))
        widths = [len(p) for p in self.pending]
        logits = self.runner.forward(pad_rows(self.pending, self.filler, device))
        forwards = 1
        scores = logits[torch.arange(rows, device=device), to_device(widths, device) - 1]
        self.runner.keep(widths, fed=max(widths))  # drop the right padding
        self.pending = [[] for _ in range(rows)]
        first = process(torch.empty((rows, 0), dtype=torch.long, device=device), scores).argmax(dim=-1)

        copy_lists = self.copy.propose(max_tokens)
        first_list = first.tolist()
        self.copying = [bool(c) and c[0] == f for c, f in zip(copy_lists, first_list, strict=True)]
        wanted = [
            0 if copying else min(length, max_tokens)
            for copying, length in zip(self.copying, self.draft_schedule.lengths, strict=True)
        ]
        drafted = first[:, None]
        ended = torch.isin(first, self.eos)
        for _ in range(max(0, max(wanted) - 1)):
            needed = [w > drafted.shape[1] for w in wanted]
            if not any(n and not e for n, e in zip(needed, ended.tolist(), strict=True)):
                break
            scores = process(drafted, self.runner.forward(drafted[:, -1:])[:, -1])
            forwards += 1
            self.fed_drafts += 1
            token = scores.argmax(dim=-1)
            drafted = torch.cat([drafted, token[:, None]], dim=1)
            ended |= torch.isin(token, self.eos)
        drafted_lists = drafted.tolist()
        self.candidates = [
            list(copy_lists[row]) if self.copying[row] else drafted_lists[row][: wanted[row]] for row in range(rows)
        ]
        counts = [len(c) for c in self.candidates]
        copied = [count if copying else 0 for count, copying in zip(counts, self.copying, strict=True)]
        return Proposal(
            pad_rows(self.candidates, self.filler, device), counts=counts, copied=copied, draft_forwards=forwards
        )

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        bonus_list = bonus.tolist()
        # The copy alignment follows every kept token; only copying rows adapt their copy length.
        self.copy.follow(self.candidates, accepted, bonus_list, self.copying)
        keep_fed, full, drafting = [], [], []
        for row, (count, token) in enumerate(zip(accepted, bonus_list, strict=True)):
            proposed = self.candidates[row]
            kept = min(count, len(proposed))
            # Draft tokens the model was fed this round and that the big model kept stay in its cache.
            in_cache = 0 if self.copying[row] else min(kept, self.fed_drafts)
            keep_fed.append(in_cache)
            self.pending[row] = self.pending[row] + proposed[in_cache:kept] + [token]  # nothing fed: keep adding
            if not self.copying[row] and proposed:
                drafting.append(row)
                full.append(kept == len(proposed))
        self.draft_schedule.update(full, drafting)
        if self.fed_drafts:
            self.runner.keep(keep_fed, fed=self.fed_drafts)

    def select(self, rows: list[int]) -> None:
        self.runner.select(rows)
        self.copy.select(rows)
        self.draft_schedule.select(rows)
        for name in ("pending", "candidates", "copying"):
            values = getattr(self, name)
            setattr(self, name, [values[row] for row in rows])
