"""seq2spec.decoding.fast.checked: a fast path is used only when its probe passes its rule (bit-equal or within a
tolerance), a failure to build or probe counts as a failed check, and a verdict lasts while its key stays the same."""

from __future__ import annotations

import pytest
import torch

from seq2spec.decoding.fast.checked import BIT_EQUAL, StateCache, Within, check, model_state


def test_bit_equal_takes_only_a_true_answer():
    assert check("fast", lambda: "fast", lambda fast: True, BIT_EQUAL) == "fast"
    assert check("fast", lambda: "fast", lambda fast: False, BIT_EQUAL) is None
    assert check("fast", lambda: "fast", lambda fast: 0.0, BIT_EQUAL) is None  # a gap is no bit-equal answer


def test_within_takes_gaps_up_to_the_tolerance():
    assert check("fast", lambda: 1, lambda fast: 1e-3, Within(1e-3)) == 1
    assert check("fast", lambda: 1, lambda fast: 2e-3, Within(1e-3)) is None


def test_then_runs_only_after_a_passed_probe():
    made = []
    then = lambda fast: made.append(fast) or fast + 1  # noqa: E731
    assert check("fast", lambda: 1, lambda fast: 1.0, Within(1e-3), then=then) is None and made == []
    assert check("fast", lambda: 1, lambda fast: 0.0, Within(1e-3), then=then) == 2 and made == [1]


def test_failures_count_as_failed_checks_only_for_the_caught_types():
    def broken():
        raise RuntimeError("no capture here")

    assert check("fast", broken, lambda fast: True, BIT_EQUAL) is None
    assert check("fast", lambda: 1, lambda fast: 1 / 0, BIT_EQUAL, catching=(ZeroDivisionError,)) is None
    with pytest.raises(RuntimeError):
        check("fast", broken, lambda fast: True, BIT_EQUAL, catching=())


def test_a_verdict_lasts_while_the_model_state_does():
    model = torch.nn.Linear(4, 4)
    cache: StateCache[int] = StateCache()
    made = []

    def make() -> int:
        made.append(1)
        return len(made)

    assert cache.get(model_state(model), make) == 1
    assert cache.get(model_state(model), make) == 1
    with torch.no_grad():
        model.weight.add_(1.0)  # changed in place: the check runs again
    assert cache.get(model_state(model), make) == 2
    model.train(False)
    assert cache.get(model_state(model), make) == 3
