"""A Whisper draft's vocabulary slice widened by each language's own tokens (``language_tokens.safetensors``): read
per batch from the rows' language and task tokens, scored by the lean step, saved and loaded with the draft, and
never changing an output token."""

from __future__ import annotations

import pytest
import torch
from toy_helpers import build_toy_whisper, toy_features

from seq2spec import Seq2SeqSpeculator
from seq2spec.drafts.lean_whisper import WIDENED_HEADS_KEPT, LeanWhisperDraft, transcribed_languages
from seq2spec.whisper.draft import (
    LANGUAGE_TOKENS_FILE,
    WHISPER_BASE_MULTILINGUAL_DRAFT_DIR,
    add_language_tokens,
    draft_from_big_layers,
    load_whisper_draft,
    output_token_ids,
    restrict_output_vocabulary,
    save_whisper_draft,
)


@pytest.fixture(scope="module")
def big():
    return build_toy_whisper(seed=0, decoder_layers=2)


@pytest.fixture(scope="module")
def features():
    return toy_features(6, seed=21)


@pytest.fixture(scope="module")
def emitted(big, features):
    """Greedy French output of the big model, and the text tokens in it."""
    expected = big.generate(features, max_new_tokens=30, language="fr")
    text = expected[expected < big.generation_config.eos_token_id]
    return expected, torch.unique(text)


def _special(big) -> torch.Tensor:
    return torch.arange(big.generation_config.eos_token_id, big.config.vocab_size)


def _sliced_self_draft(big, kept: torch.Tensor):
    """The big model's own decoder layers as a draft (it agrees wherever it may propose), scoring ``kept`` and the
    special tokens only."""
    return restrict_output_vocabulary(
        draft_from_big_layers(big, [0, 1]), torch.unique(torch.cat([kept, _special(big)]))
    )


def test_transcribed_languages_reads_each_rows_language_and_task(big):
    config = big.generation_config
    language, task = config.lang_to_id, config.task_to_id
    start = config.decoder_start_token_id
    prompt = torch.tensor(
        [
            [start, language["<|fr|>"], task["transcribe"]],
            [start, language["<|de|>"], task["translate"]],  # English text: not German tokens
            [start, language["<|en|>"], task["transcribe"]],
        ]
    )
    assert transcribed_languages(prompt, 0, config) == {"fr", "en"}
    previous = torch.cat([torch.full((3, 2), 7), prompt], dim=1)  # a previous text before the start of transcript
    assert transcribed_languages(previous, 2, config) == {"fr", "en"}
    assert transcribed_languages(prompt[:, :2], 0, config) == {"fr", "de", "en"}  # no task token: transcribing
    assert transcribed_languages(prompt[:, :1], 0, config) == set()
    english_only = type(config)(decoder_start_token_id=start)
    assert transcribed_languages(prompt, 0, english_only) == set()


def test_language_tokens_are_checked(big):
    with pytest.raises(TypeError, match="scores every token already"):
        add_language_tokens(draft_from_big_layers(big, [0]), {"fr": torch.tensor([1])})
    draft = _sliced_self_draft(big, torch.arange(0, 10))
    with pytest.raises(ValueError, match="'fr' must be in"):
        add_language_tokens(draft, {"fr": torch.tensor([big.config.vocab_size])})


def test_widened_lean_head_scores_the_slice_and_the_languages_tokens(big):
    draft = _sliced_self_draft(big, torch.arange(0, 40, 2))
    add_language_tokens(draft, {"fr": torch.tensor([1, 3, 5]), "de": torch.tensor([7, 2])})
    lean = LeanWhisperDraft.checked(draft, int8=False)
    assert lean is not None and set(lean.language_tokens) == {"fr", "de"}
    assert lean.for_languages(["en"]) is lean and lean.for_languages([]) is lean  # no tokens of their own
    french = lean.for_languages(["fr", "en"])
    assert french is lean.for_languages({"fr"})  # kept for the next batch
    assert set(french.token_ids.tolist()) == set(lean.token_ids.tolist()) | {1, 3, 5}
    both = lean.for_languages(["de", "fr"])
    assert set(both.token_ids.tolist()) == set(lean.token_ids.tolist()) | {1, 3, 5, 7}
    assert both.layers is lean.layers and not both.language_tokens
    hidden = torch.randn(2, 3, big.config.d_model)
    torch.testing.assert_close(both.head(hidden), big.proj_out(hidden)[..., both.token_ids])
    for index in range(WIDENED_HEADS_KEPT + 2):  # the oldest widened heads are let go
        lean.language_tokens[f"x{index}"] = torch.tensor([9 + 2 * index])
        lean.for_languages([f"x{index}"])
    assert len(lean._widened) == WIDENED_HEADS_KEPT


def _decode(big, draft, features, language: str):
    speculator = Seq2SeqSpeculator(big, draft, pause_draft=False)
    output = speculator.generate(input_features=features, max_new_tokens=30, language=language)
    return output, speculator.last_stats


def test_a_languages_tokens_are_proposed_for_its_rows_only_and_outputs_stay_greedy(big, features, emitted, tmp_path):
    expected, text = emitted
    kept, missing = text[::2], text[1::2]  # the slice lacks half the tokens the big model emits in French
    draft = _sliced_self_draft(big, kept)
    sliced, sliced_stats = _decode(big, draft, features, "fr")
    assert torch.equal(sliced, expected)

    add_language_tokens(draft, {"fr": missing, "de": torch.arange(0, 4)})
    save_whisper_draft(draft, tmp_path, dtype=torch.float32)
    assert (tmp_path / LANGUAGE_TOKENS_FILE).is_file()
    loaded = load_whisper_draft(big, tmp_path)
    assert torch.equal(loaded.proj_out.language_token_ids["fr"], missing)
    assert output_token_ids(load_whisper_draft(big, tmp_path, full_vocabulary=True)) is None

    widened, widened_stats = _decode(big, loaded, features, "fr")
    assert torch.equal(widened, expected)
    # the draft is the big model's own layers: with the French tokens it proposes what the big model emits
    assert widened_stats.accepted_draft_tokens > sliced_stats.accepted_draft_tokens
    assert widened_stats.big_forwards < sliced_stats.big_forwards

    # German rows get German tokens, not French ones; rows translating to English get none
    for language, task in (("de", "transcribe"), ("fr", "translate")):
        expected = big.generate(features, max_new_tokens=30, language=language, task=task)
        counts = []
        for candidate in (loaded, _sliced_self_draft(big, kept)):
            speculator = Seq2SeqSpeculator(big, candidate, pause_draft=False)
            output = speculator.generate(input_features=features, max_new_tokens=30, language=language, task=task)
            assert torch.equal(output, expected)
            counts.append(speculator.last_stats.accepted_draft_tokens)
        if task == "translate":
            assert counts[0] == counts[1]  # the same proposals as the slice alone


def test_the_shipped_multilingual_draft_carries_language_tokens():
    path = WHISPER_BASE_MULTILINGUAL_DRAFT_DIR / LANGUAGE_TOKENS_FILE
    if not path.is_file():
        pytest.skip("the multilingual draft is not installed")
    from safetensors.torch import load_file

    tokens = load_file(path)
    assert {"ko", "zh", "ru", "el", "vi"} <= set(tokens)
    assert "en" not in tokens
    assert all(ids.numel() and int(ids.max()) < 50257 for ids in tokens.values())  # text tokens only


def test_the_fixed_cuda_cache_scores_every_languages_tokens(big, features, emitted, monkeypatch):
    """Where the draft runs over a fixed cache (CUDA graphs), one head serves every batch: the slice and the tokens
    of every language."""
    from seq2spec.drafts.factory import ProposerFactory

    monkeypatch.setattr(ProposerFactory, "static_draft_cache", lambda self, device: True)
    expected, text = emitted
    kept, missing = text[::2], text[1::2]
    draft = add_language_tokens(_sliced_self_draft(big, kept), {"fr": missing, "de": torch.arange(0, 4)})
    speculator = Seq2SeqSpeculator(big, draft, int8_draft=False, pause_draft=False)
    proposers = speculator._proposers
    graphed = proposers.graphed_step(proposers.lean_step())
    assert graphed is not None
    assert set(graphed.lean.token_ids.tolist()) == set(kept.tolist()) | set(missing.tolist()) | {0, 1, 2, 3} | set(
        _special(big).tolist()
    )
    assert torch.equal(speculator.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    widened = speculator.last_stats.accepted_draft_tokens
    plain = Seq2SeqSpeculator(big, _sliced_self_draft(big, kept), int8_draft=False, pause_draft=False)
    assert torch.equal(plain.generate(input_features=features, max_new_tokens=30, language="fr"), expected)
    assert widened > plain.last_stats.accepted_draft_tokens
