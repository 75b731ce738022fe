"""seq2spec.drafts.row_groups: proposers for groups of a batch's rows, merged into one proposal."""

from __future__ import annotations

import pytest
import torch
from transformers.modeling_outputs import BaseModelOutput

from seq2spec.decoding.proposal import DecodingBatch, Proposal
from seq2spec.drafts.row_groups import LanguageRoutedProposers, RowGroupProposer, batch_rows

EOS, PAD = 9, 8


def decoding_batch(rows: int = 4) -> DecodingBatch:
    hidden = torch.arange(rows, dtype=torch.float32)[:, None, None].expand(rows, 3, 2).clone()
    prompt = torch.tensor([[1, 50 + row % 2, 3] for row in range(rows)])  # start, language token, task
    return DecodingBatch(
        encoder_inputs=hidden.clone(),
        attention_mask=None,
        encoder_hidden_states=hidden,
        prompt=prompt,
        eos_token_ids=(EOS,),
        pad_token_id=PAD,
        prompt_padding=tuple(range(rows)),
        big_cross_attention=lambda layer: (hidden * layer, hidden),
        encoder_output=BaseModelOutput(last_hidden_state=hidden),
    )


class Scripted:
    """Proposes ``tokens`` (one row per row it was started with), counting what it hears."""

    def __init__(self, tokens: list[list[int]], probs: bool = False, vocabulary: int = 12) -> None:
        self.tokens, self.probs, self.vocabulary = tokens, probs, vocabulary
        self.batch: DecodingBatch | None = None
        self.processed: list[torch.Tensor] = []
        self.accepted: list[tuple[list[int], list[int]]] = []
        self.selected: list[list[int]] = []

    def start(self, batch: DecodingBatch) -> None:
        self.batch = batch

    def propose(self, max_tokens: int, process) -> Proposal:
        tokens = torch.tensor(self.tokens)
        scores = process(tokens[:, :0], torch.zeros(len(self.tokens), self.vocabulary))
        self.processed.append(scores)
        probs = torch.full((*tokens.shape, self.vocabulary), 1.0 / self.vocabulary) if self.probs else None
        return Proposal(tokens, draft_probs=probs, draft_forwards=tokens.shape[1])

    def accept(self, accepted: list[int], bonus: torch.Tensor) -> None:
        self.accepted.append((accepted, bonus.tolist()))

    def select(self, rows: list[int]) -> None:
        self.selected.append(rows)
        self.tokens = [self.tokens[row] for row in rows]


def test_a_batch_cut_to_rows_holds_those_rows_only():
    batch = decoding_batch()
    part = batch_rows(batch, [1, 3])
    assert part.rows == 2 and part.prompt[:, 1].tolist() == [51, 51]
    assert part.encoder_hidden_states[:, 0, 0].tolist() == [1.0, 3.0] and part.encoder_inputs.shape[0] == 2
    assert part.prompt_padding == (1, 3)
    assert part.encoder_output.last_hidden_state[:, 0, 0].tolist() == [1.0, 3.0]
    key, value = part.big_cross_attention(2)
    assert key[:, 0, 0].tolist() == [2.0, 6.0] and value[:, 0, 0].tolist() == [1.0, 3.0]


def test_groups_propose_for_their_rows_and_hear_only_their_verdicts():
    batch = decoding_batch()
    even, odd = Scripted([[20, 21, 22], [23, 24, 25]]), Scripted([[30], [31]])
    proposer = RowGroupProposer([([0, 2], even), ([1, 3], odd)])
    proposer.start(batch)
    assert even.batch.prompt[:, 1].tolist() == [50, 50] and odd.batch.prompt[:, 1].tolist() == [51, 51]
    seen = []

    def process(so_far, scores, rows=None):
        seen.append(rows.tolist())
        return scores + rows[:, None].float()  # which rows' processing each proposer got

    proposal = proposer.propose(5, process)
    assert proposal.tokens.tolist() == [[20, 21, 22], [30, EOS, EOS], [23, 24, 25], [31, EOS, EOS]]
    assert proposal.counts == [3, 1, 3, 1] and proposal.draft_forwards == 4 and proposal.draft_probs is None
    assert seen == [[0, 2], [1, 3]] and even.processed[0][:, 0].tolist() == [0.0, 2.0]
    proposer.accept([2, 1, 0, 0], torch.tensor([60, 61, 62, 63]))
    assert even.accepted == [([2, 0], [60, 62])] and odd.accepted == [([1, 0], [61, 63])]
    proposer.select([0, 2, 3])  # row 1 finished: the odd group keeps its second row, the even group both
    assert even.selected == [] and odd.selected == [[1]]
    assert proposer.propose(5, process).tokens.tolist() == [[20, 21, 22], [23, 24, 25], [31, EOS, EOS]]
    proposer.select([2])  # only the odd group's row stays: the even group is done
    assert proposer.propose(5, process).tokens.tolist() == [[31]] and len(proposer.groups) == 1


def test_sampled_candidates_keep_their_distribution_and_fillers_are_certain():
    proposer = RowGroupProposer([([0], Scripted([[4, 5]], probs=True)), ([1], Scripted([[6]]))])
    proposer.start(decoding_batch(2))
    proposal = proposer.propose(5, lambda so_far, scores, rows=None: scores)
    probs = proposal.draft_probs
    assert probs.shape == (2, 2, 12) and torch.allclose(probs[0], torch.full((2, 12), 1 / 12))
    assert probs[1].argmax(-1).tolist() == [6, EOS] and probs[1].max(-1).values.tolist() == [1.0, 1.0]


def test_row_groups_must_cover_the_batch():
    with pytest.raises(ValueError, match="cover"):
        RowGroupProposer([([0, 1], Scripted([[1], [2]]))]).start(decoding_batch(3))


def test_rows_are_routed_by_their_language_token():
    made = []

    def factory(name):
        def make(batch, stats):
            made.append((name, batch.prompt[:, 1].tolist()))
            return Scripted([[1]] * batch.rows)

        return make

    default, french = factory("default"), factory("french")
    routed = LanguageRoutedProposers(default, {51: lambda: french})
    proposer = routed(decoding_batch(4), None)
    assert isinstance(proposer, RowGroupProposer) and made == [("default", [50, 50]), ("french", [51, 51])]
    made.clear()
    single = decoding_batch(4)
    single = batch_rows(single, [1, 3])
    assert isinstance(routed(single, None), Scripted) and made == [("french", [51, 51])]  # one group: its own proposer
