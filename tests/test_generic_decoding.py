"""The generic path's parts, each against the model's own greedy generate: the arguments families need
(``forced_bos_token_id``, a decoder prompt), fairseq position numbers when the padding token is emitted, a router's
expert capacity, processors that keep state per row, and the check that refuses a decoder the layout does not fit."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same
from conftest import greedy as greedy_ids
from family_models import (
    MAX_NEW_TOKENS,
    FamilyCase,
    build,
    greedy,
    perturbed,
    tiny_config,
    varied_model,
    variety,
)
from transformers import BartForConditionalGeneration

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources
from seq2spec.decoding.positions import position_kind

M2M100 = FamilyCase("m2m_100", speech=False)


def test_forced_target_language_as_nllb_is_decoded():
    """NLLB and M2M100 name the target language by forcing the first generated token (``forced_bos_token_id``)."""
    big, inputs = varied_model(M2M100)
    language = 17
    expected = greedy(big, {**inputs, "forced_bos_token_id": language})
    assert (expected[:, 1] == language).all() and not torch.equal(expected, greedy(big, inputs))
    speculator = Seq2SeqSpeculator(big, perturbed(big), num_draft_tokens=4)
    got = speculator.generate(**inputs, forced_bos_token_id=language, max_new_tokens=MAX_NEW_TOKENS)
    assert_same(got, expected)


@pytest.mark.parametrize("model_type", ["m2m_100", "bart", "marian", "t5", "t5gemma", "pegasus_x"])
def test_decoder_prompt_of_several_tokens(model_type):
    """A decoder prompt (``decoder_input_ids``) is the first forward's prompt: counted positions (fairseq), table
    rows, rotary angles and relative distances start from it as generate's do."""
    big, inputs = varied_model(FamilyCase(model_type, speech=False))
    start = big.generation_config.decoder_start_token_id
    rows = inputs["input_ids"].shape[0]
    prompt = torch.tensor([[start, 40, 41]]).expand(rows, -1)
    expected = greedy(big, {**inputs, "decoder_input_ids": prompt})
    assert torch.equal(expected[:, :3], prompt) and variety(expected, big)["rows"] >= 2
    speculator = Seq2SeqSpeculator(big, perturbed(big), num_draft_tokens=4)
    assert_same(speculator.generate(**inputs, decoder_input_ids=prompt, max_new_tokens=MAX_NEW_TOKENS), expected)


def test_fairseq_positions_when_the_padding_token_is_emitted():
    """M2M100's positions skip padding tokens: a padding token the model emits takes the padding index's row and the
    tokens after it keep counting their slots, as generate's one-token steps number them."""
    big, inputs = varied_model(M2M100)
    config = big.generation_config
    free = greedy(big, inputs)
    tokens, counts = free[:, 1:].unique(return_counts=True)
    order = counts.argsort(descending=True)
    emitted = next(
        int(token) for token in tokens[order] if int(token) not in (config.eos_token_id, config.decoder_start_token_id)
    )
    modules = [big.get_decoder().embed_positions, big.get_encoder().embed_positions]
    for module in modules:  # the model's padding token is now one it emits mid-sequence
        module.padding_idx = emitted
    try:
        expected = greedy(big, inputs)
        body = expected[:, 1:]
        assert ((body == emitted).cumsum(dim=1) < (body != emitted).cumsum(dim=1)).any(), "no padding token mid-row"
        speculator = Seq2SeqSpeculator(big, big, num_draft_tokens=5)
        assert speculator.big_family.positions == "fairseq"
        assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    finally:
        for module in modules:
            module.padding_idx = config.pad_token_id


def test_switch_transformers_feeds_no_more_tokens_than_an_expert_takes():
    """Switch Transformers' routers drop a row's tokens past ``expert_capacity`` within one forward; the loop never
    feeds a row more than that, so long drafts stay exact."""
    big, inputs = varied_model(FamilyCase("switch_transformers", speech=False))
    original = big.config.expert_capacity
    for module in big.modules():
        if hasattr(module, "expert_capacity"):
            module.expert_capacity = 3
    big.config.expert_capacity = 3
    try:
        expected = greedy(big, inputs)
        speculator = Seq2SeqSpeculator(big, big, num_draft_tokens=8, adaptive=False)
        assert speculator.big_family.max_fed_tokens == 3
        assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
        assert max(i for i, count in enumerate(speculator.last_stats.accepted_length_histogram) if count) <= 2
    finally:
        for module in big.modules():
            if hasattr(module, "expert_capacity"):
                module.expert_capacity = original
        big.config.expert_capacity = original


def test_nllb_moe_whose_routes_depend_on_the_batch_is_refused():
    config = tiny_config(FamilyCase("nllb-moe", speech=False))
    config.moe_eval_capacity_token_fraction = 0.5
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    with pytest.raises(NotImplementedError, match="moe_eval_capacity_token_fraction=0.5"):
        Seq2SeqSpeculator(model)


@pytest.mark.parametrize(
    "arguments",
    [
        {"encoder_no_repeat_ngram_size": 1},
        {"encoder_repetition_penalty": 1.5},
        {"prefix_allowed_tokens_fn": lambda row, ids: [1, *range(2, 60)] if row % 2 else [1, *range(0, 128, 2)]},
    ],
    ids=["encoder_no_repeat_ngram_size", "encoder_repetition_penalty", "prefix_allowed_tokens_fn"],
)
def test_processors_that_keep_state_per_row(toy_models, arguments):
    """Processors indexed by generate's row (Blenderbot's encoder n-grams, an encoder repetition penalty, a row's
    allowed tokens) see each row's own state while rows leave the batch at different steps."""
    models = toy_models["t5"]
    big = models["big"]
    pad = big.generation_config.pad_token_id
    for seed in range(40):  # the first batch the processor changes, whose rows finish at different steps
        input_ids, mask = random_sources(7, seed=seed, pad_id=pad)
        expected = greedy_ids(big, input_ids, mask, max_new_tokens=24, **arguments)
        plain = greedy_ids(big, input_ids, mask, max_new_tokens=24)
        if (expected[:, 1:] != pad).sum(dim=1).unique().numel() >= 3 and not torch.equal(plain, expected):
            break
    else:
        raise AssertionError("no batch the processor changes whose rows end at different steps")
    speculator = Seq2SeqSpeculator(big, models["perturbed"], num_draft_tokens=4)
    assert_same(speculator.generate(input_ids, mask, max_new_tokens=24, **arguments), expected)


class _MaskIgnoringBart(BartForConditionalGeneration):
    """A decoder that drops its attention mask: rows with unused cache slots would read them."""

    def forward(self, *args, decoder_attention_mask=None, **kwargs):
        return super().forward(*args, **kwargs)


def test_a_decoder_that_ignores_the_layout_is_refused_before_decoding():
    big, inputs = varied_model(FamilyCase("bart", speech=False))
    broken = _MaskIgnoringBart(big.config).eval()
    broken.load_state_dict(big.state_dict())
    broken.generation_config = big.generation_config
    speculator = Seq2SeqSpeculator(broken, perturbed(broken))
    with pytest.raises(NotImplementedError, match="differ from those of generate's one-token steps"):
        speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS)


def test_a_position_module_of_an_unknown_kind_is_refused_at_construction():
    big = build(FamilyCase("bart", speech=False))
    decoder = big.get_decoder()
    table = decoder.embed_positions

    class Shifted(torch.nn.Module):  # positions of its own making: nothing says how to number them per row
        def __init__(self) -> None:
            super().__init__()
            self.table = table

        def forward(self, input_ids, cache_length=0, position_ids=None):
            return self.table(input_ids, cache_length + 1, position_ids)

    decoder.embed_positions = Shifted()
    assert position_kind(big)[0] is None
    with pytest.raises(NotImplementedError, match="Shifted, which seq2spec cannot number per row"):
        Seq2SeqSpeculator(big)
