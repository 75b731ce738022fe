"""seq2spec.decoding.fast.head: the big model's head computed in vocabulary slices is used for an input shape only after
it matched the model's own head bit for bit on that shape, and the model gets its own head back after every call."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding.fast import head as head_module
from seq2spec.decoding.fast.head import SLICE, BigModelHead, SlicedHead


def test_sliced_head_is_used_only_for_shapes_found_equal():
    torch.manual_seed(0)
    head = torch.nn.Linear(64, 3 * SLICE + 100, bias=False)
    sliced = SlicedHead(head)
    hidden = torch.randn(2, 5, 64)
    with torch.no_grad():
        assert torch.equal(sliced(hidden), head(hidden))
        assert sliced.equal == {(2, 5, 64): True}
        calls = []
        handle = head.register_forward_hook(lambda *args: calls.append(1))
        assert torch.equal(sliced(hidden), head(hidden))  # the sliced product, no longer the head's own
        assert len(calls) == 1
        handle.remove()
        # a slice that disagrees (as a kernel with another summation order would) is caught and never used
        wrong = SlicedHead(head)
        wrong.weights = [w * (1 + 1e-3) for w in wrong.weights]
        other = torch.randn(3, 2, 64)
        assert torch.equal(wrong(other), head(other)) and wrong.equal == {(3, 2, 64): False}
        assert torch.equal(wrong(other), head(other))


@pytest.fixture(autouse=True)
def small_heads_are_sliced_too(monkeypatch):
    """The toy models' heads are far below the size where slicing pays; the tests slice them anyway."""
    monkeypatch.setattr(head_module, "MIN_HEAD_BYTES", 0)


def test_the_model_gets_its_own_head_back_even_after_an_error():
    big = build_toy_whisper(seed=4)
    own = big.get_output_embeddings()
    heads = BigModelHead()
    with heads.installed(big):
        assert isinstance(big.get_output_embeddings(), SlicedHead)
    assert big.get_output_embeddings() is own
    with pytest.raises(RuntimeError), heads.installed(big):
        raise RuntimeError("a failing forward")
    assert big.get_output_embeddings() is own


def test_speculator_output_is_unchanged_and_the_head_restored():
    from seq2spec.whisper.draft import draft_from_big_layers

    big = build_toy_whisper(seed=0, decoder_layers=2)
    own = big.get_output_embeddings()
    features = toy_features(4, seed=12)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    lengths = (expected != big.generation_config.eos_token_id).sum(dim=1)
    assert len({tuple(row) for row in expected.tolist()}) >= 3 and lengths.unique().numel() >= 2 and lengths.min() >= 5
    speculator = Seq2SeqSpeculator(big, draft_from_big_layers(big, [0]))
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert big.get_output_embeddings() is own
    checked = speculator._big_head.sliced.equal
    assert checked and all(shape[1] > 1 or shape[0] > 1 for shape in checked)
    head_module.MIN_HEAD_BYTES = 2**40
    unsliced = Seq2SeqSpeculator(big, draft_from_big_layers(big, [0]))
    assert torch.equal(unsliced.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert unsliced._big_head.sliced is None


@pytest.mark.parametrize("model_type", ["t5gemma", "marian", "m2m_100"])
def test_any_family_s_head_is_sliced_in_place_without_touching_its_input_embeddings(model_type):
    """The sliced head goes where the model holds its head: T5Gemma's set_output_embeddings would also tie the
    decoder's input embeddings to whatever it is given."""
    from family_models import MAX_NEW_TOKENS, FamilyCase, greedy, perturbed, varied_model

    big, inputs = varied_model(FamilyCase(model_type, speech=False))
    own = big.get_output_embeddings()
    embeddings = big.get_decoder().get_input_embeddings().weight
    expected = greedy(big, inputs)
    speculator = Seq2SeqSpeculator(big, perturbed(big), num_draft_tokens=4)
    assert torch.equal(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator._big_head.sliced is not None and speculator._big_head.sliced.equal
    assert big.get_output_embeddings() is own and big.get_decoder().get_input_embeddings().weight is embeddings
