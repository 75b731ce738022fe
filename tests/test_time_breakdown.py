"""benchmarks/time_breakdown.py's comparison of several Whisper drafts in turn."""

from pathlib import Path

import pytest
from script_loading import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "time_breakdown.py"


@pytest.fixture(scope="module")
def breakdown():
    return load_script(SCRIPT)


def test_methods_alternate_and_carry_their_run(breakdown):
    first, second = (lambda: None), (lambda: None)
    cases = [("long form", "seq2spec shipped", first, None), ("long form", "seq2spec f", second, None)]
    order = [(method, function) for _, method, function, _ in breakdown.in_turn(cases, 2)]
    assert order == [
        ("seq2spec shipped (run 1)", first),
        ("seq2spec f (run 1)", second),
        ("seq2spec shipped (run 2)", first),
        ("seq2spec f (run 2)", second),
    ]
    assert [method for _, method, _, _ in breakdown.in_turn(cases, 1)] == ["seq2spec shipped", "seq2spec f"]


def test_draft_names(breakdown):
    assert breakdown.draft_method("shipped", ["shipped"]) == "seq2spec"  # the published rows keep their name
    assert breakdown.draft_method("shipped", ["shipped", "runs/cand/f"]) == "seq2spec shipped"
    assert breakdown.draft_method("runs/cand/f", ["shipped", "runs/cand/f"]) == "seq2spec f"


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--drafts", "no/such/draft"], "no/such/draft is neither"), (["--repeats", "0"], "--repeats must be at least 1")],
)
def test_bad_options_stop_before_any_model_loads(breakdown, argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        breakdown.main(argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err
