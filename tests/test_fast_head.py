"""seq2spec.decoding.fast.head: the big model's head is computed by another product (in vocabulary slices, or each
position alone) for an input shape only after that product matched the model's own bit for bit on that shape, the
fastest of those that matched is used, and the model gets its own head back after every call."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding.fast import head as head_module
from seq2spec.decoding.fast.head import OWN, PER_POSITION, SLICE, SLICED, BigModelHead, FastHead

EXACT, CHOOSE = FastHead.exact, FastHead.choose


def timed_as(monkeypatch, seconds: dict[str, float]) -> None:
    """Each product is timed as taking the given seconds, whatever it really takes (its check still runs)."""
    exact, choose = EXACT, CHOOSE

    def fake_exact(self, name, flat, reference):
        return None if exact(self, name, flat, reference) is None else seconds[name]

    monkeypatch.setattr(FastHead, "exact", fake_exact)
    monkeypatch.setattr(FastHead, "choose", lambda self, flat, expected, _: choose(self, flat, expected, seconds[OWN]))


def exact_per_position(self, hidden):
    """A per-position product equal by construction to the head applied to each position alone."""
    flat = hidden.reshape(-1, hidden.shape[-1])
    return torch.cat([self.head(position) for position in flat.split(1)]).view(*hidden.shape[:-1], -1)


def counting(head: torch.nn.Module) -> list:
    calls: list = []
    head.register_forward_hook(lambda *args: calls.append(1))
    return calls


def test_the_fastest_product_found_equal_is_used_for_its_shape(monkeypatch):
    torch.manual_seed(0)
    head = torch.nn.Linear(64, 3 * SLICE + 100, bias=False)
    monkeypatch.setattr(FastHead, "per_position", exact_per_position)
    timed_as(monkeypatch, {OWN: 3.0, SLICED: 2.0, PER_POSITION: 1.0})
    fast = FastHead(head)
    hidden = torch.randn(2, 3, 64)
    with torch.no_grad():
        assert torch.equal(fast(hidden), head(hidden))  # the first call returns the model's own product
        assert fast.choices == {(6, 64): PER_POSITION}
        calls = counting(head)
        monkeypatch.setattr(FastHead, "per_position", lambda self, hidden: torch.full((2, 3, 3 * SLICE + 100), 7.0))
        assert torch.equal(fast(hidden), torch.full((2, 3, 3 * SLICE + 100), 7.0))  # the chosen product, not the head
        assert not calls
        monkeypatch.setattr(FastHead, "per_position", exact_per_position)
        reshaped = torch.randn(1, 6, 64)  # as many positions in another shape: the same product, each position's
        alone = torch.cat([head(position) for position in reshaped.reshape(6, 64).split(1)]).view(1, 6, -1)
        assert torch.equal(fast(reshaped), alone) and fast.choices == {(6, 64): PER_POSITION}
    timed_as(monkeypatch, {OWN: 1.0, SLICED: 2.0, PER_POSITION: 3.0})
    slower = FastHead(head)
    with torch.no_grad():
        slower(hidden)
    assert slower.choices == {(6, 64): OWN}  # where the model's own product is fastest, it stays


def test_a_product_that_differs_is_never_used_however_fast(monkeypatch):
    """A product that disagrees (as a kernel with another summation order would) is caught and never used."""
    torch.manual_seed(1)
    head = torch.nn.Linear(64, 3 * SLICE + 100, bias=False)
    monkeypatch.setattr(FastHead, "per_position", lambda self, hidden: exact_per_position(self, hidden) * (1 + 1e-3))
    timed_as(monkeypatch, {OWN: 3.0, SLICED: 2.0, PER_POSITION: 1.0})
    wrong = FastHead(head)
    wrong.weights = [w * (1 + 1e-3) for w in wrong.weights]  # the sliced product differs too
    other = torch.randn(3, 2, 64)
    with torch.no_grad():
        assert torch.equal(wrong(other), head(other))
        assert wrong.choices == {(6, 64): OWN}
        assert torch.equal(wrong(other), head(other))


def test_many_positions_or_a_bias_never_take_the_per_position_product(monkeypatch):
    torch.manual_seed(2)
    monkeypatch.setattr(FastHead, "per_position", exact_per_position)
    timed_as(monkeypatch, {OWN: 3.0, SLICED: 2.0, PER_POSITION: 1.0})
    with torch.no_grad():
        for head, hidden in (
            (torch.nn.Linear(64, 2 * SLICE, bias=False), torch.randn(3, 3, 64)),  # 9 positions
            (torch.nn.Linear(64, 2 * SLICE, bias=True), torch.randn(1, 2, 64)),
        ):
            fast = FastHead(head)
            assert torch.equal(fast(hidden), head(hidden))
            assert fast.choices[(hidden.numel() // 64, 64)] in (OWN, SLICED)


def test_one_position_is_always_the_model_s_own_product():
    head = torch.nn.Linear(64, 2 * SLICE, bias=False)
    fast = FastHead(head)
    calls = counting(head)
    with torch.no_grad():
        fast(torch.randn(1, 1, 64))
    assert calls == [1] and not fast.choices


@pytest.fixture(autouse=True)
def small_heads_are_checked_too(monkeypatch):
    """The toy models' heads are far below the size where another product pays; the tests check them anyway."""
    monkeypatch.setattr(head_module, "MIN_HEAD_BYTES", 0)


def test_the_model_gets_its_own_head_back_even_after_an_error():
    big = build_toy_whisper(seed=4)
    own = big.get_output_embeddings()
    heads = BigModelHead()
    with heads.installed(big):
        assert isinstance(big.get_output_embeddings(), FastHead)
    assert big.get_output_embeddings() is own
    with pytest.raises(RuntimeError), heads.installed(big):
        raise RuntimeError("a failing forward")
    assert big.get_output_embeddings() is own


@pytest.mark.parametrize("fastest", [OWN, SLICED, PER_POSITION])
def test_speculator_output_is_unchanged_and_the_head_restored(monkeypatch, fastest):
    from seq2spec.whisper.draft import draft_from_big_layers

    timed_as(monkeypatch, {OWN: 2.0, SLICED: 2.0, PER_POSITION: 2.0} | {fastest: 1.0})
    big = build_toy_whisper(seed=0, decoder_layers=2)
    own = big.get_output_embeddings()
    features = toy_features(4, seed=12)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    lengths = (expected != big.generation_config.eos_token_id).sum(dim=1)
    assert len({tuple(row) for row in expected.tolist()}) >= 3 and lengths.unique().numel() >= 2 and lengths.min() >= 5
    speculator = Seq2SeqSpeculator(big, draft_from_big_layers(big, [0]))
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert big.get_output_embeddings() is own
    checked = speculator._big_head.fast.choices
    assert checked and all(positions > 1 for positions, _ in checked)
    assert set(checked.values()) <= {OWN, SLICED, PER_POSITION}
    head_module.MIN_HEAD_BYTES = 2**40
    plain = Seq2SeqSpeculator(big, draft_from_big_layers(big, [0]))
    assert torch.equal(plain.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert plain._big_head.fast is None


@pytest.mark.parametrize("model_type", ["t5gemma", "marian", "m2m_100"])
def test_any_family_s_head_is_replaced_in_place_without_touching_its_input_embeddings(model_type):
    """The fast head goes where the model holds its head: T5Gemma's set_output_embeddings would also tie the
    decoder's input embeddings to whatever it is given."""
    from family_models import MAX_NEW_TOKENS, FamilyCase, greedy, perturbed, varied_model

    big, inputs = varied_model(FamilyCase(model_type, speech=False))
    own = big.get_output_embeddings()
    embeddings = big.get_decoder().get_input_embeddings().weight
    expected = greedy(big, inputs)
    speculator = Seq2SeqSpeculator(big, perturbed(big), num_draft_tokens=4)
    assert torch.equal(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator._big_head.fast is not None and speculator._big_head.fast.choices
    assert big.get_output_embeddings() is own and big.get_decoder().get_input_embeddings().weight is embeddings
