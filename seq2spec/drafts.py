"""Where candidate tokens come from. A proposer knows nothing of verification; the loop tells it what was kept.

Protocol, per round: ``propose(k, process)`` returns ``[rows, k']`` candidates (``k' <= k``) for the tokens that
follow each row's last accepted token; ``accept(accepted, bonus)`` says that row ``r`` kept its first
``accepted[r]`` candidates followed by the big model's own token ``bonus[r]``; ``select(rows)`` drops finished rows.
``draft_probs`` is the distribution each candidate was sampled from (``[rows, k', vocab]``), or None when the
candidates were chosen deterministically.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch

from seq2spec.runner import DecoderRunner

# process(candidates_so_far [rows, j], scores [rows, vocab]) -> processed scores
ScoreProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Proposer(Protocol):
    forward_calls: int
    # True: the proposer sizes each row's proposal itself and the loop only caps the width
    adapts_per_row: bool
    draft_probs: torch.Tensor | None

    @property
    def proposed_counts(self) -> list[int] | None:
        """Real (non-filler) candidates per row in the last proposal; None when every row got the full width."""

    def start(self, first_tokens: torch.Tensor) -> None: ...

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor: ...

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None: ...

    def select(self, rows: torch.Tensor) -> None: ...


class NoDraft:
    """Proposes nothing: the loop degenerates to plain greedy decoding, one big forward per token."""

    forward_calls = 0
    adapts_per_row = False
    proposed_counts = None
    draft_probs = None

    def start(self, first_tokens: torch.Tensor) -> None:
        self._rows = first_tokens.shape[0]
        self._device = first_tokens.device

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor:
        return torch.empty((self._rows, 0), dtype=torch.long, device=self._device)

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None:
        pass

    def select(self, rows: torch.Tensor) -> None:
        self._rows = rows.numel()


class DraftModelProposer:
    """Proposals from a smaller encoder-decoder (or any model sharing the big model's vocabulary): its argmax, or
    samples from its processed distribution when ``generator`` is given (speculative sampling).

    The draft's cache always lags two tokens behind the accepted text: each round starts by feeding the last
    accepted token and the big model's bonus token together, which keeps every row's input the same width no
    matter how many candidates it had accepted (the one recomputed entry costs next to nothing).

    With ``min_confidence`` > 0 a round ends early once every row has either proposed its end or proposed a token
    the draft gave less than that probability: the tokens after an unsure one are rarely accepted, and each costs
    a draft forward. Which candidates are proposed never changes what the big model emits.
    """

    adapts_per_row = False
    proposed_counts = None

    def __init__(
        self,
        runner: DecoderRunner,
        eos_token_ids: tuple[int, ...],
        *,
        sample: bool = False,
        generator: torch.Generator | None = None,
        min_confidence: float = 0.0,
    ) -> None:
        self.runner = runner
        self.min_confidence = min_confidence
        self.eos = torch.tensor(eos_token_ids, dtype=torch.long, device=runner.device)
        self.pending = torch.empty(0)
        self.candidates = torch.empty(0)
        self.sample = sample
        self.generator = generator
        self.draft_probs: torch.Tensor | None = None

    @property
    def forward_calls(self) -> int:
        return self.runner.forward_calls

    def start(self, first_tokens: torch.Tensor) -> None:
        self.pending = first_tokens.to(self.runner.device)

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor:
        rows = self.pending.shape[0]
        self.candidates = candidates = torch.empty((rows, 0), dtype=torch.long, device=self.runner.device)
        self.draft_probs = None
        if max_tokens <= 0:
            return candidates
        ended = torch.zeros(rows, dtype=torch.bool, device=self.runner.device)
        step_input = self.pending
        distributions = []
        for _ in range(max_tokens):
            scores = process(candidates, self.runner.forward(step_input)[:, -1])
            probs = torch.softmax(scores.float(), dim=-1) if self.sample or self.min_confidence > 0 else None
            if self.sample:
                token = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)
                distributions.append(probs)
            else:
                token = scores.argmax(dim=-1)
            candidates = torch.cat([candidates, token[:, None]], dim=1)
            if self.eos.numel():
                ended |= torch.isin(token, self.eos)
            if self.min_confidence > 0:
                ended |= probs.gather(1, token[:, None]).squeeze(1) < self.min_confidence
            if bool(ended.all()):  # no row would keep a further candidate (or every row is unsure)
                break
            step_input = token[:, None]
        self.candidates = candidates
        self.draft_probs = torch.stack(distributions, dim=1) if distributions else None
        return candidates

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None:
        accepted = accepted.to(self.runner.device)
        bonus = bonus.to(self.runner.device)[:, None]
        if self.candidates.shape[1] == 0:  # nothing was fed this round: the bonus joins the pending tokens
            self.pending = torch.cat([self.pending, bonus], dim=1)
            return
        width = self.pending.shape[1]
        fed = width + self.candidates.shape[1] - 1
        # Keep everything before the last accepted token; it is fed again with the bonus token next round.
        self.runner.keep(width - 1 + accepted, fed=fed)
        sequence = torch.cat([self.pending, self.candidates], dim=1)
        last_accepted = sequence.gather(1, (width - 1 + accepted)[:, None])
        self.pending = torch.cat([last_accepted, bonus], dim=1)

    def select(self, rows: torch.Tensor) -> None:
        rows = rows.to(self.runner.device)
        self.runner.select(rows)
        self.pending = self.pending.index_select(0, rows)
        self.candidates = self.candidates.index_select(0, rows)
        if self.draft_probs is not None:
            self.draft_probs = self.draft_probs.index_select(0, rows)


class InputCopyProposer:
    """Candidates copied from each row's own source tokens (no draft model): for correction tasks the output
    is mostly the input.

    Alignment: the last 3, 2 or 1 generated tokens are looked up in the row's source; of the matches, the one
    ending nearest the row's current source position wins, and the tokens that follow it are proposed. With no
    match, the tokens at the current position are proposed. Each row adapts its own proposal length (doubled
    after a fully accepted block, halved otherwise); shorter rows are padded with a filler token, which the big
    model almost always rejects and which can never change the output.
    """

    forward_calls = 0
    adapts_per_row = True
    draft_probs = None

    def __init__(
        self,
        sources: list[list[int]],
        filler_token_id: int,
        initial_length: int,
        min_length: int = 1,
        max_length: int = 32,
        device: torch.device | str = "cpu",
    ) -> None:
        self.sources = [list(source) for source in sources]
        self.outputs: list[list[int]] = [[] for _ in sources]
        self.positions = [0] * len(sources)
        self.lengths = [initial_length] * len(sources)
        self.filler = filler_token_id
        self.min_length, self.max_length = min_length, max_length
        self.device = device
        self.starts = [0] * len(sources)
        self.candidates: list[list[int]] = [[] for _ in sources]

    def start(self, first_tokens: torch.Tensor) -> None:
        self.device = first_tokens.device

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor:
        for row, source in enumerate(self.sources):
            start = self._align(source, self.outputs[row], self.positions[row])
            self.starts[row] = start
            self.candidates[row] = source[start : start + min(self.lengths[row], max_tokens)]
        width = max((len(c) for c in self.candidates), default=0)
        padded = [c + [self.filler] * (width - len(c)) for c in self.candidates]
        return torch.tensor(padded, dtype=torch.long, device=self.device).reshape(len(padded), width)

    @property
    def proposed_counts(self) -> list[int]:
        return [len(c) for c in self.candidates]

    @property
    def copied_counts(self) -> list[int]:
        """Candidates per row that were copied from the source (all of them, here)."""
        return self.proposed_counts

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None:
        for row, (count, token) in enumerate(zip(accepted.tolist(), bonus.tolist(), strict=True)):
            proposed = self.candidates[row]
            kept = min(count, len(proposed))
            self.outputs[row].extend(proposed[:kept])
            self.outputs[row].append(token)
            self.positions[row] = self.starts[row] + kept
            if proposed and kept == len(proposed):
                self.lengths[row] = min(self.max_length, 2 * self.lengths[row])
            else:
                self.lengths[row] = max(self.min_length, self.lengths[row] // 2)

    def select(self, rows: torch.Tensor) -> None:
        keep = rows.tolist()
        for name in ("sources", "outputs", "positions", "lengths", "starts", "candidates"):
            values = getattr(self, name)
            setattr(self, name, [values[i] for i in keep])

    @staticmethod
    def _align(source: list[int], output: list[int], position: int) -> int:
        """Where in ``source`` the continuation of ``output`` most plausibly starts."""
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


class CopyThenDraftProposer:
    """Input copy where it aligns, the draft model where it does not (for correction tasks with a draft model).

    Each round the draft model first catches up on the row's accepted tokens it has not seen (one batched forward
    over a per-row, right-padded block) and predicts the next token. A row whose copy candidates start with that
    same token proposes the copy (long, free); a row where they disagree (an error being corrected, or no
    alignment) proposes the draft model's own greedy continuation. The draft model therefore runs once per round
    for copying rows and ``k`` times only while some row needs it. Each row adapts its copy length (doubled after
    a fully kept block, halved otherwise) and its draft length (+2 after a fully kept block, -1 otherwise).
    """

    adapts_per_row = True
    draft_probs = None

    def __init__(
        self,
        runner: DecoderRunner,
        sources: list[list[int]],
        filler_token_id: int,
        eos_token_ids: tuple[int, ...],
        *,
        initial_length: int,
        min_length: int = 1,
        max_length: int = 16,
        max_copy_length: int = 32,
    ) -> None:
        self.runner = runner
        self.copy = InputCopyProposer(
            sources, filler_token_id, initial_length, min_length, max_copy_length, device=runner.device
        )
        self.filler = filler_token_id
        self.eos = torch.tensor(eos_token_ids, dtype=torch.long, device=runner.device)
        self.min_length, self.max_length = min_length, max_length
        self.draft_lengths = [initial_length] * len(sources)
        self.pending: list[list[int]] = [[] for _ in sources]  # accepted tokens the draft model has not seen
        self.candidates: list[list[int]] = [[] for _ in sources]
        self.copying: list[bool] = [False] * len(sources)
        self.fed_drafts = 0  # draft tokens fed after the catch-up forward this round (the same for every row)

    @property
    def forward_calls(self) -> int:
        return self.runner.forward_calls

    @property
    def proposed_counts(self) -> list[int]:
        return [len(c) for c in self.candidates]

    @property
    def copied_counts(self) -> list[int]:
        return [len(c) if copying else 0 for c, copying in zip(self.candidates, self.copying, strict=True)]

    def start(self, first_tokens: torch.Tensor) -> None:
        self.pending = [list(row) for row in first_tokens.tolist()]  # the decoder prompt

    def propose(self, max_tokens: int, process: ScoreProcessor) -> torch.Tensor:
        rows = len(self.pending)
        device = self.runner.device
        self.fed_drafts = 0
        if max_tokens <= 0:
            self.candidates = [[] for _ in range(rows)]
            return torch.empty((rows, 0), dtype=torch.long, device=device)
        widths = [len(p) for p in self.pending]
        block = torch.tensor([p + [self.filler] * (max(widths) - len(p)) for p in self.pending], device=device)
        logits = self.runner.forward(block)
        last = torch.tensor(widths, device=device) - 1
        scores = logits[torch.arange(rows, device=device), last]
        self.runner.keep(torch.tensor(widths, device=device), fed=block.shape[1])  # drop the right padding
        self.pending = [[] for _ in range(rows)]
        no_candidates = torch.empty((rows, 0), dtype=torch.long, device=device)
        first = process(no_candidates, scores).argmax(dim=-1)

        self.copy.propose(max_tokens, process)
        copy_lists = self.copy.candidates
        first_list = first.tolist()
        self.copying = [bool(c) and c[0] == f for c, f in zip(copy_lists, first_list, strict=True)]
        wanted = [
            0 if copying else min(length, max_tokens)
            for copying, length in zip(self.copying, self.draft_lengths, strict=True)
        ]
        drafted = first[:, None]
        ended = torch.isin(first, self.eos)
        steps = max(wanted) - 1
        for _ in range(max(0, steps)):
            needed = [w > drafted.shape[1] for w in wanted]
            if not any(n and not e for n, e in zip(needed, ended.tolist(), strict=True)):
                break
            scores = process(drafted, self.runner.forward(drafted[:, -1:])[:, -1])
            self.fed_drafts += 1
            token = scores.argmax(dim=-1)
            drafted = torch.cat([drafted, token[:, None]], dim=1)
            ended |= torch.isin(token, self.eos)
        drafted_lists = drafted.tolist()
        self.candidates = [
            copy_lists[row] if self.copying[row] else drafted_lists[row][: wanted[row]] for row in range(rows)
        ]
        width = max(len(c) for c in self.candidates)
        padded = [c + [self.filler] * (width - len(c)) for c in self.candidates]
        return torch.tensor(padded, dtype=torch.long, device=device).reshape(rows, width)

    def accept(self, accepted: torch.Tensor, bonus: torch.Tensor) -> None:
        # The copy alignment follows every kept token; only copying rows adapt their copy length.
        copy_lengths = list(self.copy.lengths)
        self.copy.candidates = self.candidates
        self.copy.accept(accepted, bonus)
        self.copy.lengths = [
            new if copying else old
            for new, old, copying in zip(self.copy.lengths, copy_lengths, self.copying, strict=True)
        ]
        keep_fed = []
        for row, (count, token) in enumerate(zip(accepted.tolist(), bonus.tolist(), strict=True)):
            proposed = self.candidates[row]
            kept = min(count, len(proposed))
            # Draft tokens the model was fed this round and that the big model kept stay in its cache.
            in_cache = 0 if self.copying[row] else min(kept, self.fed_drafts)
            keep_fed.append(in_cache)
            self.pending[row] = self.pending[row] + proposed[in_cache:kept] + [token]  # nothing fed: keep adding
            if not self.copying[row] and proposed:
                full = kept == len(proposed)
                length = self.draft_lengths[row] + (2 if full else -1)
                self.draft_lengths[row] = max(self.min_length, min(self.max_length, length))
        if self.fed_drafts:
            self.runner.keep(torch.tensor(keep_fed, device=self.runner.device), fed=self.fed_drafts)

    def select(self, rows: torch.Tensor) -> None:
        self.runner.select(rows.to(self.runner.device))
        self.copy.select(rows)
        keep = rows.tolist()
        for name in ("draft_lengths", "pending", "candidates", "copying"):
            values = getattr(self, name)
            setattr(self, name, [values[i] for i in keep])
