"""The blockwise-parallel loop: propose, verify in one big forward, accept per row, cut caches back, drop rows.

With the greedy verifier every token the loop emits is the big model's argmax after ``generate``'s logits
processors, given exactly the tokens before it, so the result is the big model's greedy output whatever the
proposer suggests. With the sampling verifier every token follows the big model's sampling distribution.

Per round the loop copies one small tensor to the host (each row's accepted count, emitted count and whether it
finished); every other decision (how many candidates to ask for, which rows leave, what the caches drop) is made
from host-side numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.plan import GenerationPlan
from seq2spec.decoding.proposal import DecodingBatch, Proposal, Proposer
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.decoding.scores import ScoreRecorder
from seq2spec.decoding.sequences import PrefixProcessor, TokenBuffer
from seq2spec.decoding.verify import GreedyVerifier, Verifier
from seq2spec.options import SpeculationStats


def speculative_decode(
    big: DecoderRunner,
    proposer: Proposer,
    plan: GenerationPlan,
    batch: DecodingBatch,
    stats: SpeculationStats,
    *,
    verifier: Verifier | None = None,
    position_limit: int | None = None,
    fed_limit: int | None = None,
    recorder: ScoreRecorder | None = None,
    capture_draft_processing: bool = False,
) -> torch.Tensor:
    """Decode the batch held by ``big``; returns ``[rows, P + T]`` tokens as ``generate`` lays them out.

    ``verifier`` defaults to greedy verification (output identical to ``generate(do_sample=False)``).
    ``position_limit``: the decoder's number of learned positions; no token is fed past the last one.
    ``fed_limit``: the most tokens one row is fed per forward (where a decoder's arithmetic depends on it).
    ``recorder`` collects the scores and logits of the emitted tokens.
    ``capture_draft_processing``: run the draft's logits processing as a CUDA graph where it can be captured.
    """
    verifier = verifier if verifier is not None else GreedyVerifier()
    rounds = Rounds(big, proposer, plan, verifier, recorder, capture_draft_processing)
    if any(batch.prompt_padding):
        big.pad_prompt(list(batch.prompt_padding))
    proposer.start(batch)
    while rounds.lengths:
        result = rounds.run(rounds.max_tokens(position_limit, fed_limit))
        stats.record_round(
            result.accepted,
            result.emitted,
            result.proposed,
            result.proposal.copied,
            result.proposal.draft_forwards,
            result.positions,
        )
        if any(result.finished):
            if all(result.finished):
                break
            result = rounds.leave(result)
        rounds.cut_back(result)
    return rounds.buffer.output()


@dataclass(frozen=True)
class RoundResult:
    """What one round decided for each live row, as host numbers: the candidates it kept, the tokens it emitted and
    whether it finished; ``bonus`` (on the device) is the big model's own token after the kept candidates."""

    proposal: Proposal
    accepted: list[int]
    emitted: list[int]
    finished: list[int]
    bonus: torch.Tensor
    positions: int = 0  # fed to the big model's forward: rows x (last tokens + candidates), padding included

    @property
    def proposed(self) -> list[int] | None:
        """Each row's real candidates (fillers excluded), or None where the round proposed none."""
        return self.proposal.real_counts() if self.proposal.tokens.shape[1] else None


class Rounds:
    """One batch between rounds: the tokens generated so far, the rows still decoding (``live_index``, in the runners'
    order, with their lengths on the host) and each row's last emitted token, which the next forward feeds first."""

    def __init__(
        self,
        big: DecoderRunner,
        proposer: Proposer,
        plan: GenerationPlan,
        verifier: Verifier,
        recorder: ScoreRecorder | None,
        capture_draft_processing: bool,
    ) -> None:
        self.big, self.proposer, self.plan, self.verifier, self.recorder = big, proposer, plan, verifier, recorder
        self.device = big.device
        self.prompt = plan.prompt.to(self.device)
        rows, self.prompt_length = self.prompt.shape
        self.limit = self.prompt_length + plan.max_new_tokens
        self.buffer = TokenBuffer(self.prompt, self.limit, plan.pad_token_id)
        self.processor = PrefixProcessor(plan.logits_processor, self.buffer)
        capture = capture_draft_processing
        self.draft_processor = PrefixProcessor(plan.draft_logits_processor, self.buffer, capture_steps=capture)
        self.eos = torch.tensor(plan.eos_token_ids, dtype=torch.long, device=self.device)
        self.live_index = torch.arange(rows, device=self.device)
        self.lengths = [self.prompt_length] * rows  # host copy of each live row's buffer length
        self.last = self.prompt  # fed with the first candidates; afterwards each row's last emitted token

    def max_tokens(self, position_limit: int | None, fed_limit: int | None = None) -> int:
        """Never more candidates than the row with the most room left can use, nor (learned positions) any fed past
        the decoder's last position, nor more than ``fed_limit`` tokens fed per row."""
        count = max(1, self.limit - min(self.lengths) - 1)
        if position_limit is not None:
            count = max(0, min(count, position_limit - max(self.lengths)))
        if fed_limit is not None:
            count = max(0, min(count, fed_limit - self.last.shape[1]))
        return count

    def run(self, max_tokens: int) -> RoundResult:
        """One round: the proposer's candidates, the big model's forward over them, each row's verdict, and the
        emitted tokens appended to the buffer."""
        proposal = self.proposer.propose(max_tokens, self.process_draft)
        candidates = proposal.tokens.to(self.device)
        fed = torch.cat([self.last, candidates], dim=1)
        output = self.big.forward(fed)
        if self.last is self.prompt:  # the first forward: its logits over the prompt are what some processors read
            for observer in self.plan.prompt_observers:
                observer.observe_prompt(output[:, : self.prompt_length])
        logits = output[:, self.last.shape[1] - 1 :]
        raw = logits.clone() if self.recorder is not None and self.recorder.keep_logits else None
        scores = self.processor.positions(self.live_index, candidates, logits, self.lengths)  # in place
        accepted, bonus = self.verifier.verify(candidates, scores, proposal.draft_probs)
        new_tokens, counts, finished = self.emitted(candidates, accepted, bonus)
        first_step = self.buffer.lengths.index_select(0, self.live_index) - self.prompt_length
        self.buffer.append(self.live_index, new_tokens, counts)
        accepted_host, counts_host, finished_host = torch.stack([accepted, counts, finished.long()]).tolist()
        if self.recorder:
            self.recorder.add(self.live_index, first_step, counts, max(counts_host), scores, raw)
        self.lengths = [length + count for length, count in zip(self.lengths, counts_host, strict=True)]
        return RoundResult(proposal, accepted_host, counts_host, finished_host, bonus, fed.numel())

    def process_draft(
        self, so_far: torch.Tensor, scores: torch.Tensor, rows: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The proposer's ``process``: the draft's scores after the live rows' tokens plus ``so_far``, processed;
        with ``rows`` (positions among the live rows) the scores and tokens are those rows' only."""
        so_far, scores = so_far.to(self.device), scores.to(self.device)
        if rows is None:
            return self.draft_processor.step(self.live_index, so_far, scores, self.lengths)
        index = self.live_index.index_select(0, rows.to(self.device))
        lengths = [self.lengths[row] for row in rows.tolist()]
        return self.draft_processor.step(index, so_far, scores, lengths, capture=False)

    def emitted(
        self, candidates: torch.Tensor, accepted: torch.Tensor, bonus: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each row's new tokens (accepted candidates, then the bonus), how many of them it emits (cut at the first
        end token and at the length limit) and whether that finishes it."""
        proposed = candidates.shape[1]
        offsets = torch.arange(proposed + 1, device=self.device)[None, :]
        new_tokens = torch.where(offsets < accepted[:, None], F.pad(candidates, (0, 1)), bonus[:, None])
        remaining = self.limit - self.buffer.lengths.index_select(0, self.live_index)
        counts = torch.minimum(accepted + 1, remaining)
        if not self.eos.numel():
            return new_tokens, counts, counts >= remaining
        is_end = torch.isin(new_tokens, self.eos) & (offsets < counts[:, None])
        first_end = torch.where(is_end, offsets, proposed + 1).min(dim=1).values
        counts = torch.minimum(counts, first_end + 1)
        return new_tokens, counts, is_end.any(dim=1) | (counts >= remaining)

    def leave(self, result: RoundResult) -> RoundResult:
        """The finished rows leave the batch (the buffer keeps their tokens; the runners and the proposer drop them);
        returns the round's result for the rows that stay."""
        keep = [position for position, done in enumerate(result.finished) if not done]
        self.lengths = [self.lengths[position] for position in keep]
        keep_index = to_device(keep, self.device)
        self.live_index = self.live_index.index_select(0, keep_index)
        bonus = result.bonus.index_select(0, keep_index)
        self.big.select(keep)
        self.proposer.select(keep)
        accepted, emitted = ([values[position] for position in keep] for values in (result.accepted, result.emitted))
        return RoundResult(result.proposal, accepted, emitted, [0] * len(keep), bonus, result.positions)

    def cut_back(self, result: RoundResult) -> None:
        """The big model's cache keeps each row's accepted candidates and the token before them, the proposer hears
        what was kept, and each row's bonus is fed first next round."""
        proposed = result.proposal.tokens.shape[1]
        self.big.keep([count + 1 for count in result.accepted], fed=proposed + 1)
        self.proposer.accept(result.accepted, result.bonus)
        self.last = result.bonus[:, None]
