"""seq2spec.drafts.shared_cross: a Whisper draft whose cross-attention projections are the big model's own takes the
big model's keys and values instead of computing them (loaded drafts whose stored projections are frozen copies get
the big model's modules); the output stays generate's, and a draft with projections of its own computes them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from toy_helpers import build_toy_whisper, prompted_long_form, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.decoding import search as search_module
from seq2spec.drafts.factory import ProposerFactory
from seq2spec.drafts.graphed_whisper import GraphedWhisperDraft
from seq2spec.drafts.lean_whisper import LeanWhisperDraft
from seq2spec.drafts.shared_cross import shared_cross_layers
from seq2spec.whisper.draft import WEIGHTS_FILE, draft_from_big_layers, load_whisper_draft, save_whisper_draft


@pytest.fixture(scope="module")
def big():
    return build_toy_whisper(seed=0, decoder_layers=3)


def _loaded(big, tmp_path, dtype=torch.float16, change=None):
    save_whisper_draft(draft_from_big_layers(big, [0, 2]), tmp_path, dtype=dtype)
    if change is not None:  # a stored weight edited, as when a recipe trains the projections
        path = tmp_path / WEIGHTS_FILE
        state = load_file(path)
        state[change] = state[change] + 0.01
        save_file(state, path)
    return load_whisper_draft(big, tmp_path)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["float16", "float32"])
def test_load_gives_frozen_copies_the_big_models_modules(big, tmp_path, dtype):
    draft = _loaded(big, tmp_path, dtype)
    layers, source = draft.model.decoder.layers, big.model.decoder.layers
    assert layers[0].encoder_attn.k_proj is source[0].encoder_attn.k_proj
    assert layers[1].encoder_attn.v_proj is source[2].encoder_attn.v_proj
    assert layers[1].encoder_attn.q_proj is not source[2].encoder_attn.q_proj  # only the key and value projections
    assert shared_cross_layers(big, draft) == ((0, 0), (1, 2))


def test_a_trained_projection_stays_the_drafts_own(big, tmp_path):
    draft = _loaded(big, tmp_path, change="layers.1.encoder_attn.v_proj.bias")
    assert shared_cross_layers(big, draft) == ((0, 0),)
    assert draft.model.decoder.layers[1].encoder_attn.v_proj is not big.model.decoder.layers[2].encoder_attn.v_proj
    assert shared_cross_layers(big, draft_from_big_layers(big, [0, 2])) == ()  # equal copies are not the same


def _count_cross_computations(monkeypatch) -> list[int]:
    computed: list[int] = []
    original = LeanWhisperDraft.cross_states
    monkeypatch.setattr(
        LeanWhisperDraft,
        "cross_states",
        lambda self, index, hidden: computed.append(index) or original(self, index, hidden),
    )
    return computed


def _record_runners(monkeypatch) -> list:
    """The big model's runner and each batch's draft runner."""
    runners: list = []
    make = ProposerFactory._draft_runner
    monkeypatch.setattr(
        ProposerFactory,
        "_draft_runner",
        lambda self, batch, stats: runners.append(made := make(self, batch, stats)) or made,
    )
    decode = search_module.speculative_decode
    monkeypatch.setattr(
        search_module,
        "speculative_decode",
        lambda runner, *args, **kwargs: runners.append(runner) or decode(runner, *args, **kwargs),
    )
    return runners


def _count_projection_calls(monkeypatch, modules) -> list[int]:
    """Calls of these modules' own forward: transformers' attention calls it, the exact mirror and the lean step
    compute from the weights."""
    calls: list[int] = []
    for module in modules:
        forward = module.forward
        monkeypatch.setattr(module, "forward", lambda hidden, forward=forward: calls.append(1) or forward(hidden))
    return calls


@pytest.mark.parametrize("lean", [True, False], ids=["lean-step", "transformers-step"])
def test_shared_layers_take_the_big_models_keys_and_values(big, tmp_path, monkeypatch, lean):
    draft = _loaded(big, tmp_path)
    features = toy_features(5, seed=8)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    lengths = (expected != big.generation_config.eos_token_id).sum(dim=1)
    assert len({tuple(row) for row in expected.tolist()}) >= 3 and lengths.unique().numel() >= 2
    speculator = Seq2SeqSpeculator(big, draft, lean_draft=lean, int8_draft=False)
    speculator.generate(input_features=features[:1], max_new_tokens=2, language="fr")  # probes run before counting
    computed = _count_cross_computations(monkeypatch)
    layers = draft.model.decoder.layers
    calls = _count_projection_calls(monkeypatch, [layers[0].encoder_attn.k_proj, layers[1].encoder_attn.v_proj])
    runners = _record_runners(monkeypatch)
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert calls == []
    assert speculator.last_stats.accepted_draft_tokens > 0
    assert computed == []  # neither shared layer computed its own
    draft_runner, big_runner = runners[-2:]
    for draft_layer, big_layer in ((0, 0), (1, 2)):
        mine = draft_runner.cache.cross_attention_cache.layers[draft_layer]
        theirs = big_runner.cache.cross_attention_cache.layers[big_layer]
        assert torch.equal(mine.keys, theirs.keys) and torch.equal(mine.values, theirs.values)

    features, kwargs = prompted_long_form()  # long form: a batch per window, previous text, padded prompts
    expected = big.generate(features, **kwargs)
    assert torch.equal(speculator.generate(input_features=features, **kwargs), expected)
    assert computed == []


def test_a_draft_with_its_own_projection_computes_it(big, tmp_path, monkeypatch):
    draft = _loaded(big, tmp_path, change="layers.0.encoder_attn.k_proj.weight")
    computed = _count_cross_computations(monkeypatch)
    features = toy_features(3, seed=2)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    speculator = Seq2SeqSpeculator(big, draft, int8_draft=False)
    speculator._proposers.lean_step()
    computed.clear()
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert computed == [0]


def test_without_the_exact_forward_the_draft_computes_its_own(big, tmp_path, monkeypatch):
    draft = _loaded(big, tmp_path)
    computed = _count_cross_computations(monkeypatch)
    features = toy_features(3, seed=2)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    speculator = Seq2SeqSpeculator(big, draft, int8_draft=False, exact_big_forward=False)
    speculator._proposers.lean_step()
    computed.clear()
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert sorted(computed) == [0, 1]


def test_the_fixed_cache_takes_given_keys_and_values(big, tmp_path, monkeypatch):
    draft = _loaded(big, tmp_path)
    computed = _count_cross_computations(monkeypatch)
    lean = LeanWhisperDraft(draft)
    graphed = GraphedWhisperDraft(lean, draft.config.max_target_positions, graphs=False)
    encoded = torch.randn(2, 30, big.config.d_model)
    given = lean.cross_states(1, encoded)
    computed.clear()
    runner = graphed.runner(encoded, {1: (given[0] + 1, given[1] - 1)})
    assert computed == [0]
    assert torch.equal(runner.buffers.cross_keys[1], given[0] + 1)
    assert torch.equal(runner.buffers.cross_values[1], given[1] - 1)


def test_the_speculator_on_the_fixed_cache_shares_them(big, tmp_path, monkeypatch):
    """The fixed-size cache (what CUDA graphs replay; eager here) takes the big model's keys and values as well."""
    monkeypatch.setattr(ProposerFactory, "static_draft_cache", lambda self, device: True)
    draft = _loaded(big, tmp_path)
    features = toy_features(5, seed=8)
    expected = big.generate(features, max_new_tokens=30, language="fr")
    speculator = Seq2SeqSpeculator(big, draft, int8_draft=False)
    assert speculator._proposers.graphed_step(speculator._proposers.lean_step()) is not None
    computed = _count_cross_computations(monkeypatch)
    runners = _record_runners(monkeypatch)
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert speculator.last_stats.accepted_draft_tokens > 0
    assert computed == []
    draft_runner = runners[-2]
    with torch.no_grad():
        encoded = big.get_encoder()(features).last_hidden_state
    rows, heads = features.shape[0], big.config.decoder_attention_heads
    for draft_layer, big_layer in ((0, 0), (1, 2)):  # the big layer's keys, as its exact forward computes them
        projection = big.model.decoder.layers[big_layer].encoder_attn.k_proj
        keys = F.linear(encoded, projection.weight, projection.bias).view(rows, -1, heads, big.config.d_model // heads)
        assert torch.equal(draft_runner.buffers.cross_keys[draft_layer][:rows], keys.transpose(1, 2))
