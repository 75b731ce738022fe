"""The blockwise-parallel loop: propose, verify in one big forward, accept per row, cut caches back, drop rows.

With the greedy verifier every token the loop emits is the big model's argmax after ``generate``'s logits
processors, given exactly the tokens before it, so the result is the big model's greedy output whatever the
proposer suggests. With the sampling verifier every token follows the big model's sampling distribution.

Per round the loop copies one small tensor to the host (each row's accepted count, emitted count and whether it
finished); every other decision (how many candidates to ask for, which rows leave, what the caches drop) is made
from host-side numbers.
"""

from __future__ import annotations

import torch

from seq2spec.decoding.plan import GenerationPlan
from seq2spec.decoding.proposal import DecodingBatch, Proposer
from seq2spec.decoding.runner import DecoderRunner
from seq2spec.decoding.scores import ScoreRecorder
from seq2spec.decoding.sequences import PrefixProcessor, TokenBuffer
from seq2spec.decoding.transfer import to_device
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
    recorder: ScoreRecorder | None = None,
    capture_draft_processing: bool = False,
) -> torch.Tensor:
    """Decode the batch held by ``big``; returns ``[rows, P + T]`` tokens as ``generate`` lays them out.

    ``verifier`` defaults to greedy verification (output identical to ``generate(do_sample=False)``).
    ``position_limit``: the decoder's number of learned positions; no token is fed past the last one.
    ``recorder`` collects the scores and logits of the emitted tokens.
    ``capture_draft_processing``: run the draft's logits processing as a CUDA graph where it can be captured.
    """
    verifier = verifier if verifier is not None else GreedyVerifier()
    device = big.device
    prompt = plan.prompt.to(device)
    rows, prompt_length = prompt.shape
    limit = prompt_length + plan.max_new_tokens
    buffer = TokenBuffer(prompt, limit, plan.pad_token_id)
    processor = PrefixProcessor(plan.logits_processor, buffer)
    draft_processor = PrefixProcessor(plan.draft_logits_processor, buffer, capture_steps=capture_draft_processing)
    eos = torch.tensor(plan.eos_token_ids, dtype=torch.long, device=device)
    live_index = torch.arange(rows, device=device)  # batch rows still decoding, in runner order
    lengths = [prompt_length] * rows  # host copy of each live row's buffer length
    last = prompt  # fed with the first candidates; afterwards each row's last emitted token
    if any(batch.prompt_padding):
        big.pad_prompt(list(batch.prompt_padding))
    proposer.start(batch)

    while lengths:
        # never more candidates than the row with the most room left can use
        max_tokens = max(1, limit - min(lengths) - 1)
        if position_limit is not None:  # learned positions: feed no token past the last embedding
            max_tokens = max(0, min(max_tokens, position_limit - max(lengths)))

        def process_draft(
            so_far: torch.Tensor, scores: torch.Tensor, rows: torch.Tensor = live_index, lengths: list[int] = lengths
        ) -> torch.Tensor:
            return draft_processor.step(rows, so_far.to(device), scores.to(device), lengths)

        proposal = proposer.propose(max_tokens, process_draft)
        candidates = proposal.tokens.to(device)
        proposed = candidates.shape[1]
        output = big.forward(torch.cat([last, candidates], dim=1))
        if last is prompt:  # the first forward: its logits over the prompt are what some processors read
            for observer in plan.prompt_observers:
                observer.observe_prompt(output[:, :prompt_length])
        logits = output[:, last.shape[1] - 1 :]
        raw = logits.clone() if recorder is not None and recorder.keep_logits else None
        scores = processor.positions(live_index, candidates, logits, lengths)  # processes logits in place
        accepted, bonus = verifier.verify(candidates, scores, proposal.draft_probs)

        # The row's new tokens: accepted candidates then the bonus, cut at the first EOS and at the length limit.
        offsets = torch.arange(proposed + 1, device=device)[None, :]
        padded = torch.nn.functional.pad(candidates, (0, 1))
        new_tokens = torch.where(offsets < accepted[:, None], padded, bonus[:, None])
        remaining = limit - buffer.lengths.index_select(0, live_index)
        counts = torch.minimum(accepted + 1, remaining)
        if eos.numel():
            is_end = torch.isin(new_tokens, eos) & (offsets < counts[:, None])
            first_end = torch.where(is_end, offsets, proposed + 1).min(dim=1).values
            counts = torch.minimum(counts, first_end + 1)
            finished = is_end.any(dim=1) | (counts >= remaining)
        else:
            finished = counts >= remaining
        first_step = buffer.lengths.index_select(0, live_index) - prompt_length
        buffer.append(live_index, new_tokens, counts)
        accepted_host, counts_host, finished_host = torch.stack([accepted, counts, finished.long()]).tolist()
        if recorder:
            recorder.add(live_index, first_step, counts, max(counts_host), scores, raw)

        stats.big_forwards += 1
        stats.big_row_forwards += len(lengths)
        stats.generated_tokens += sum(counts_host)
        stats.draft_forwards += proposal.draft_forwards
        if proposed:
            real = proposal.real_counts()
            # a filler token the big model happened to agree with is no accepted proposal
            kept = [min(a, c, r) for a, c, r in zip(accepted_host, counts_host, real, strict=True)]
            stats.proposed_draft_tokens += sum(real)
            stats.accepted_draft_tokens += sum(kept)
            if proposal.copied is not None:
                stats.proposed_copy_tokens += sum(proposal.copied)
                stats.accepted_copy_tokens += sum(map(min, kept, proposal.copied))
            stats.record_accepted_lengths(accepted_host)
        lengths = [length + count for length, count in zip(lengths, counts_host, strict=True)]

        if any(finished_host):
            keep = [position for position, done in enumerate(finished_host) if not done]
            if not keep:
                break
            lengths = [lengths[position] for position in keep]
            accepted_host = [accepted_host[position] for position in keep]
            keep_index = to_device(keep, device)
            live_index = live_index.index_select(0, keep_index)
            bonus = bonus.index_select(0, keep_index)
            big.select(keep)
            proposer.select(keep)
        big.keep([count + 1 for count in accepted_host], fed=proposed + 1)
        proposer.accept(accepted_host, bonus)
        last = bonus[:, None]

    return buffer.output()
