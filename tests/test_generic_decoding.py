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
    RaggedThenNothing,
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
from seq2spec.decoding.runner import DecoderRunner

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
    config = big.generation_config
    start = config.decoder_start_token_id if config.decoder_start_token_id is not None else config.bos_token_id
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


def test_fairseq_position_table_grows_as_generate_grows_it():
    """M2M100 extends its sinusoid table when a position passes its end; the rows the loop reads past it are the
    ones generate's own extension makes."""
    big, inputs = varied_model(M2M100)
    module = big.get_decoder().embed_positions
    full = module.weights
    try:
        module.weights = full[:5].clone()  # past position 2 (after the padding index) the table must grow
        expected = greedy(big, inputs)
        module.weights = full[:5].clone()
        speculator = Seq2SeqSpeculator(big, perturbed(big), num_draft_tokens=4)
        assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
        assert module.weights.shape[0] > MAX_NEW_TOKENS
    finally:
        module.weights = full


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


class _SingleTokenMaskDroppingBart(BartForConditionalGeneration):
    """A decoder that drops its attention mask when fed one token, as LED's does."""

    def forward(self, *args, decoder_input_ids=None, decoder_attention_mask=None, **kwargs):
        if decoder_input_ids is not None and decoder_input_ids.shape[1] == 1:
            decoder_attention_mask = None
        return super().forward(
            *args, decoder_input_ids=decoder_input_ids, decoder_attention_mask=decoder_attention_mask, **kwargs
        )


@pytest.mark.parametrize(("model_type", "drop", "fed"), [("led", False, 2), ("bart", True, 2), ("bart", False, 1)])
def test_a_decoder_that_drops_its_mask_for_one_token_is_fed_two(model_type, drop, fed):
    """Rounds that propose nothing feed one token to a cache whose rows are padded differently: a decoder that then
    reads every slot (LED's, or one made so) is found by the layout check and fed two tokens, the second's entry cut
    off again, and decodes as its own greedy generate; a decoder that keeps its mask is fed one."""
    model, inputs = varied_model(FamilyCase(model_type, speech=False))
    if drop:
        dropping = _SingleTokenMaskDroppingBart(model.config).eval()
        dropping.load_state_dict(model.state_dict())
        dropping.generation_config = model.generation_config
        model = dropping
    expected = greedy(model, inputs)
    runners = []
    original = DecoderRunner.forward

    def forward(runner, tokens):
        runners.append(runner)
        return original(runner, tokens)

    speculator = Seq2SeqSpeculator(model, RaggedThenNothing(expected))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DecoderRunner, "forward", forward)
        assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)
    assert speculator.last_stats.rounds_without_candidates > 0
    assert runners[-1].min_padded_width == fed  # the decoding's runner (the layout check's come first)


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


def _composite(decoder_config):
    """An EncoderDecoderModel of a tiny BERT encoder and ``decoder_config``'s decoder, with varied outputs."""
    from family_models import choose_end_token, shrink
    from transformers import BertConfig, EncoderDecoderConfig, EncoderDecoderModel

    shrink(decoder_config)
    decoder_config.is_decoder = decoder_config.add_cross_attention = True
    config = EncoderDecoderConfig.from_encoder_decoder_configs(shrink(BertConfig(vocab_size=256)), decoder_config)
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = 1, 0, 2
    for seed in range(8):  # the first weights whose rows end at different steps with an end token they emit
        torch.manual_seed(seed)
        model = EncoderDecoderModel(config=config).eval()
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for module in model.modules():
                for parameter in module.parameters(recurse=False):
                    if parameter.dim() >= 2:
                        gain = 1.0 if isinstance(module, torch.nn.Embedding) else 3 * parameter[0].numel() ** -0.5
                        parameter.copy_(torch.randn(parameter.shape, generator=generator) * gain)
        ids = torch.randint(5, 256, (6, 10), generator=generator)
        mask = (torch.arange(10)[None, :] < torch.tensor([10, 9, 7, 6, 5, 4])[:, None]).long()
        inputs = {"input_ids": ids * mask, "attention_mask": mask}
        if choose_end_token(model, inputs):
            return model, inputs
    raise AssertionError("no composite whose rows end at different steps")


def _decoder_configs():
    from transformers import BertConfig, GPT2Config, RobertaConfig

    return {
        "bert": BertConfig(vocab_size=256),
        "roberta": RobertaConfig(vocab_size=256),  # numbers positions fairseq's way, from its padding index
        "gpt2": GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=4, bos_token_id=1, eos_token_id=2),
    }


@pytest.mark.parametrize("decoder", ["bert", "roberta", "gpt2"])
def test_composite_encoder_decoder_with_any_decoder(decoder):
    model, inputs = _composite(_decoder_configs()[decoder])
    expected = greedy(model, inputs)
    assert variety(expected, model)["rows"] >= 3
    speculator = Seq2SeqSpeculator(model, perturbed(model), num_draft_tokens=4)
    assert_same(speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS), expected)


def test_positions_numbered_otherwise_than_generate_are_caught(monkeypatch):
    """Were RoBERTa's positions numbered by slot (as BERT's are), the check would refuse the model: a whole-sequence
    forward that numbers otherwise than the steps does not widen its tolerance past what rounding reaches."""
    import seq2spec.decoding.positions as positions

    model, inputs = _composite(_decoder_configs()["roberta"])
    monkeypatch.setattr(positions, "_fairseq_embeddings", lambda decoder: None)
    speculator = Seq2SeqSpeculator(model, perturbed(model), num_draft_tokens=4)
    with pytest.raises(NotImplementedError, match="differ from those of generate's one-token steps"):
        speculator.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS)
