"""The arithmetic behind experiments/refill_bound.py's published bound."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "refill_bound.py"


@pytest.fixture(scope="module")
def refill():
    spec = importlib.util.spec_from_file_location("refill_bound", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_fit_recovers_a_linear_round_cost(refill):
    rows = [1, 2, 4, 8, 16, 3, 7]
    fixed, per_row, r2 = refill.fit_round_cost(rows, [0.004 + 0.0015 * r for r in rows])
    assert fixed == pytest.approx(0.004) and per_row == pytest.approx(0.0015) and r2 == pytest.approx(1.0)


def test_bound_packs_later_rounds_into_full_ones_and_keeps_first_rounds(refill):
    # two batches of 4 rows: first rounds (full), then rounds with 4, 2, 1 and 3, 1 rows; cost 1 + 1 per row
    rows = [4, 4, 2, 1, 4, 3, 1]
    first = [True, False, False, False, True, False, False]
    seconds = [10.0, 5.0, 3.0, 2.0, 10.0, 4.0, 2.0]
    result = refill.bound("case", 4, 8, 50.0, refill.RoundLog(rows, seconds, first))
    assert result.fixed_ms == pytest.approx(1000.0) and result.per_row_ms == pytest.approx(1000.0)
    assert result.rounds == 7 and result.row_rounds == 19 and result.rounds_s == pytest.approx(36.0)
    # later rounds: 11 row-rounds -> 3 full rounds of 4 rows at 5 s, plus the two first rounds as they ran
    assert result.packed_rounds == 5 and result.packed_s == pytest.approx(20.0 + 3 * 5.0)
    assert result.saving_share_of_wall == pytest.approx((36.0 - 35.0) / 50.0)
