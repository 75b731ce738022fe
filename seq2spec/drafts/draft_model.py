"""Proposals from a draft model: a smaller encoder-decoder, or a decoder-only assistant reading the big encoder."""

from __future__ import annotations

import torch

from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.proposal import DecodingBatch, Proposal, ScoreProcessor
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.drafts.gate import DraftGate
from seq2spec.drafts.schedule import LengthSchedule


class DraftModelProposer:
    """The draft's argmax continuation, or samples from its processed distribution under speculative sampling.

    The draft's cache always lags two tokens behind the accepted text: each round starts by feeding the last
    accepted token and the big model's bonus token together, which keeps every row's input the same width no
    matter how many candidates it had accepted (the one recomputed entry costs next to nothing).

    The batch drafts ``schedule.batch_length()`` tokens (the draft runs all rows together). With ``min_confidence``
    > 0 a round ends early once every row has either proposed its end or proposed a token the draft gave less than
    that probability: the tokens after an unsure one are rarely accepted, and each costs a draft forward. Which
    candidates are proposed never changes what the big model emits.

    With ``transcript_only`` the draft reads the prompt from ``batch.transcript_start`` on: a Whisper draft then
    sees no previous text or initial prompt, which a draft distilled without them (as the shipped one) reads poorly.

    With a ``gate`` (``gate.py``) a round proposes nothing while the draft's kept tokens do not pay for its steps.
    """

    def __init__(
        self,
        runner: DecoderRunner,
        schedule: LengthSchedule,
        *,
        min_confidence: float = 0.0,
        transcript_only: bool = True,
        gate: DraftGate | None = None,
    ) -> None:
        self.runner = runner
        self.gate = gate
        self.transcript_only = transcript_only
        self.schedule = schedule
        self.min_confidence = min_confidence
        self.pending = torch.empty(0)
        self.candidates = torch.empty(0)
        self.eos = torch.empty(0, dtype=torch.long)
        self.sample = False
        self.generator: torch.Generator | None = None

    def start(self, batch: DecodingBatch) -> None:
        device = self.runner.device
        start = batch.transcript_start if self.transcript_only else 0
        self.pending = batch.prompt[:, start:].to(device)
        padding = [max(0, pad - start) for pad in batch.prompt_padding]
        if any(padding):
            self.runner.pad_prompt(padding)
        self.eos = torch.tensor(batch.eos_token_ids, dtype=torch.long, device=device)
        self.sample, self.generator = batch.do_sample, batch.generator
        self.schedule.reset(batch.rows)
        if self.gate is not None:
            self.gate.reset()

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        rows = self.pending.shape[0]
        steps = min(self.schedule.batch_length(), max_tokens)
        if self.gate is not None:
            steps = self.gate.steps(steps)
        candidates = torch.empty((rows, 0), dtype=torch.long, device=self.runner.device)
        forwards = 0
        distributions = []
        if steps > 0:
            ended = torch.zeros(rows, dtype=torch.bool, device=self.runner.device)
            step_input = self.pending
            for _ in range(steps):
                scores = process(candidates, self.runner.forward(step_input)[:, -1])
                forwards += 1
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
        if self.gate is not None:
            self.gate.proposed(forwards > 0)
        draft_probs = torch.stack(distributions, dim=1) if distributions else None
        return Proposal(candidates, draft_probs=draft_probs, draft_forwards=forwards)

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        proposed = self.candidates.shape[1]
        if self.gate is not None:
            self.gate.verified([min(count, proposed) for count in accepted])
        bonus = bonus.to(self.runner.device)[:, None]
        if proposed == 0:  # nothing was fed this round: the bonus joins the pending tokens
            self.pending = torch.cat([self.pending, bonus], dim=1)
            return
        self.schedule.update([count >= proposed for count in accepted])
        width = self.pending.shape[1]
        kept = [width - 1 + count for count in accepted]
        # Keep everything before the last accepted token; it is fed again with the bonus token next round.
        self.runner.keep(kept, fed=width + proposed - 1)
        sequence = torch.cat([self.pending, self.candidates], dim=1)
        index = to_device(kept, sequence.device)[:, None]
        self.pending = torch.cat([sequence.gather(1, index), bonus], dim=1)

    def select(self, rows: list[int]) -> None:
        self.runner.select(rows)
        index = to_device(rows, self.runner.device)
        self.pending = self.pending.index_select(0, index)
        self.candidates = self.candidates.index_select(0, index)
        self.schedule.select(rows)
