"""A draft made of the big model's own decoder layers (``seq2spec.drafts.own_layers``) in every family, distilled on
the user's lines (``seq2spec.drafts.distill``), saved and loaded, and made by ``seq2spec distill-draft``."""

from __future__ import annotations

import json
import random

import pytest
import torch
from conftest import assert_same
from family_models import (
    MAX_NEW_TOKENS,
    FamilyCase,
    encoder_decoder_cases,
    generate_arguments,
    greedy,
    varied_model,
)

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.main import main
from seq2spec.commands.toys import build_toy_model
from seq2spec.decoding.families import REFUSED
from seq2spec.drafts.distill import DistillOptions, agreement, distill_layer_draft, label_batch
from seq2spec.drafts.own_layers import (
    chosen_layers,
    decoder_layer_list,
    is_layer_draft_folder,
    layer_draft,
    load_layer_draft,
    own_layer_list,
    save_layer_draft,
)
from seq2spec.pairing import ModelPair

SERVED = [case for case in encoder_decoder_cases() if case.model_type not in REFUSED]
WORDS = "the cat sat on a mat and then went home to sleep while dogs barked at night".split()


def _ids(case: FamilyCase) -> str:
    return case.name


def _snapshot(model) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


@pytest.mark.parametrize("case", SERVED, ids=_ids)
def test_a_draft_of_the_big_models_last_layer_decodes_as_greedy_in_every_family(case):
    big, inputs = varied_model(case)
    expected = greedy(big, inputs)
    before = _snapshot(big)
    draft = layer_draft(big, (-1,))
    assert len(decoder_layer_list(draft)) == 1 < len(decoder_layer_list(big))
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=3, pause_draft=False)
    assert speculator.shares_encoder  # the big model's encoder module itself: one encoder call per batch
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator.last_stats.draft_encoder_calls == 0 and speculator.last_stats.draft_forwards > 0
    after = big.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)  # the big model is as it was


@pytest.mark.parametrize("case", [case for case in SERVED if case.model_type != "whisper"], ids=_ids)
def test_distillation_runs_in_every_family_and_the_draft_stays_exact(case):
    """The encoder output is the one generate made, as the family's encoder returns it (a speech encoder's subsampled
    mask, Switch's router logits, Pop2Piano's conditioned features); ``generate``'s own arguments reach the labels."""
    big, inputs = varied_model(case)
    arguments = generate_arguments(big)
    model_inputs = {name: value for name, value in inputs.items() if name not in arguments}
    draft = layer_draft(big, (0,))
    options = DistillOptions(steps=3, max_new_tokens=MAX_NEW_TOKENS, held_out=0.5)
    stats = distill_layer_draft(big, draft, [model_inputs, model_inputs], options, **arguments)
    assert stats.steps == 3 and stats.labelled_tokens > 0 and stats.agreement_after is not None
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=3, pause_draft=False)
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), greedy(big, inputs))


def test_a_translation_models_target_language_reaches_the_labels():
    """NLLB and M2M100 take the target language as ``forced_bos_token_id``: the labels are generate's with it."""
    big, inputs = varied_model(FamilyCase("m2m_100", speech=False))
    target = int(greedy(big, inputs)[0, 3])  # a token the model writes, standing for a language token
    labelled = label_batch(big, inputs, DistillOptions(max_new_tokens=MAX_NEW_TOKENS), forced_bos_token_id=target)
    assert (labelled.decoder_input_ids[:, 1] == target).all() and (labelled.targets[:, 0] == target).all()
    draft = layer_draft(big, (0,))
    distill_layer_draft(big, draft, [labelled, labelled], DistillOptions(steps=3, max_new_tokens=MAX_NEW_TOKENS))
    expected = greedy(big, {**inputs, "forced_bos_token_id": target})
    speculator = Seq2SeqSpeculator(big, draft, pause_draft=False)
    assert_same(speculator.generate(**inputs, forced_bos_token_id=target, max_new_tokens=MAX_NEW_TOKENS), expected)


def test_the_draft_shares_all_but_its_layers_and_numbers_them_afresh(toy_byte_models):
    big = build_toy_model("bart", seed=3, layers=3, decoder_layers=3)
    draft = layer_draft(big, (0, 2))
    assert draft.get_encoder() is big.get_encoder()
    assert draft.get_output_embeddings().weight is big.get_output_embeddings().weight
    assert draft.get_decoder().embed_tokens.weight is big.get_decoder().embed_tokens.weight
    own = {id(parameter) for parameter in own_layer_list(draft).parameters()}
    assert not own & {id(parameter) for parameter in big.parameters()}  # copies: training them leaves big alone
    big_layers = decoder_layer_list(big)
    for index, (layer, source) in enumerate(zip(own_layer_list(draft), (big_layers[0], big_layers[2]), strict=True)):
        assert layer.self_attn.layer_idx == index  # the draft's cache has two layers, not three
        assert torch.equal(layer.fc1.weight, source.fc1.weight)
    assert draft.config.decoder_layers == 2 and big.config.decoder_layers == 3


def test_a_t5_draft_without_layer_0_takes_its_position_table(toy_byte_models):
    big = toy_byte_models[0]
    draft = layer_draft(big, (1,))
    attention = own_layer_list(draft)[0].layer[0].SelfAttention
    source = decoder_layer_list(big)[0].layer[0].SelfAttention
    assert attention.has_relative_attention_bias
    assert torch.equal(attention.relative_attention_bias.weight, source.relative_attention_bias.weight)


@pytest.mark.parametrize(
    "layers, message",
    [((), "at least one"), ((5,), "layers 0..1"), ((1, 0), "in the order"), ((0, 0), "distinct"), ((0, 1), "every")],
)
def test_layers_that_cannot_make_a_draft_are_refused(layers, message):
    with pytest.raises(ValueError, match=message):
        chosen_layers(layers, 2)


def test_a_saved_draft_loads_around_its_big_model_and_is_refused_by_another(toy_byte_models, tmp_path):
    big, _, tokenizer = toy_byte_models
    draft = layer_draft(big, (1,))
    with torch.no_grad():
        for parameter in own_layer_list(draft).parameters():
            parameter.add_(0.01)  # as training leaves it: not the big model's layer any more
    save_layer_draft(draft, tmp_path / "draft")
    assert is_layer_draft_folder(tmp_path / "draft") and not is_layer_draft_folder(tmp_path)
    loaded = load_layer_draft(big, tmp_path / "draft")
    saved, restored = own_layer_list(draft).state_dict(), own_layer_list(loaded).state_dict()
    assert all(torch.equal(saved[name], restored[name]) for name in saved)
    pair = ModelPair.load(big, str(tmp_path / "draft"))
    assert pair.shares_encoder and pair.draft_family is not None
    batch = tokenizer(["the cat sat", "on a mat and then"], return_tensors="pt", padding=True)
    speculator = Seq2SeqSpeculator(big, str(tmp_path / "draft"), pause_draft=False)
    assert_same(speculator.generate(**batch, max_new_tokens=12), greedy(big, dict(batch), 12))
    other = build_toy_model("t5-v1_1", seed=9, vocab_size=len(tokenizer), decoder_layers=3)
    with pytest.raises(ValueError, match="2 decoder layers; this big model is a t5 with 3"):
        load_layer_draft(other, tmp_path / "draft")


def _lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(count)]


def test_distillation_teaches_the_draft_the_big_models_tokens_and_leaves_the_big_model_alone(toy_byte_models):
    big, _, tokenizer = toy_byte_models
    lines = _lines(64, seed=0)
    batches = [
        dict(tokenizer(lines[start : start + 16], return_tensors="pt", padding=True)) for start in (0, 16, 32, 48)
    ]
    options = DistillOptions(steps=60, max_new_tokens=16, held_out=0.0, learning_rate=3e-3)
    labelled = [label_batch(big, batch, options) for batch in batches]
    assert sum(batch.tokens for batch in labelled) > 200
    before, flags = _snapshot(big), [parameter.requires_grad for parameter in big.parameters()]
    draft = layer_draft(big, (0,))
    untrained = agreement(draft, labelled)
    stats = distill_layer_draft(big, draft, batches, options)
    assert stats.steps == 60 and stats.last_loss < stats.first_loss
    assert agreement(draft, labelled) > untrained + 0.15  # 0.21 -> 0.49 when written
    after = big.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert [parameter.requires_grad for parameter in big.parameters()] == flags
    assert all(parameter.grad is None for parameter in draft.parameters())
    batch = tokenizer(_lines(8, seed=5), return_tensors="pt", padding=True)
    speculator = Seq2SeqSpeculator(big, draft, pause_draft=False)
    assert_same(speculator.generate(**batch, max_new_tokens=16), greedy(big, dict(batch), 16))


def test_distillation_holds_out_batches_and_refuses_whisper(toy_byte_models):
    big, _, tokenizer = toy_byte_models
    lines = _lines(40, seed=1)
    batches = [
        dict(tokenizer(lines[start : start + 8], return_tensors="pt", padding=True)) for start in range(0, 40, 8)
    ]
    stats = distill_layer_draft(big, layer_draft(big, (0,)), batches, DistillOptions(steps=4, max_new_tokens=8))
    assert stats.batches == 5 and stats.held_out_batches == 1 and stats.agreement_after is not None
    with pytest.raises(ValueError, match="held_out"):
        DistillOptions(held_out=1.0)
    from toy_helpers import build_toy_whisper

    whisper = build_toy_whisper()
    with pytest.raises(ValueError, match="distill_whisper_draft.py"):
        distill_layer_draft(whisper, layer_draft(whisper, (0,)), [{}])


def test_the_distill_command_makes_a_draft_that_correct_takes(toy_byte_models, tmp_path, capsys):
    big, _, tokenizer = toy_byte_models
    model = tmp_path / "model"
    big.save_pretrained(model)
    tokenizer.save_pretrained(model)
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(_lines(48, seed=2)) + "\n", encoding="utf-8")
    out = tmp_path / "draft"
    arguments = ["distill-draft", str(lines), "--model", str(model), "--out", str(out), "--layers", "1"]
    code = main([*arguments, "--steps", "8", "--batch-size", "8", "--max-new-tokens", "12"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "agreement with the big model's greedy tokens" in printed.out and f"--draft {out}" in printed.out
    assert json.loads((out / "distill_stats.json").read_text())["steps"] == 8
    assert json.loads((out / "layer_draft.json").read_text())["layers"] == [1]
    source = tmp_path / "in.txt"
    source.write_text("the cat sat\non a mat\n", encoding="utf-8")
    code = main(["correct", str(source), "--model", str(model), "--draft", str(out), "--max-new-tokens", "12"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    batch = tokenizer(["the cat sat", "on a mat"], return_tensors="pt", padding=True)
    expected = tokenizer.batch_decode(greedy(big, dict(batch), 12), skip_special_tokens=True)
    assert printed.out.splitlines() == [text.strip() for text in expected]


def _exit_code(arguments: list[str]) -> int:
    try:
        return main(arguments)
    except SystemExit as stop:  # argparse's refusal of a flag
        return stop.code


@pytest.mark.parametrize(
    "extra, lines, message",
    [
        (["--layers", "0,x"], 12, "layer numbers"),
        (["--layers", "0,1"], 12, "every decoder layer"),
        (["--held-out", "2"], 12, "share"),
        ([], 3, "at least 8 non-empty lines"),
        (["--out", "{lines}"], 12, "not an empty folder"),
    ],
)
def test_the_distill_command_names_what_is_wrong(toy_byte_models, tmp_path, capsys, extra, lines, message):
    big, _, tokenizer = toy_byte_models
    big.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    source = tmp_path / "lines.txt"
    source.write_text("\n".join(_lines(lines, seed=3)) + "\n", encoding="utf-8")
    extra = [part.format(lines=source) for part in extra]
    arguments = ["distill-draft", str(source), "--model", str(tmp_path / "model"), "--out", str(tmp_path / "d")]
    assert _exit_code([*arguments, *extra, "--steps", "2"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
