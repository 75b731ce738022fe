"""Copied proposals cut to the width that pays: the round cost fitted on timed rounds, the width chosen from it and
each row's agreement, and the output greedy's whatever the width."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy

from seq2spec import Seq2SeqSpeculator, SpeculationOptions
from seq2spec.commands.toys import random_sources
from seq2spec.default_models import SPELLER_DIR, load_speller
from seq2spec.drafts import width as width_module
from seq2spec.drafts.width import RoundCost, WidthChooser, best_width

needs_weights = pytest.mark.skipif(not (SPELLER_DIR / "big").is_dir(), reason="needs the shipped speller")
TEXTS = [
    "Thsi sentense has a fwe erors in it.",
    "She recieved a leter from her freind yesterday, and she was hapy to read it twice.",
    "Nothing is wrong with this sentence at all, it is a perfectly ordinary line of text.",
    "Teh comittee will meet on Tuesday to discus the budjet.",
    "ok",
    "The wether is nice today.",
]


def test_the_round_cost_is_fitted_on_the_rounds():
    cost = RoundCost(min_rounds=4)
    assert cost.fitted() is None
    for positions in (10, 40, 25, 80, 5, 60):
        cost.observe(positions, 0.012 + 0.0003 * positions)
    per_round, per_position = cost.fitted()
    assert per_round == pytest.approx(0.012) and per_position == pytest.approx(0.0003)


def test_no_cost_is_fitted_from_too_few_rounds_or_rounds_alike():
    cost = RoundCost(min_rounds=6)
    for positions in (10, 40, 25, 80, 5):
        cost.observe(positions, 0.01 + 0.001 * positions)
    assert cost.fitted() is None  # five rounds
    alike = RoundCost(min_rounds=2)
    for seconds in (0.02, 0.03, 0.025, 0.04):
        alike.observe(32, seconds)
    assert alike.fitted() is None  # one width: the two parts cannot be told apart


def test_costs_never_go_below_zero():
    cost = RoundCost(min_rounds=2)
    for positions, seconds in ((10, 0.05), (50, 0.04), (90, 0.03)):  # noise: wider rounds timed faster
        cost.observe(positions, seconds)
    per_round, per_position = cost.fitted()
    assert per_position == 0.0 and per_round > 0


def test_free_positions_keep_every_proposal_whole():
    assert best_width([20, 2, 2, 3], [0.5, 0.5, 0.5, 0.5], per_round=0.01, per_position=0.0) == 20


def test_one_long_proposal_does_not_pad_every_row_to_its_width():
    lengths, agreement = [20] + [2] * 9, [0.95] + [0.6] * 9
    width = best_width(lengths, agreement, per_round=0.01, per_position=0.0003)
    assert 2 <= width < 20
    # one row alone: its positions cost little beside the round, so its whole proposal is worth it
    assert best_width([20], [0.95], per_round=0.01, per_position=0.0003) == 20
    # rows that all agree keep their proposals whole
    assert best_width([16] * 10, [0.99] * 10, per_round=0.01, per_position=0.0003) == 16


def test_the_width_is_at_least_one():
    assert best_width([], [], 0.01, 0.001) == 1
    assert best_width([0, 0], [0.8, 0.8], 0.01, 0.001) == 1
    assert best_width([8, 8], [0.01, 0.01], 0.0, 1.0) == 1


class StepClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_chooser_times_each_round_but_the_first_and_learns_each_rows_agreement(monkeypatch):
    clock = StepClock()
    monkeypatch.setattr(width_module, "perf_counter", clock)
    cost = RoundCost(min_rounds=3)
    chooser = WidthChooser(cost)
    chooser.start(3)
    widths = []
    for round_index in range(8):
        lengths = [16, 2, 2] if round_index % 2 else [4, 4, 2]
        widths.append(chooser.choose(lengths))
        positions = 3 * (widths[-1] + 1)
        clock.now += 0.01 + 0.001 * positions  # the round's time, all of it in positions on this clock
        chooser.verified([min(length, widths[-1]) for length in lengths], [min(lengths[0], widths[-1]), 0, 1])
    assert cost.rounds == 6  # the first round is not timed, the eighth is still open
    assert cost.fitted() == pytest.approx((0.01, 0.001))
    assert widths[:4] == [4, 16, 4, 16]  # whole until the cost is known
    assert widths[5] < 16  # then one row no longer pads the others to 16
    first, second, third = chooser.agreement()
    assert first > third > second  # kept every candidate / kept none / kept one of two
    chooser.select([0, 2])
    assert chooser.agreement() == [first, third]


def test_the_width_is_an_option():
    assert SpeculationOptions().fit_copy_width is True
    with pytest.raises(ValueError, match="fit_copy_width"):
        SpeculationOptions(fit_copy_width="yes")


@pytest.fixture
def costly_positions(monkeypatch):
    """Every copy's round cost fitted as all positions, nothing per round: the narrowest widths win."""
    monkeypatch.setattr(RoundCost, "fitted", lambda self: (0.0, 1.0))


@pytest.mark.parametrize("family", ["t5", "mt5"])
def test_cut_proposals_stay_greedy_on_toy_models(toy_models, costly_positions, family):
    big = toy_models[family]["big"]
    input_ids, mask = random_sources(16, seed=56, pad_id=0)
    expected = greedy(big, input_ids, mask, max_new_tokens=40)
    speculator = Seq2SeqSpeculator(big, draft="input-copy", num_draft_tokens=8, max_draft_tokens=32)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=40), expected)


@needs_weights
def test_cut_proposals_stay_greedy_on_the_speller_and_propose_less(costly_positions):
    big, _, tokenizer = load_speller()
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    expected = big.generate(**batch, do_sample=False, max_new_tokens=96)
    proposed, positions = {}, {}
    for fit in (True, False):
        speculator = Seq2SeqSpeculator(big, "input-copy", tokenizer, fit_copy_width=fit)
        output = speculator.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens=96)
        assert output.shape == expected.shape and torch.equal(output, expected)
        proposed[fit] = speculator.last_stats.proposed_copy_tokens
        positions[fit] = speculator.last_stats.big_positions
        assert speculator.last_stats.accepted_copy_tokens > 0
    assert proposed[True] < proposed[False] and positions[True] < positions[False]


def test_positions_that_cost_next_to_nothing_are_not_searched():
    # a GPU-like fit: 10 ms a round, a tenth of a microsecond a position
    assert best_width([20] + [2] * 31, [0.95] + [0.3] * 31, per_round=0.01, per_position=1e-7) == 20


def test_the_positions_fed_count_padding(toy_models):
    big = toy_models["t5"]["big"]
    input_ids, mask = random_sources(6, seed=57, pad_id=0)
    plain = Seq2SeqSpeculator(big, draft=None)
    plain.generate(input_ids, mask, max_new_tokens=24)
    assert plain.last_stats.big_positions == plain.last_stats.big_row_forwards  # one position per row and forward
    copying = Seq2SeqSpeculator(big, draft="input-copy", fit_copy_width=False)
    copying.generate(input_ids, mask, max_new_tokens=24)
    stats = copying.last_stats
    assert stats.big_positions >= stats.big_row_forwards + stats.proposed_copy_tokens
