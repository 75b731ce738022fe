"""Several proposers in one batch, each proposing for its own rows; the big model verifies all rows together.

A Whisper batch whose rows speak different languages keeps one big forward per round while each language's draft
proposes for its rows (``LanguageRoutedProposers``). Each group's proposer sees only its rows: a ``DecodingBatch``
cut to them (``batch_rows``), the logits processing of those rows, their verdicts, and which of them stay.

Proposals of different widths are merged into one ``[rows, k]`` tensor, a shorter row filled with an end token:
the big model verifies a filler like any token, and where it keeps one the row has ended (it emits nothing after an
end token and leaves the batch before its proposer hears the verdict), so a proposer never hears of tokens beyond
its own. Under speculative sampling a filler is proposed with certainty (its draft distribution is one-hot), which
keeps each row's tokens distributed as the big model's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F

from seq2spec.decoding.fast.transfer import to_device
from seq2spec.decoding.proposal import DecodingBatch, Proposal, Proposer, ScoreProcessor
from seq2spec.options import SpeculationStats

# make_proposer(batch, stats) -> the proposer for this batch (the search's ProposerFactory)
ProposerFactory = Callable[[DecodingBatch, SpeculationStats], Proposer]


def _rows_of(value: Any, index: torch.Tensor, rows: int) -> Any:
    """``value`` cut to ``index`` along its first dimension where that dimension is the batch's rows."""
    if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == rows:
        return value.index_select(0, index.to(value.device))
    return value


def _encoder_output_rows(output: Any, index: torch.Tensor, rows: int) -> Any:
    """An encoder output (a ``ModelOutput`` or tuple) with each per-row tensor cut to ``index``."""
    if output is None:
        return None
    if isinstance(output, tuple) and not hasattr(output, "keys"):
        return type(output)(_rows_of(value, index, rows) for value in output)
    return type(output)(**{key: _rows_of(value, index, rows) for key, value in output.items()})


def batch_rows(batch: DecodingBatch, rows: Sequence[int]) -> DecodingBatch:
    """What a proposer of ``rows`` (positions in ``batch``) may know of them: ``batch`` cut to those rows."""
    index = torch.tensor(list(rows), dtype=torch.long, device=batch.prompt.device)
    count = batch.rows
    cross = batch.big_cross_attention

    def cross_attention(layer: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        pair = cross(layer) if cross is not None else None
        return None if pair is None else (_rows_of(pair[0], index, count), _rows_of(pair[1], index, count))

    return replace(
        batch,
        encoder_inputs=_rows_of(batch.encoder_inputs, index, count),
        attention_mask=_rows_of(batch.attention_mask, index, count),
        encoder_hidden_states=_rows_of(batch.encoder_hidden_states, index, count),
        prompt=batch.prompt.index_select(0, index),
        prompt_padding=tuple(batch.prompt_padding[row] for row in rows) if batch.prompt_padding else (),
        big_cross_attention=cross_attention if cross is not None else None,
        encoder_output=_encoder_output_rows(batch.encoder_output, index, count),
    )


class RowGroupProposer:
    """``groups``: ``(rows, proposer)`` pairs, each proposer for its rows (positions in the batch ``start`` gets,
    every row in exactly one group), made for ``batch_rows(batch, rows)``."""

    def __init__(self, groups: Sequence[tuple[Sequence[int], Proposer]]) -> None:
        self.groups = [(list(rows), proposer) for rows, proposer in groups]
        self.rows = sum(len(rows) for rows, _ in self.groups)
        self.filler = 0

    def start(self, batch: DecodingBatch) -> None:
        covered = sorted(row for rows, _ in self.groups for row in rows)
        if covered != list(range(batch.rows)):
            raise ValueError(f"row groups {[rows for rows, _ in self.groups]} must cover the batch's {batch.rows} rows")
        self.rows = batch.rows
        self.filler = batch.eos_token_ids[0] if batch.eos_token_ids else batch.pad_token_id
        for rows, proposer in self.groups:
            proposer.start(batch_rows(batch, rows))

    def propose(self, max_tokens: int, process: ScoreProcessor) -> Proposal:
        parts = []
        for rows, proposer in self.groups:
            index = torch.tensor(rows, dtype=torch.long)

            def group_process(so_far: torch.Tensor, scores: torch.Tensor, index: torch.Tensor = index) -> torch.Tensor:
                return process(so_far, scores, index)  # type: ignore[call-arg]  # the loop's process takes rows

            parts.append((rows, proposer.propose(max_tokens, group_process)))
        return self._merged(parts)

    def _merged(self, parts: list[tuple[list[int], Proposal]]) -> Proposal:
        width = max(proposal.tokens.shape[1] for _, proposal in parts)
        device = parts[0][1].tokens.device
        tokens = torch.full((self.rows, width), self.filler, dtype=torch.long, device=device)
        counts, copied = [0] * self.rows, [0] * self.rows
        for rows, proposal in parts:
            tokens[to_device(rows, device), : proposal.tokens.shape[1]] = proposal.tokens.to(device)
            for row, count in zip(rows, proposal.real_counts(), strict=True):
                counts[row] = count
            for row, count in zip(rows, proposal.copied or [0] * len(rows), strict=True):
                copied[row] = count
        probs = None
        sampled = [proposal for _, proposal in parts if proposal.draft_probs is not None]
        if sampled:  # a candidate proposed without a distribution (a filler, a copied token) was certain: one-hot
            probs = F.one_hot(tokens, sampled[0].draft_probs.shape[-1]).to(sampled[0].draft_probs.dtype)
            for rows, proposal in parts:
                if proposal.draft_probs is not None:
                    index = to_device(rows, device)
                    probs[index, : proposal.tokens.shape[1]] = proposal.draft_probs.to(device, probs.dtype)
        full = all(count == width for count in counts)
        return Proposal(
            tokens,
            counts=None if full else counts,
            copied=copied if any(copied) else None,
            draft_probs=probs,
            draft_forwards=sum(proposal.draft_forwards for _, proposal in parts),
        )

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        for rows, proposer in self.groups:
            proposer.accept([accepted[row] for row in rows], bonus.index_select(0, to_device(rows, bonus.device)))

    def select(self, rows: list[int]) -> None:
        position = {row: new for new, row in enumerate(rows)}
        groups = []
        for group_rows, proposer in self.groups:
            kept = [local for local, row in enumerate(group_rows) if row in position]
            if not kept:  # every row of the group finished: its proposer is done
                continue
            if len(kept) < len(group_rows):
                proposer.select(kept)
            groups.append(([position[group_rows[local]] for local in kept], proposer))
        self.groups = groups
        self.rows = len(rows)


class LanguageRoutedProposers:
    """A Whisper batch's proposer by each row's language token (the one its prompt holds after the start of the
    transcript, given or detected by ``generate``): ``factories`` maps language token ids to the factory of their
    draft (called when a row first needs it), other rows get ``default``. One factory's rows share one proposer; a
    batch of one factory gets that factory's proposer itself."""

    def __init__(self, default: ProposerFactory, factories: Mapping[int, Callable[[], ProposerFactory]]) -> None:
        self.default = default
        self.factories = factories

    def __call__(self, batch: DecodingBatch, stats: SpeculationStats) -> Proposer:
        column = batch.transcript_start + 1
        tokens = batch.prompt[:, column].tolist() if batch.prompt.shape[1] > column else [None] * batch.rows
        groups: dict[int, tuple[ProposerFactory, list[int]]] = {}
        for row, token in enumerate(tokens):
            factory = self.factories[token]() if token in self.factories else self.default
            groups.setdefault(id(factory), (factory, []))[1].append(row)
        if len(groups) == 1:
            factory, _ = next(iter(groups.values()))
            return factory(batch, stats)
        return RowGroupProposer([(rows, factory(batch_rows(batch, rows), stats)) for factory, rows in groups.values()])
