"""The draft gate: a draft whose kept tokens do not pay for its steps is paused (rounds without candidates), tried
again after doubling pauses, and left alone where it pays; the output is greedy's either way."""

from __future__ import annotations

import pytest
from conftest import assert_same, greedy

from seq2spec import Seq2SeqSpeculator, SpeculationOptions
from seq2spec.commands.toys import random_sources
from seq2spec.drafts import gate as gate_module
from seq2spec.drafts.gate import DraftGate


class StepClock:
    """``perf_counter`` for the gate: one second later at each reading unless a test sets the time itself. In a
    decoding the gate reads it as a round starts and when a draft's proposal is made: a draft's steps take one
    second and the rest of a round one, so drafting pays when a row keeps more than one candidate per round."""

    def __init__(self) -> None:
        self.now = 0.0
        self.step = 1.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def step_clock(monkeypatch):
    clock = StepClock()
    monkeypatch.setattr(gate_module, "perf_counter", clock)
    return clock


def run_round(gate: DraftGate, kept: list[int], draft_seconds: float, rest_seconds: float, clock: StepClock) -> bool:
    """One round as the proposer reports it, its parts taking the given times; returns whether it drafted."""
    clock.step = 0.0
    drafted = gate.steps(3) > 0
    clock.now += draft_seconds if drafted else 0.0
    gate.proposed(drafted)
    clock.now += rest_seconds
    gate.verified(kept if drafted else [0] * len(kept))
    clock.step = 1.0
    return drafted


def test_a_draft_that_does_not_pay_is_paused_for_doubling_rounds(step_clock):
    gate = DraftGate(warmup_rounds=4, max_pause=8)
    # half a kept candidate per row (1.5 tokens) for 3 s of drafting beside 4 s: 1.5 / 7 < 1 / 4
    pattern = [run_round(gate, [0, 1], 3.0, 4.0, step_clock) for _ in range(40)]
    # the first round (the prompt) and three more are timed before any decision, then pauses of 2, 4, 8, 8, ...
    assert pattern[:5] == [True] * 5
    runs, count = [], 0
    for drafted in pattern[5:]:
        if drafted:
            if count:
                runs.append(count)
            count = 0
        else:
            count += 1
    assert runs[:4] == [2, 4, 8, 8]
    assert gate.paused_rounds == pattern.count(False) > 0
    assert gate.plain_round_seconds == pytest.approx(4.0)


def test_a_draft_that_pays_is_never_paused(step_clock):
    gate = DraftGate()
    # one kept candidate per row for a draft costing a quarter of the verification: 2 tokens for 1.25 rounds' time
    assert all(run_round(gate, [1, 1, 1], 1.0, 4.0, step_clock) for _ in range(50))
    assert gate.paused_rounds == 0 and gate.pays()


def test_the_pause_ends_when_the_draft_pays_again(step_clock):
    gate = DraftGate(warmup_rounds=2, max_pause=4, smoothing=1.0)
    for _ in range(12):
        run_round(gate, [0], 1.0, 4.0, step_clock)
    assert gate.pause_length == 4
    drafted = [run_round(gate, [3], 1.0, 4.0, step_clock) for _ in range(12)]
    first = drafted.index(True)
    assert all(drafted[first:]) and gate.pause_length == 1


def test_reset_forgets_the_last_batch(step_clock):
    gate = DraftGate(warmup_rounds=1)
    for _ in range(6):
        run_round(gate, [0], 1.0, 1.0, step_clock)
    assert gate.paused_rounds > 0
    gate.reset()
    assert gate.gain is None and gate.paused_for == 0 and gate.pause_length == 1 and gate.steps(2) == 2


@pytest.mark.parametrize("family", ["t5-v1_1", "bart"])
def test_a_paused_draft_still_decodes_greedy_and_drafts_less(toy_models, monkeypatch, family):
    """A draft found never to pay: rounds go without candidates, the draft catches up on the tokens it missed when
    tried again, and the output stays greedy's."""
    monkeypatch.setattr(DraftGate, "pays", lambda self: False)
    models = toy_models[family]
    pad = models["big"].config.pad_token_id
    input_ids, mask = random_sources(5, seed=61, pad_id=pad)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=40)
    forwards = {}
    for pause in (True, False):
        speculator = Seq2SeqSpeculator(models["big"], models["unrelated"], num_draft_tokens=3, pause_draft=pause)
        assert_same(speculator.generate(input_ids, mask, max_new_tokens=40), expected)
        stats = speculator.last_stats
        forwards[pause] = stats.draft_forwards
        assert (stats.rounds_without_candidates > 0) == pause
    assert forwards[True] < forwards[False]


def test_the_big_model_as_its_own_draft_is_never_paused(toy_models, step_clock):
    models = toy_models["t5-v1_1"]
    input_ids, mask = random_sources(4, seed=62, pad_id=0)
    expected = greedy(models["big"], input_ids, mask, max_new_tokens=32, min_new_tokens=24)
    speculator = Seq2SeqSpeculator(models["big"], models["big"], num_draft_tokens=4, int8_draft=False)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=32, min_new_tokens=24), expected)
    assert speculator.last_stats.rounds_without_candidates == 0


def test_the_gate_is_an_option():
    assert SpeculationOptions().pause_draft is True
    assert SpeculationOptions(pause_draft=False).pause_draft is False
    with pytest.raises(ValueError, match="pause_draft"):
        SpeculationOptions(pause_draft="no")


def test_the_catch_up_after_a_pause_is_not_counted_as_the_draft_s_cost(step_clock):
    """The first round after a pause feeds the draft every token it missed: its time says nothing of a step's."""
    gate = DraftGate(warmup_rounds=2, max_pause=2)
    while not gate.paused_for:
        run_round(gate, [0], 3.0, 4.0, step_clock)
    steady = gate.draft_seconds
    while gate.paused_for:
        run_round(gate, [0], 3.0, 4.0, step_clock)
    run_round(gate, [0], 30.0, 4.0, step_clock)  # the catch-up
    assert gate.draft_seconds == steady
