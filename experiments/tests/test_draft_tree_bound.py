"""experiments/draft_tree_bound.py: simulated rounds of a chain, leaves and a branch count the tokens each keeps."""

from pathlib import Path

import pytest
import torch
from sample_speech import encoder_output
from script_loading import load_script

RECIPES = Path(__file__).resolve().parents[1]  # experiments/
PROMPT = [50258, 50259, 50359, 50363]  # <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>
CHAIN = 6


@pytest.fixture(scope="module")
def recipe():
    return load_script(RECIPES / "draft_tree_bound.py")


@pytest.fixture(scope="module")
def models():
    pytest.importorskip("safetensors")
    from seq2spec.default_models import load_whisper_base
    from seq2spec.whisper.draft import load_whisper_draft

    big, _ = load_whisper_base()
    return big.eval(), load_whisper_draft(big).eval()


@pytest.fixture(scope="module")
def encoded(models):
    return encoder_output(models[0])


def drafted(recipe, draft, encoded, prefix: list[int], count: int, eos: int):
    """The draft's own chain of ``count`` tokens after ``prefix`` (no confidence stop)."""
    stepper = recipe.DraftStepper(draft, encoded[None])
    return stepper.chain(stepper.feed(prefix), count, 0.0, eos)


@torch.no_grad()
def run(recipe, models, encoded, labels: list[int], tree, max_tokens: int = CHAIN) -> tuple[int, int, int]:
    big, draft = models
    item = {"ids": torch.tensor(labels), "prompt": len(PROMPT), "encoded": encoded}
    eos = big.generation_config.eos_token_id
    tally = recipe.simulate(draft, [item], tree, max_tokens=max_tokens, min_confidence=0.0, eos=eos)
    return tally.tokens, tally.rounds, tally.tree_hits


@torch.no_grad()
def test_labels_the_chain_proposes_need_no_tree(recipe, models, encoded):
    big, draft = models
    eos = big.generation_config.eos_token_id
    chain = [step.token for step in drafted(recipe, draft, encoded, PROMPT, 8, eos)]
    assert eos not in chain
    labels = PROMPT + chain
    for tree in (recipe.Tree("chain"), recipe.Tree("leaves", leaves_below=1.0), recipe.Tree("b", branch_tokens=3)):
        # every proposal kept plus the big model's own token: two rounds of 3 + 1, nothing off the chain used
        assert run(recipe, models, encoded, labels, tree, max_tokens=3) == (8, 2, 0)


@torch.no_grad()
def test_the_second_choice_at_the_weakest_token_is_kept_by_leaves_and_branch(recipe, models, encoded):
    big, draft = models
    eos = big.generation_config.eos_token_id
    chain = drafted(recipe, draft, encoded, PROMPT, CHAIN, eos)
    weakest = min(range(CHAIN), key=lambda i: chain[i].confidence)
    swerve = PROMPT + [step.token for step in chain[:weakest]] + [chain[weakest].second]
    tail = [step.token for step in drafted(recipe, draft, encoded, swerve, 3, eos)]
    assert eos not in [step.token for step in chain] + swerve + tail
    labels = swerve + tail
    total = len(labels) - len(PROMPT)
    # the chain keeps the tokens before the weakest, base adds its own there; the tail takes a second round
    assert run(recipe, models, encoded, labels, recipe.Tree("chain")) == (total, 2, 0)
    # a leaf there adds the token after it: still two rounds (the tail's last tokens), one helped
    assert run(recipe, models, encoded, labels, recipe.Tree("leaves", leaves_below=1.0)) == (total, 2, 1)
    # a branch from there drafts the tail itself: one round
    assert run(recipe, models, encoded, labels, recipe.Tree("b", branch_tokens=3)) == (total, 1, 1)


def test_the_sets_are_asked_for(recipe):
    with pytest.raises(SystemExit):
        recipe.main([])
