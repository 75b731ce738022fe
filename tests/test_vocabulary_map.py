"""Drafts of another vocabulary or mel-bin count: Whisper large-v3's vocabulary adds a language token to that of tiny
and base (every later special and timestamp token moves up one) and takes 128 mel bins where they take 80; the
English-only models use another tokenizer. The output stays the big model's own greedy output."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from family_models import encoder_decoder_cases, varied_model
from tokenizers import Tokenizer, models
from toy_helpers import (
    V3_SPECIALS,
    WHISPER_TOY_SPECIALS,
    WHISPER_TOY_TEXT_TOKENS,
    build_toy_whisper,
    perturbed_copy,
    toy_features,
    toy_whisper_tokenizer,
    without_token,
)
from transformers import PreTrainedTokenizerFast, WhisperFeatureExtractor

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import build_toy_model, random_sources
from seq2spec.decoding.proposal import DecodingBatch
from seq2spec.drafts.mel_bins import rebin_log_mel
from seq2spec.drafts.vocabulary_map import VocabularyMap

YUE = WHISPER_TOY_TEXT_TOKENS + V3_SPECIALS.index("<|yue|>")


@pytest.fixture(scope="module")
def v3_pair():
    """A large-v3-like toy (its vocabulary with <|yue|>) and a draft with the v2 vocabulary that agrees with it often
    (its weights but that token's, perturbed), with both tokenizers."""
    big = build_toy_whisper(5, special_tokens=V3_SPECIALS)
    draft = perturbed_copy(without_token(big, YUE), relative_noise=0.03)
    return big, draft, toy_whisper_tokenizer(V3_SPECIALS), toy_whisper_tokenizer(WHISPER_TOY_SPECIALS)


def test_tokens_are_matched_by_their_text():
    big = {"a": 0, "b": 1, "<|yue|>": 2, "c": 3}
    draft = {"a": 0, "c": 1, "b": 2, "d": 3}
    vocabulary = VocabularyMap.between(big, draft, 6, 6, fallback=3)  # ids 4-5 named in neither: matched in order
    assert vocabulary.to_big.tolist() == [0, 3, 1, -1, 4, 5]
    assert vocabulary.to_draft.tolist() == [0, 2, 3, 1, 4, 5]  # <|yue|> read as the fallback
    assert vocabulary.shared == 5
    scores = vocabulary.big_scores(torch.tensor([[0.5, 1.5, 2.5, 3.5, 4.5, 5.5]]))
    assert scores.tolist() == [[0.5, 2.5, float("-inf"), 1.5, 4.5, 5.5]]
    assert vocabulary.draft_ids(torch.tensor([[3, 2, 1]])).tolist() == [[1, 3, 2]]
    # a tokenizer naming the timestamps against one naming none: the unmatched ends matched in order
    named = VocabularyMap.between({"a": 0, "<|yue|>": 1, "<|0.00|>": 2, "<|0.02|>": 3}, {"a": 0}, 4, 3)
    assert named.to_big.tolist() == [0, 2, 3]


def test_draft_with_one_token_fewer_decodes_as_the_big_models_greedy(v3_pair):
    big, draft, big_tokenizer, draft_tokenizer = v3_pair
    features = toy_features(6, seed=41)
    speculator = Seq2SeqSpeculator(big, draft, big_tokenizer, draft_tokenizer=draft_tokenizer)
    assert speculator._pair.vocabulary is not None
    outputs = []
    for kwargs in ({"language": "de", "task": "translate"}, {"language": "fr", "return_timestamps": True}, {}):
        expected = big.generate(features, **kwargs)
        assert torch.equal(speculator.generate(input_features=features, **kwargs), expected), kwargs
        stats = speculator.last_stats
        assert stats.accepted_draft_tokens > stats.generated_tokens // 3, stats  # the draft proposes through the map
        outputs.append(expected)
    assert (outputs[1] > YUE).any()  # timestamp tokens (their ids one higher than the draft's) were decoded


def test_a_mapped_draft_in_long_form(v3_pair):
    big, draft, big_tokenizer, draft_tokenizer = v3_pair
    frames = [7000, 4200]
    features = toy_features(2, max(frames), seed=44)
    mask = torch.zeros(2, max(frames), dtype=torch.long)
    for row, length in enumerate(frames):
        mask[row, :length] = 1
        features[row, :, length:] = 0.0
    kwargs = {"attention_mask": mask, "return_timestamps": True, "language": "en", "condition_on_prev_tokens": True}
    speculator = Seq2SeqSpeculator(big, draft, big_tokenizer, draft_tokenizer=draft_tokenizer)
    assert torch.equal(speculator.generate(input_features=features, **kwargs), big.generate(features, **kwargs))
    assert speculator.last_stats.accepted_draft_tokens > 0


def test_an_english_only_draft_reads_no_language_or_task_token(v3_pair):
    big, draft, big_tokenizer, draft_tokenizer = v3_pair
    english = copy.deepcopy(draft)
    english.generation_config.is_multilingual = False
    speculator = Seq2SeqSpeculator(big, english, big_tokenizer, draft_tokenizer=draft_tokenizer)
    vocabulary = speculator._pair.vocabulary
    assert vocabulary.unread == {*big.generation_config.lang_to_id.values(), *big.generation_config.task_to_id.values()}
    features = toy_features(4, seed=43)
    expected = big.generate(features, language="fr", task="transcribe")
    assert torch.equal(speculator.generate(input_features=features, language="fr", task="transcribe"), expected)
    generation = big.generation_config
    start, no_timestamps = generation.decoder_start_token_id, generation.no_timestamps_token_id
    french, transcribe = generation.lang_to_id["<|fr|>"], generation.task_to_id["transcribe"]
    prompt = torch.tensor([[start, french, transcribe, no_timestamps]] * 4)
    batch = DecodingBatch(torch.zeros(4, 1), None, torch.zeros(4, 1, 1), prompt, (256,), 256)
    assert vocabulary.draft_batch(batch).prompt.tolist() == prompt[:, [0, 3]].tolist()


def test_draft_with_other_mel_bins_reads_the_features_rebinned():
    big = build_toy_whisper(6, num_mel_bins=128)
    draft = build_toy_whisper(6, decoder_layers=1)  # 80 bins, its own encoder
    generator = torch.Generator().manual_seed(45)
    features = 2 * torch.randn(3, 128, 1, generator=generator) + 0.3 * torch.randn(3, 128, 3000, generator=generator)
    expected = big.generate(features, language="en")
    speculator = Seq2SeqSpeculator(big, draft)
    assert not speculator.shares_encoder
    assert torch.equal(speculator.generate(input_features=features, language="en"), expected)
    assert speculator.last_stats.draft_encoder_calls == 1


def test_rebinned_features_are_close_to_the_draft_extractors_own():
    rate = 16000
    time = np.arange(3 * rate) / rate
    pitch = 140 + 40 * np.sin(2 * np.pi * 0.7 * time)  # a gliding voice with harmonics, 3 s
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    audio = sum(np.sin(k * phase) / k for k in range(1, 12)) * (0.6 + 0.4 * np.sin(2 * np.pi * 2 * time))
    audio = (0.1 * audio + 0.002 * np.random.default_rng(0).standard_normal(audio.size)).astype(np.float32)
    own = {
        bins: WhisperFeatureExtractor(feature_size=bins)(audio, sampling_rate=rate, return_tensors="pt")
        for bins in (80, 128)
    }
    rebinned = rebin_log_mel(own[128].input_features, 80)
    voiced = slice(0, 3 * rate // 160)
    error = (rebinned - own[80].input_features)[:, :, voiced].abs()
    assert rebinned.shape == own[80].input_features.shape
    within = float(torch.quantile(error.flatten(), 0.99))  # the rest: a few cells at the harmonics' steep edge
    assert error.mean() < 0.01 and within < 0.05, (float(error.mean()), within)
    assert torch.equal(rebin_log_mel(own[80].input_features, 80), own[80].input_features)


def test_a_draft_of_another_vocabulary_needs_both_tokenizers(v3_pair):
    big, draft, big_tokenizer, _ = v3_pair
    with pytest.raises(ValueError, match="different vocabularies .1769 vs 1768.*draft_tokenizer="):
        Seq2SeqSpeculator(big, draft, big_tokenizer)


def test_a_draft_sharing_little_text_is_refused():
    big = build_toy_model("t5-v1_1", seed=1)
    other = build_toy_model("t5-v1_1", vocab_size=96)
    size = big.config.vocab_size
    big_tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({f"w{i}": i for i in range(size)}, unk_token="w2"))
    )
    other_tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({f"x{i}": i for i in range(96)}, unk_token="x2"))
    )
    with pytest.raises(ValueError, match="share the text of only 0 of the draft's tokens"):
        Seq2SeqSpeculator(big, other, big_tokenizer, draft_tokenizer=other_tokenizer)


def word_tokenizer(ids: list[int]) -> PreTrainedTokenizerFast:
    """A tokenizer whose token ``w{i}`` has id ``ids[i]``."""
    vocab = {f"w{index}": token for index, token in enumerate(ids)}
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="w2")))


def renumbered(model, order: torch.Tensor):
    """A copy of ``model`` whose token ``order[i]`` is ``model``'s token ``i``: its embeddings, output rows and
    per-token output biases reordered."""
    copied = copy.deepcopy(model)
    tables = [copied.get_input_embeddings(), copied.get_output_embeddings()]
    tables += [part.get_input_embeddings() for part in (copied.get_encoder(), copied.get_decoder())]
    with torch.no_grad():
        for weight in {id(table.weight): table.weight for table in tables}.values():
            weight[order] = weight.clone()
        bias = getattr(copied, "final_logits_bias", None)  # BART's, Marian's, Pegasus's per-token output bias
        if bias is not None:
            bias[:, order] = bias.clone()
    return copied


@pytest.mark.parametrize("model_type", ["t5-v1_1", "pegasus", "m2m_100", "umt5"])
def test_a_text_draft_numbering_its_tokens_otherwise_proposes_what_it_would_with_the_same_ids(model_type):
    """The big model itself with its token ids permuted proposes exactly what an unpermuted copy proposes, only if
    sources, prompts and scores all pass through the map."""
    if model_type == "t5-v1_1":
        big = build_toy_model(model_type, seed=11)
        inputs, mask = random_sources(6, seed=12)
        inputs = {"input_ids": inputs, "attention_mask": mask}
    else:
        case = next(case for case in encoder_decoder_cases() if case.model_type == model_type)
        big, inputs = varied_model(case)
    size = big.get_output_embeddings().weight.shape[0]
    specials = (big.config.pad_token_id, big.config.eos_token_id, big.config.decoder_start_token_id)
    fixed = 1 + max(token for token in specials if token is not None)  # the special tokens keep their ids
    shuffled = torch.randperm(size - fixed, generator=torch.Generator().manual_seed(0))
    order = torch.cat([torch.arange(fixed), fixed + shuffled])
    expected = big.generate(**inputs, max_new_tokens=20, do_sample=False, num_beams=1)
    same_ids = Seq2SeqSpeculator(big, copy.deepcopy(big))
    mapped = Seq2SeqSpeculator(
        big, renumbered(big, order), word_tokenizer(list(range(size))), draft_tokenizer=word_tokenizer(order.tolist())
    )
    assert mapped._pair.vocabulary is not None and same_ids._pair.vocabulary is None
    for speculator in (same_ids, mapped):
        assert torch.equal(speculator.generate(**inputs, max_new_tokens=20), expected)
    assert mapped.last_stats.accepted_draft_tokens > 10
    assert mapped.last_stats.accepted_length_histogram == same_ids.last_stats.accepted_length_histogram
    assert mapped.last_stats.proposed_draft_tokens == same_ids.last_stats.proposed_draft_tokens


def test_models_loaded_by_name_bring_their_tokenizers(v3_pair, tmp_path):
    big, draft, big_tokenizer, draft_tokenizer = v3_pair
    for model, tokenizer, name in ((big, big_tokenizer, "big"), (draft, draft_tokenizer, "draft")):
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
    speculator = Seq2SeqSpeculator(str(tmp_path / "big"), str(tmp_path / "draft"))
    assert speculator._pair.vocabulary.shared == draft.config.vocab_size
    features = toy_features(3, seed=46)
    expected = big.generate(features, language="fr")
    assert torch.equal(speculator.generate(input_features=features, language="fr"), expected)
