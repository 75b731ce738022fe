"""The blockwise-parallel loop: propose, verify in one big forward, accept per row, cut caches back, drop rows.

With the greedy verifier every token the loop emits is the big model's argmax after ``generate``'s logits
processors, given exactly the tokens before it, so the result is the big model's greedy output whatever the
proposer suggests. With the sampling verifier every token follows the big model's sampling distribution.
"""

from __future__ import annotations

import torch

from seq2spec.drafts import Proposer
from seq2spec.generation_setup import GreedyPlan
from seq2spec.options import SpeculationOptions, SpeculationStats
from seq2spec.runner import DecoderRunner
from seq2spec.sequences import PrefixProcessor, TokenBuffer
from seq2spec.verify import GreedyVerifier, Verifier


class DraftLength:
    """Chooses the number of candidates per round (fixed, or adapted per row and averaged over the batch)."""

    def __init__(self, options: SpeculationOptions, rows: int, device: torch.device) -> None:
        self.options = options
        self.per_row = torch.full((rows,), float(options.num_draft_tokens), device=device)

    def next(self, remaining: torch.Tensor) -> int:
        """Candidates to request, never more than the longest remaining budget needs."""
        if self.options.adaptive:
            wanted = int(torch.round(self.per_row.mean()))
        else:
            wanted = self.options.num_draft_tokens
        return max(1, min(wanted, int(remaining.max()) - 1))

    def update(self, accepted: torch.Tensor, proposed: int) -> None:
        if not self.options.adaptive:
            return
        full = accepted >= proposed
        self.per_row = torch.where(full, self.per_row + 2, self.per_row - 1).clamp_(
            self.options.min_draft_tokens, self.options.max_draft_tokens
        )

    def select(self, rows: torch.Tensor) -> None:
        self.per_row = self.per_row.index_select(0, rows)


def speculative_decode(
    big: DecoderRunner,
    proposer: Proposer,
    plan: GreedyPlan,
    options: SpeculationOptions,
    stats: SpeculationStats,
    draft_budget: int,
    position_limit: int | None = None,
    verifier: Verifier | None = None,
) -> torch.Tensor:
    """Decode the batch held by ``big``; returns ``[rows, 1 + T]`` tokens as ``big.generate`` lays them out.

    ``verifier`` defaults to greedy verification (output identical to ``big.generate(do_sample=False)``).
    """
    verifier = verifier if verifier is not None else GreedyVerifier(options.acceptance)
    device = big.device
    rows = big.encoder_hidden_states.shape[0]
    prompt = plan.prompt(rows, device)
    prompt_length = prompt.shape[1]
    buffer = TokenBuffer(prompt, prompt_length + plan.max_new_tokens + draft_budget + 1, plan.pad_token_id)
    processor = PrefixProcessor(plan.logits_processor, buffer)
    eos = torch.tensor(plan.eos_token_ids, dtype=torch.long, device=device)
    live = torch.arange(rows, device=device)  # batch rows still decoding, in runner order
    last = prompt  # fed with the first candidates; afterwards each row's last emitted token
    draft_length = DraftLength(options, rows, device)
    proposer.start(last)
    draft_calls_before = proposer.forward_calls

    while live.numel():
        remaining = prompt_length + plan.max_new_tokens - buffer.lengths[live]
        if proposer.adapts_per_row:  # the proposer sizes each row itself, within the budget
            wanted = min(draft_budget, max(1, int(remaining.max()) - 1))
        else:
            wanted = min(draft_length.next(remaining), draft_budget)
        if position_limit is not None:  # learned positions: feed no token past the last embedding
            wanted = max(0, min(wanted, position_limit - int(buffer.lengths[live].max())))

        def process_draft(so_far: torch.Tensor, scores: torch.Tensor, rows: torch.Tensor = live) -> torch.Tensor:
            return processor.step(rows, so_far.to(device), scores.to(device))

        candidates = proposer.propose(wanted, process_draft).to(device)
        proposed = candidates.shape[1]
        logits = big.forward(torch.cat([last, candidates], dim=1))[:, last.shape[1] - 1 :]
        scores = processor.positions(live, candidates, logits)
        accepted, bonus = verifier.verify(candidates, scores, proposer.draft_probs)

        # The row's new tokens: accepted candidates then the bonus, cut at the first EOS and at the length limit.
        offsets = torch.arange(proposed + 1, device=device)[None, :]
        new_tokens = torch.where(
            offsets < accepted[:, None], torch.nn.functional.pad(candidates, (0, 1)), bonus[:, None]
        )
        counts = torch.minimum(accepted + 1, remaining)
        if eos.numel():
            is_end = torch.isin(new_tokens, eos) & (offsets < counts[:, None])
            first_end = torch.where(is_end, offsets, proposed + 1).min(dim=1).values
            counts = torch.minimum(counts, first_end + 1)
            ended = is_end.any(dim=1)
        else:
            ended = torch.zeros_like(accepted, dtype=torch.bool)
        buffer.append(live, new_tokens, counts)

        stats.big_forwards += 1
        stats.big_row_forwards += live.numel()
        stats.generated_tokens += int(counts.sum())
        if proposed:
            per_row = proposer.proposed_counts
            stats.proposed_draft_tokens += sum(per_row) if per_row is not None else live.numel() * proposed
            kept = torch.minimum(accepted, counts)
            if per_row is not None:  # a filler token the big model happened to agree with is no accepted proposal
                kept = torch.minimum(kept, torch.tensor(per_row, device=device))
            stats.accepted_draft_tokens += int(kept.sum())
            copied = getattr(proposer, "copied_counts", None)
            if copied is not None:
                copied_tensor = torch.tensor(copied, device=device)
                stats.proposed_copy_tokens += sum(copied)
                stats.accepted_copy_tokens += int(torch.minimum(kept, copied_tensor).sum())
            stats.record_accepted_lengths(accepted.tolist())

        finished = ended | (counts >= remaining)
        if bool(finished.any()):
            keep = (~finished).nonzero().squeeze(1)
            live, accepted, bonus = live[keep], accepted[keep], bonus[keep]
            big.select(keep)
            proposer.select(keep)
            draft_length.select(keep)
            if not live.numel():
                break
        big.keep(accepted + 1, fed=proposed + 1)
        proposer.accept(accepted, bonus)
        draft_length.update(accepted, proposed)
        last = bonus[:, None]

    stats.draft_forwards += proposer.forward_calls - draft_calls_before
    return buffer.output()
