"""A proposer written by a user (the example of docs/proposers.md, run as printed there) plugs into Seq2SeqSpeculator
and the output stays exactly greedy; a proposer that breaks the protocol gets a clear error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from conftest import assert_same, greedy
from toy_helpers import varied_enough

from seq2spec import Proposal, Proposer, Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources

README = Path(__file__).resolve().parents[1] / "docs" / "proposers.md"


@pytest.fixture(scope="module")
def retrieved_copy():
    """The ``RetrievedCopy`` class exactly as docs/proposers.md prints it."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- proposer-example -->\n```python\n(.*?)```", text, re.S)
    assert block, "docs/proposers.md lost its proposer example"
    assert len(block.group(1).splitlines()) <= 35
    namespace: dict = {}
    exec(compile(block.group(1), "README proposer example", "exec"), namespace)
    return namespace["RetrievedCopy"]


def documents_for(input_ids, mask, outputs, eos: int, noise: float = 0.0) -> dict[tuple[int, ...], list[int]]:
    """Each source's "retrieved document": the big model's own output, optionally with tokens replaced."""
    generator = torch.Generator().manual_seed(0)
    documents = {}
    for ids, keep, output in zip(input_ids.tolist(), mask.tolist(), outputs.tolist(), strict=True):
        body = output[1:]
        body = body[: body.index(eos) + 1] if eos in body else body
        if noise:
            body = [t if float(torch.rand(1, generator=generator)) > noise else 5 for t in body]
        documents[tuple(t for t, k in zip(ids, keep, strict=True) if k)] = body
    return documents


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_readme_proposer_equals_greedy(retrieved_copy, toy_models, noise):
    big = toy_models["t5-v1_1"]["big"]
    input_ids, mask = random_sources(12, seed=71, pad_id=0)
    expected = greedy(big, input_ids, mask, max_new_tokens=30)
    assert varied_enough(expected, 0)
    documents = documents_for(input_ids, mask, expected, big.config.eos_token_id, noise)
    proposer = retrieved_copy(lambda source: documents[tuple(source)])
    assert isinstance(proposer, Proposer)
    speculator = Seq2SeqSpeculator(big, proposer)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=30), expected)
    stats = speculator.last_stats
    assert stats.draft_forwards == 0 and stats.proposed_draft_tokens > 0
    if noise == 0:  # the right document: most proposals are kept, several tokens per big forward
        assert stats.acceptance_rate > 0.8 and stats.tokens_per_big_forward > 3
    # the same object serves the next batch (start() is called per batch)
    again = speculator.generate(input_ids[:5], mask[:5], max_new_tokens=30)
    assert_same(again, greedy(big, input_ids[:5], mask[:5], max_new_tokens=30))


def test_readme_proposer_through_correct(retrieved_copy, toy_byte_models):
    big, _, tokenizer = toy_byte_models
    texts = ["copy me if you can", "another line", "x", "a somewhat longer line of text"]
    plain = Seq2SeqSpeculator(big, None, tokenizer).correct(texts, max_new_tokens=16, batch_size=3)
    # a document that is each text itself: input copy written by hand
    speculator = Seq2SeqSpeculator(big, retrieved_copy(lambda source: source), tokenizer)
    assert speculator.correct(texts, max_new_tokens=16, batch_size=3) == plain


class Broken:
    def __init__(self, proposal) -> None:
        self.proposal = proposal

    def start(self, batch) -> None:
        self.rows = batch.rows

    def propose(self, max_tokens, process):
        return self.proposal(self.rows, max_tokens)

    def accept(self, accepted, bonus) -> None:
        pass

    def select(self, rows) -> None:
        self.rows = len(rows)


@pytest.mark.parametrize(
    "proposal, error, message",
    [
        (lambda rows, k: [[1, 2]] * rows, TypeError, "must return a seq2spec Proposal"),
        (lambda rows, k: Proposal(torch.ones(rows + 1, 1, dtype=torch.long)), ValueError, r"must be a \["),
        (lambda rows, k: Proposal(torch.ones(rows, k + 1, dtype=torch.long)), ValueError, "at most"),
        (lambda rows, k: Proposal(torch.ones(rows, 1)), TypeError, "torch.long"),
        (lambda rows, k: Proposal(torch.ones(rows, 1, dtype=torch.long), counts=[2] * rows), ValueError, "counts"),
    ],
)
def test_a_broken_proposal_is_named(toy_models, proposal, error, message):
    big = toy_models["t5"]["big"]
    input_ids, mask = random_sources(3, seed=72, pad_id=0)
    with pytest.raises(error, match=message):
        Seq2SeqSpeculator(big, Broken(proposal)).generate(input_ids, mask, max_new_tokens=8)
