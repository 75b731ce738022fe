"""experiments/feature_fed_draft.py: the state-fed draft starts as the shipped one; its simulated rounds count right."""

from pathlib import Path

import pytest
import torch
from sample_speech import encoder_output
from script_loading import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "feature_fed_draft.py"
PROMPT = [50258, 50259, 50359, 50363]  # <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>


@pytest.fixture(scope="module")
def recipe():
    return load_script(SCRIPT)


@pytest.fixture(scope="module")
def pair(recipe):
    pytest.importorskip("safetensors")
    torch.manual_seed(0)
    big, model = recipe.load_pair()
    return big, model.eval()


@pytest.fixture(scope="module")
def encoded(pair):
    return encoder_output(pair[0])


@torch.no_grad()
def own_greedy(model, encoded: torch.Tensor, steps: int, eos: int) -> list[int]:
    """The shipped draft's own greedy continuation of the prompt (no state fed), up to its end token."""
    ids = list(PROMPT)
    while len(ids) < len(PROMPT) + steps and ids[-1] != eos:
        tokens = torch.tensor([ids])
        hidden = model.hidden(tokens, torch.zeros(1, len(ids), 512), encoded[None])
        ids.append(int(model.logits(hidden)[0, -1].argmax()))
    return ids


def item(ids: list[int], encoded: torch.Tensor) -> dict:
    return {"ids": torch.tensor(ids), "prompt": len(PROMPT), "encoded": encoded, "states": torch.randn(len(ids), 512)}


def test_states_before_moves_states_one_position_on(recipe):
    states = torch.arange(6.0).view(1, 3, 2)
    assert recipe.states_before(states).tolist() == [[[0.0, 0.0], [0.0, 1.0], [2.0, 3.0]]]


@torch.no_grad()
def test_a_fresh_state_map_leaves_the_shipped_draft_unchanged(pair, encoded):
    big, model = pair
    encoded = encoded[None]
    ids = torch.tensor([PROMPT + [440, 1029, 13]])
    states = torch.randn(1, ids.shape[1], 512)
    fed = model.logits(model.hidden(ids, states, encoded))
    shipped = model.draft(input_ids=ids, encoder_outputs=(encoded,)).logits
    assert torch.equal(fed.argmax(-1), shipped.argmax(-1))
    torch.testing.assert_close(fed, shipped)


@pytest.mark.parametrize("max_draft_tokens", [1, 3, 5])
def test_rounds_follow_the_labels(recipe, pair, encoded, max_draft_tokens):
    big, model = pair
    eos = big.generation_config.eos_token_id
    agreeing = own_greedy(model, encoded, 12, eos)  # labels the draft proposes itself
    generated = len(agreeing) - len(PROMPT)
    assert generated >= 7
    tokens, rounds = recipe.simulated_rounds(
        model,
        [item(agreeing, encoded)],
        max_draft_tokens=max_draft_tokens,
        min_draft_confidence=0.0,
        eos=eos,
        use_states=False,
    )
    # every proposal kept, plus the big model's own token: max_draft_tokens + 1 a round, the last round short
    assert (tokens, rounds) == (generated, -(-generated // (max_draft_tokens + 1)))


def test_rounds_gain_one_token_when_nothing_is_kept(recipe, pair, encoded):
    big, model = pair
    eos = big.generation_config.eos_token_id
    unknown = PROMPT + [eos - 1] * 5  # a token the draft's vocabulary subset never proposes
    assert eos - 1 not in model.draft.proj_out.token_ids.tolist()
    tokens, rounds = recipe.simulated_rounds(
        model, [item(unknown, encoded)], max_draft_tokens=3, min_draft_confidence=0.0, eos=eos, use_states=False
    )
    assert (tokens, rounds) == (5, 5)  # nothing kept: one token a round


def test_teacher_forced_agreement_counts_label_positions(recipe, pair, encoded):
    big, model = pair
    agreeing = own_greedy(model, encoded, 6, big.generation_config.eos_token_id)
    assert recipe.teacher_forced_agreement(model, [item(agreeing, encoded)]) == 1.0
    wrong = agreeing[: len(PROMPT)] + [t + 1 for t in agreeing[len(PROMPT) :]]
    assert recipe.teacher_forced_agreement(model, [item(wrong, encoded)]) < 1.0


@pytest.mark.parametrize(
    "argv",
    [["--stage", "encode"], ["--stage", "train", "--train-sets", "a"], ["--stage", "eval"]],
)
def test_options_a_stage_needs_are_asked_for(recipe, argv):
    with pytest.raises(SystemExit):
        recipe.main(argv)
