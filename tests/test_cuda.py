"""Every path on a CUDA device in float32, float16 and bfloat16 (the big model's device and dtype rule): the same
tensor as ``big.generate`` run on that device in that dtype, in the attention kernels seq2spec decodes in there
(``seq2spec.decoding.fast.attention_kernels``). Skipped where torch sees no GPU.

This file imports nothing from conftest, so a GPU machine without the audio packages runs it alone:
``python -m pytest --noconftest tests/test_cuda.py``.
"""

from __future__ import annotations

import os

import pytest
import torch
from toy_helpers import (
    V3_SPECIALS,
    WHISPER_TOY_SPECIALS,
    build_toy_whisper,
    long_form_toy_features,
    perturbed_copy,
    prompted_long_form,
    toy_features,
    toy_whisper_tokenizer,
    varied_enough,
    whisper_causal_assistant,
    whisper_draft_sharing_encoder,
)

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import FAMILIES, build_toy_model, random_sources
from seq2spec.decoding.fast.attention_kernels import attention_kernels
from seq2spec.spelling.settings import SpellingSettings

# SEQ2SPEC_TEST_DEVICE=cpu runs these tests on the CPU (to check the tests themselves where there is no GPU)
DEVICE = os.environ.get("SEQ2SPEC_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
MAX_NEW = 40


# one rounding step of each dtype at the toy models' logit magnitudes (16-32), twice over
ROUNDING = {"float32": 1e-4, "float16": 0.03125, "bfloat16": 0.25}


def greedy(big, *args, **kwargs):
    """``big.generate`` in the attention kernels seq2spec decodes in on the big model's device. In float16 and
    bfloat16 on CUDA, plain ``generate`` runs cuDNN's attention, which seq2spec leaves out (a plan for every new pair
    of lengths), and rounds otherwise: seen on an H100, a near-tie (0.0156 in float16, 0.125 in bfloat16) broken
    the other way; in the same kernels seq2spec's tokens were generate's."""
    with attention_kernels(big.device):
        return big.generate(*args, **kwargs)


def first_difference(actual: torch.Tensor, expected: torch.Tensor) -> str:
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)} != greedy {tuple(expected.shape)}"
    rows = int((actual != expected).any(dim=1).sum())
    first = (actual != expected).nonzero()[0].tolist()
    return f"{rows} of {actual.shape[0]} rows differ from greedy, the first at (row, step) {first}"


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape and torch.equal(actual, expected), first_difference(actual, expected)


def assert_same_or_tied(actual: torch.Tensor, expected, pad: int, tolerance: float) -> None:
    """Every row of ``actual`` (generated tokens, as ``generate`` returns them without a dict) equals greedy's
    (``expected``: generate's dict output with ``scores``), or first differs where greedy's processed score of
    seq2spec's token is within ``tolerance`` of greedy's best: a tie at the dtype's rounding, which a forward over
    several tokens may break the other way than generate's one-token step (docs/how-it-works.md, "Rounding")."""
    steps = len(expected.scores)
    generated = expected.sequences[:, expected.sequences.shape[1] - steps :]
    width = max(actual.shape[1], steps)
    mine = torch.nn.functional.pad(actual, (0, width - actual.shape[1]), value=pad)
    theirs = torch.nn.functional.pad(generated, (0, width - steps), value=pad)
    for row in range(mine.shape[0]):
        differences = (mine[row] != theirs[row]).nonzero()
        if not differences.numel():
            continue
        step = int(differences[0])
        assert step < steps, f"row {row} goes on after greedy's end"
        scores = expected.scores[step][row].float()
        gap = float(scores.max() - scores[mine[row, step]])
        assert gap <= tolerance, f"row {row} differs from greedy at step {step} by {gap} (no tie within {tolerance})"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("family", FAMILIES)
def test_toy_families_on_cuda(family, dtype):
    index = FAMILIES.index(family)
    big = build_toy_model(family, seed=index).to(DEVICE, DTYPES[dtype])
    draft = perturbed_copy(build_toy_model(family, seed=index), seed=100 + index).to(DEVICE, DTYPES[dtype])
    pad = big.config.pad_token_id
    for attempt in range(20):
        input_ids, mask = random_sources(16, seed=3 + 1000 * attempt, pad_id=pad)
        input_ids, mask = input_ids.to(DEVICE), mask.to(DEVICE)
        expected = greedy(big, input_ids, attention_mask=mask, do_sample=False, max_new_tokens=MAX_NEW)
        if varied_enough(expected, pad, min_lengths=2):
            break
    else:
        pytest.fail(f"no varied batch for {family} in {dtype}")
    speculator = Seq2SeqSpeculator(big, draft, num_draft_tokens=4)
    actual = speculator.generate(input_ids, mask, max_new_tokens=MAX_NEW)
    assert actual.device.type == torch.device(DEVICE).type
    assert_same(actual, expected)
    assert speculator.last_stats.accepted_draft_tokens > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_shipped_speller_on_cuda(dtype):
    from seq2spec.default_models import load_speller

    big, small, tokenizer = load_speller(device=DEVICE, dtype=DTYPES[dtype])
    texts = [
        "This sentense has a few erors in it.",
        "She recieved a leter from her freind yesterday.",
        "The weather is nice today.",
        "Teh quick brown fox jumpd over the lazy dog.",
        "I beleive we can acheive this goal together.",
        "An apple a day keeps the doctor away.",
    ] * 4
    batch = tokenizer(texts, padding=True, return_tensors="pt").to(DEVICE)
    expected = greedy(big, **batch, do_sample=False, max_new_tokens=64)
    for mode in (
        {"draft": small},
        {"draft": small, "lean_draft": False},
        {"draft": small, "acceptance": "batch-min"},
        {"draft": "input-copy"},
        {"draft": "input-copy", "spellcheck_copy": True},  # the shipped speller's default proposer
    ):
        speculator = Seq2SeqSpeculator(big, tokenizer=tokenizer, **mode)
        assert_same(speculator.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens=64), expected)
        if mode.get("lean_draft", mode["draft"] is small):  # the draft's lean step passed its probe on this device
            assert speculator._proposers.lean_step() is not None
    plain = Seq2SeqSpeculator(big, small, tokenizer=tokenizer, spelling=SpellingSettings(protect=False))
    corrected = plain.correct(texts, batch_size=8, max_new_tokens=64)
    assert corrected == tokenizer.batch_decode(expected, skip_special_tokens=True)  # the model's own output
    corrected = Seq2SeqSpeculator(big, small, tokenizer=tokenizer).correct(texts, batch_size=8, max_new_tokens=64)
    default = Seq2SeqSpeculator(device=DEVICE, dtype=DTYPES[dtype])  # the shipped speller as a user gets it
    assert default.correct(texts, batch_size=8, max_new_tokens=64) == corrected


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_distilled_layer_draft_of_the_speller_on_cuda(dtype, tmp_path):
    from seq2spec.default_models import load_speller
    from seq2spec.drafts import DistillOptions, distill_layer_draft, layer_draft, save_layer_draft

    big, _, tokenizer = load_speller(device=DEVICE, dtype=DTYPES[dtype])
    lines = ["Teh cat sat on teh mat.", "She recieved a leter.", "I beleive it.", "The weather is nice today."] * 4
    batches = [dict(tokenizer(lines[i : i + 4], padding=True, return_tensors="pt")) for i in range(0, 16, 4)]
    draft = layer_draft(big, (0, 3))
    dtypes = [parameter.dtype for parameter in draft.parameters()]  # T5 keeps its wo layers in float32
    stats = distill_layer_draft(big, draft, batches, DistillOptions(steps=12, max_new_tokens=32, held_out=0.25))
    assert stats.last_loss < stats.first_loss and [parameter.dtype for parameter in draft.parameters()] == dtypes
    save_layer_draft(draft, tmp_path / "draft")
    batch = tokenizer(lines[:8] + ["An apple a day keeps the doctor away."], padding=True, return_tensors="pt")
    batch = batch.to(DEVICE)
    expected = greedy(big, **batch, do_sample=False, max_new_tokens=48)
    for proposer in (draft, str(tmp_path / "draft")):
        speculator = Seq2SeqSpeculator(big, proposer, pause_draft=False)
        assert_same(speculator.generate(batch["input_ids"], batch["attention_mask"], max_new_tokens=48), expected)
        assert speculator.shares_encoder and speculator.last_stats.accepted_draft_tokens > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_whisper_short_and_long_form_on_cuda(dtype):
    big = build_toy_whisper().to(DEVICE, DTYPES[dtype])
    draft = whisper_draft_sharing_encoder(big)
    features = toy_features(4, seed=4).to(DEVICE, DTYPES[dtype])
    expected = greedy(big, features, max_new_tokens=30, language="fr")
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, max_new_tokens=30, language="fr")
    assert_same(actual, expected)
    # plain generate, in whatever kernels torch picks: the same tokens but where its two best scores tie
    plain = big.generate(features, max_new_tokens=30, language="fr", return_dict_in_generate=True, output_scores=True)
    assert_same_or_tied(actual, plain, big.generation_config.pad_token_id, tolerance=ROUNDING[dtype])
    features, mask = long_form_toy_features([7000, 4500], seed=22)
    features, mask = features.to(DEVICE, DTYPES[dtype]), mask.to(DEVICE)
    kwargs = {"attention_mask": mask, "return_timestamps": True, "language": "en"}
    expected = greedy(big, features, **kwargs)
    assert_same(Seq2SeqSpeculator(big, draft).generate(input_features=features, **kwargs), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_whisper_draft_of_another_vocabulary_and_mel_bins_on_cuda(dtype):
    """large-v3's layout (128 mel bins, one language token more) checked against a tiny-like draft (80 bins, the
    older vocabulary, its own encoder): its tokens matched by text, the features rebinned on the device."""
    big = build_toy_whisper(7, special_tokens=V3_SPECIALS, num_mel_bins=128).to(DEVICE, DTYPES[dtype])
    draft = build_toy_whisper(8, decoder_layers=1).to(DEVICE, DTYPES[dtype])
    tokenizers = toy_whisper_tokenizer(V3_SPECIALS), toy_whisper_tokenizer(WHISPER_TOY_SPECIALS)
    generator = torch.Generator().manual_seed(9)
    features = 2 * torch.randn(4, 128, 1, generator=generator) + 0.3 * torch.randn(4, 128, 3000, generator=generator)
    features = features.to(DEVICE, DTYPES[dtype])
    speculator = Seq2SeqSpeculator(big, draft, tokenizers[0], draft_tokenizer=tokenizers[1])
    for kwargs in ({"language": "fr"}, {"language": "en", "return_timestamps": True}):
        expected = greedy(big, features, max_new_tokens=30, **kwargs)
        assert_same(speculator.generate(input_features=features, max_new_tokens=30, **kwargs), expected)
    assert speculator.last_stats.draft_encoder_calls == 1 and speculator.last_stats.draft_forwards > 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_whisper_full_generate_on_cuda(dtype):
    """Whisper's production settings on the device: previous-text conditioning with a prompt (per-row prompts of
    different lengths), scores, and token timestamps; greedy passes identical to generate's."""
    big = build_toy_whisper().to(DEVICE, DTYPES[dtype])
    draft = whisper_draft_sharing_encoder(big)
    features, kwargs = prompted_long_form(DEVICE, DTYPES[dtype])
    kwargs["return_token_timestamps"] = True
    expected = greedy(big, features, **kwargs)
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=features, **kwargs)
    assert_same(actual["sequences"], expected["sequences"])
    assert (actual["token_timestamps"] - expected["token_timestamps"]).abs().max() <= 0.02
    short = toy_features(3, seed=5).to(DEVICE, DTYPES[dtype])
    scored = {"max_new_tokens": 30, "language": "en", "return_dict_in_generate": True, "output_scores": True}
    expected = greedy(big, short, **scored)
    actual = Seq2SeqSpeculator(big, draft).generate(input_features=short, **scored)
    assert_same(actual.sequences, expected.sequences)
    mine, theirs = torch.stack(actual.scores, 1).float(), torch.stack(expected.scores, 1).float()
    generated = expected.sequences[:, -len(expected.scores) :].tolist()
    for row, tokens in enumerate(generated):
        end = tokens.index(256) + 1 if 256 in tokens else len(tokens)  # a finished row's later steps: not compared
        finite = torch.isfinite(theirs[row, :end])
        assert torch.equal(finite, torch.isfinite(mine[row, :end]))
        # the verification forward scores several positions at once: its logits may differ from generate's one-step
        # forward by a rounding step of the dtype (bfloat16: 0.0625 at magnitudes 8-16), never in the argmax
        atol = 0.125 if dtype == "bfloat16" else 0.02
        torch.testing.assert_close(mine[row, :end][finite], theirs[row, :end][finite], rtol=0.02, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_whisper_causal_draft_replays_cuda_graphs(dtype, monkeypatch):
    """A decoder-only Whisper draft (the shipped draft's layout) runs its lean step over the fixed-size cache, and
    its logits processing, as replayed CUDA graphs on the device; short clips whose rows finish at different steps,
    and long form with a prompt the draft reads (padded prompts), stay identical to generate's."""
    from seq2spec.decoding.fast.captured_processing import CapturedStepProcessing
    from seq2spec.drafts.graphed_whisper import GraphedWhisperDraft

    replays = []
    run = CapturedStepProcessing.run
    monkeypatch.setattr(CapturedStepProcessing, "run", lambda self: replays.append(self.graphs) or run(self))

    big = build_toy_whisper().to(DEVICE, DTYPES[dtype])
    draft = whisper_causal_assistant(big, decoder_layers=1).to(DEVICE, DTYPES[dtype])
    features = toy_features(6, seed=4).to(DEVICE, DTYPES[dtype])
    scored = {"return_dict_in_generate": True, "output_scores": True}
    expected = greedy(big, features, max_new_tokens=30, language="fr", **scored)
    speculator = Seq2SeqSpeculator(big, draft)
    actual = speculator.generate(input_features=features, max_new_tokens=30, language="fr")
    if dtype == "bfloat16":  # seen on an H100: one near-tie on this batch, with or without graphs or the lean step
        assert_same_or_tied(actual, expected, big.generation_config.pad_token_id, tolerance=0.125)
    else:
        assert_same(actual, expected.sequences[:, expected.sequences.shape[1] - len(expected.scores) :])
    graphed = speculator._proposers.graphed_step(speculator._proposers.lean_step())
    if torch.device(DEVICE).type == "cuda":
        assert isinstance(graphed, GraphedWhisperDraft) and graphed.graphs
        assert any(buffers.graphs for buffers in graphed.caches.values())  # captured and replayed
        assert replays and all(replays)  # the draft's processing, as a graph
    assert speculator.last_stats.accepted_draft_tokens > 0
    features, kwargs = prompted_long_form(DEVICE, DTYPES[dtype])
    expected = greedy(big, features, **kwargs)
    for reads_prompt in (False, True):
        reading = Seq2SeqSpeculator(big, draft, draft_reads_prompt=reads_prompt)
        assert_same(reading.generate(input_features=features, **kwargs), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_loaded_whisper_draft_shares_the_big_models_cross_attention(dtype, tmp_path, monkeypatch):
    """A saved draft whose cross-attention projections are frozen copies is given the big model's modules on load,
    and takes the big model's keys and values on the device (fixed-size cache, graphs) instead of computing them."""
    from seq2spec.drafts.lean_whisper import LeanWhisperDraft
    from seq2spec.drafts.shared_cross import shared_cross_layers
    from seq2spec.whisper.draft import draft_from_big_layers, load_whisper_draft, save_whisper_draft

    big = build_toy_whisper(decoder_layers=3).to(DEVICE, DTYPES[dtype])
    save_whisper_draft(draft_from_big_layers(big, [0, 2]), tmp_path, dtype=DTYPES[dtype])
    draft = load_whisper_draft(big, tmp_path)
    assert shared_cross_layers(big, draft) == ((0, 0), (1, 2))
    speculator = Seq2SeqSpeculator(big, draft)
    features = toy_features(6, seed=4).to(DEVICE, DTYPES[dtype])
    speculator.generate(input_features=features[:1], max_new_tokens=2, language="fr")  # probes before counting
    computed = []
    cross_states = LeanWhisperDraft.cross_states
    monkeypatch.setattr(
        LeanWhisperDraft, "cross_states", lambda self, i, hidden: computed.append(i) or cross_states(self, i, hidden)
    )
    expected = greedy(big, features, max_new_tokens=30, language="fr")
    actual = speculator.generate(input_features=features, max_new_tokens=30, language="fr")
    if dtype == "bfloat16":
        scored = greedy(
            big, features, max_new_tokens=30, language="fr", return_dict_in_generate=True, output_scores=True
        )
        assert_same_or_tied(actual, scored, big.generation_config.pad_token_id, tolerance=0.125)
    else:
        assert_same(actual, expected)
    assert computed == [] and speculator.last_stats.accepted_draft_tokens > 0
