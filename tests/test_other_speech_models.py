"""transcribe() with speech encoder-decoders other than Whisper: each clip's text is the model's own greedy output
for the features its processor makes, and Whisper's options are refused for them by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from family_models import FamilyCase, feature_extractor, perturbed, varied_model
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, ProcessorMixin

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper.other_models import transcribe_other_model

CASES = [FamilyCase("moonshine", speech=True), FamilyCase("speech_to_text", speech=True)]


class _Processor(ProcessorMixin):
    """A model's feature extractor beside a word-level tokenizer of its 256 ids (no hub)."""

    attributes = ["feature_extractor", "tokenizer"]
    feature_extractor_class = "FeatureExtractionMixin"
    tokenizer_class = "PreTrainedTokenizerFast"

    def __init__(self, feature_extractor, tokenizer):
        self.feature_extractor, self.tokenizer = feature_extractor, tokenizer

    def batch_decode(self, *args, **kwargs):
        return self.tokenizer.batch_decode(*args, **kwargs)


def _processor(model) -> _Processor:
    vocabulary = {f"w{index}": index for index in range(256)}
    words = Tokenizer(models.WordLevel(vocabulary, unk_token="w3"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    config = model.generation_config
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=words,
        pad_token=f"w{config.pad_token_id}",
        eos_token=f"w{config.eos_token_id}",
        unk_token="w3",
    )
    return _Processor(feature_extractor(model), tokenizer)


def _clips(count: int, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [(0.1 * generator.standard_normal(8000 + 2400 * index)).astype(np.float32) for index in range(count)]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_transcribe_gives_the_model_s_own_greedy_text(case):
    big, _ = varied_model(case)
    processor = _processor(big)
    speculator = Seq2SeqSpeculator(big, perturbed(big), processor)
    clips = _clips(5, seed=3)
    texts = speculator.transcribe(clips, sampling_rate=16000, batch_size=2)
    name = speculator.big_family.encoder_input_name

    def greedy(**inputs):
        return big.generate(**inputs, do_sample=False, num_beams=1)

    expected = transcribe_other_model(
        clips, processor, greedy, model_type=case.model_type, encoder_input=name, batch_size=2
    )
    assert texts == expected
    assert len(set(texts)) >= 3  # the clips' texts differ: the equality compares real outputs
    assert speculator.last_stats.accepted_draft_tokens > 0
    one = speculator.transcribe(clips[1], sampling_rate=16000)  # one clip: its own features, its own greedy text
    features = processor.feature_extractor([clips[1]], sampling_rate=16000, return_tensors="pt")
    alone = processor.batch_decode(greedy(**{name: features[name]}), skip_special_tokens=True)[0]
    assert one == alone.strip()


def test_whisper_options_and_text_models_are_refused_by_name():
    big, _ = varied_model(CASES[0])
    speculator = Seq2SeqSpeculator(big, None, _processor(big))
    clip = _clips(1, seed=0)[0]
    for option in ({"return_timestamps": True}, {"language": "fr"}, {"long_form": "batched"}):
        with pytest.raises(ValueError, match=f"{next(iter(option))}=.*an option of Whisper's transcription"):
            speculator.transcribe(clip, sampling_rate=16000, **option)
    text_model, _ = varied_model(FamilyCase("marian", speech=False))
    with pytest.raises(TypeError, match="transcribe\\(\\) needs a speech model"):
        Seq2SeqSpeculator(text_model).transcribe(clip, sampling_rate=16000)


def test_generate_takes_the_input_the_encoder_reads():
    big, inputs = varied_model(CASES[0])
    speculator = Seq2SeqSpeculator(big)
    with pytest.raises(TypeError, match="needs one encoder input.*reads input_values"):
        speculator.generate(max_new_tokens=4)
    with pytest.raises(TypeError, match="input_values must be a floating-point"):
        speculator.generate(input_values=torch.zeros(2, 100, dtype=torch.long))
