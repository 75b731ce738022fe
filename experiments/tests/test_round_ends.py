"""experiments/round_ends.py: rounds are classed by how they ended, and the timestamp oracles fix what they name."""

from pathlib import Path

import pytest
import torch
from sample_speech import encoder_output
from script_loading import load_script

RECIPES = Path(__file__).resolve().parents[1]  # experiments/
EOS, FIRST_TIMESTAMP = 50257, 50364
PROMPT = [50258, 50259, 50359, FIRST_TIMESTAMP]  # <|startoftranscript|> <|en|> <|transcribe|> <|0.00|>
MAX_TOKENS = 10


@pytest.fixture(scope="module")
def recipe():
    return load_script(RECIPES / "round_ends.py")


@pytest.fixture(scope="module")
def models():
    pytest.importorskip("safetensors")
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import load_whisper_draft

    big, _ = load_whisper_base()
    return big.eval(), load_whisper_draft(big).eval()


@pytest.mark.parametrize(
    ("chain", "labels", "end"),
    [
        ([1, 2, 3], [1, 2, 4, 5], "text"),
        ([1, 50400], [1, 50410, 7], "timestamp value"),
        ([1, 2], [1, 50400, 7], "timestamp placement: base"),
        ([1, 50400], [1, 2, 7], "timestamp placement: draft"),
        ([1, EOS], [1, 50400, EOS], "end of text"),
        ([1, 2], [1, EOS], "end of text"),
        ([1, 2], [1, 2, 3], "confidence"),
        ([1, 2, 3], [1, 2, 3, 4], "length limit"),
        ([1, 2, 3], [1, 2], "labels' end"),
    ],
)
def test_round_ends_are_classed(recipe, chain, labels, end):
    assert recipe.round_end(chain, labels, 3, EOS, FIRST_TIMESTAMP) == end


def drafted(recipe, draft, encoded, prefix: list[int], count: int) -> list[int]:
    """The draft's own ``count`` tokens after ``prefix``, no confidence stop, no Whisper rules."""
    stepper = recipe.DraftStepper(draft, encoded[None])
    return [step.token for step in stepper.chain(stepper.feed(prefix), count, 0.0, EOS)]


@torch.no_grad()
def test_the_oracles_fix_the_timestamps_they_name(recipe, models):
    big, draft = models
    encoded = encoder_output(big)
    words = drafted(recipe, draft, encoded, PROMPT, 5)
    assert max(words) < FIRST_TIMESTAMP  # text after <|0.00|>
    end, start = FIRST_TIMESTAMP + 60, FIRST_TIMESTAMP + 65
    segment = PROMPT + words[:4] + [end]
    assert drafted(recipe, draft, encoded, segment, 1) == [end]  # the draft would start the next segment at its end
    tail = drafted(recipe, draft, encoded, segment + [start], 3)
    assert EOS not in tail
    # base ends the segment where the draft reads on (placement), then starts the next one later than the draft would
    # (value); the labels are otherwise the draft's own tokens
    item = {"ids": torch.tensor(segment + [start] + tail), "prompt": len(PROMPT), "encoded": encoded}

    def rounds(oracle: str):
        tally = recipe.simulate(
            draft,
            [item],
            max_tokens=MAX_TOKENS,
            min_confidence=0.0,
            eos=EOS,
            first_timestamp=FIRST_TIMESTAMP,
            oracle=recipe.ORACLES[oracle],
        )
        assert tally.tokens == 9  # 4 words, 2 timestamps, 3 tail tokens
        return tally.rounds, dict(tally.ends)

    assert rounds("none") == (3, {"timestamp placement: base": 1, "timestamp value": 1, "labels' end": 1})
    assert rounds("values") == (2, {"timestamp placement: base": 1, "labels' end": 1})
    assert rounds("placement") == (2, {"timestamp value": 1, "labels' end": 1})
    assert rounds("both") == (1, {"labels' end": 1})


def test_the_sets_are_asked_for(recipe):
    with pytest.raises(SystemExit):
        recipe.main([])
