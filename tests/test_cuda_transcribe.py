"""``transcribe`` on a CUDA device in float16 and bfloat16 (the big model's device and dtype rule): the batched long
form's pieces and ``vad``'s speech each decoded as the big model's own ``generate`` on that device in that dtype.
Skipped where torch sees no GPU; ``SEQ2SPEC_TEST_DEVICE=cpu`` runs it on the CPU in float32 (to check the test)."""

from __future__ import annotations

import os

import pytest
import torch
from test_speech_pieces import composed, silence, speech

from seq2spec import Seq2SeqSpeculator
from seq2spec.whisper.audio import SAMPLING_RATE
from seq2spec.whisper.speech import Piece, speech_pieces
from seq2spec.whisper.voice_activity import speech_spans

DEVICE = os.environ.get("SEQ2SPEC_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(), reason="needs a CUDA device")
DTYPES = (torch.float16, torch.bfloat16) if DEVICE == "cuda" else (torch.float32,)


def generated_text(speculator: Seq2SeqSpeculator, samples, long: bool) -> str:
    processor, big = speculator.processor, speculator.big
    options = {"truncation": False, "padding": "longest", "return_attention_mask": True} if long else {}
    features = processor.feature_extractor(samples, sampling_rate=SAMPLING_RATE, return_tensors="pt", **options)
    mask = features["attention_mask"].to(DEVICE) if long else None
    ids = big.generate(features.input_features.to(DEVICE, big.dtype), attention_mask=mask, language="en",
                       task="transcribe", return_timestamps=long)  # fmt: skip
    return processor.batch_decode(ids, skip_special_tokens=True)[0].strip()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_long_forms_on_the_device(toy_whisper_dirs, dtype):
    pytest.importorskip("silero_vad")
    speculator = Seq2SeqSpeculator(str(toy_whisper_dirs[0]), str(toy_whisper_dirs[1]), device=DEVICE, dtype=dtype)
    assert speculator.big.device.type == torch.device(DEVICE).type and speculator.big.dtype == dtype
    parts: list = [2.0]
    for index in range(11):
        parts += [speech(index), 1.0 if index % 4 else 6.0]
    audio = composed(parts)[0]
    arguments = dict(sampling_rate=SAMPLING_RATE, language="en")
    batched = speculator.transcribe([audio, silence(40.0)], long_form="batched", batch_size=3, **arguments)
    pieces = speech_pieces(audio)
    assert len(pieces) >= 2 and batched[1] == ""
    texts = [generated_text(speculator, piece.samples(audio), long=False) for piece in pieces]
    assert batched[0] == " ".join(text for text in texts if text) and batched[0]
    spoken = Piece(0, tuple(speech_spans(audio))).samples(audio)
    assert len(spoken) > 30 * SAMPLING_RATE
    assert speculator.transcribe(audio, long_form="vad", **arguments) == generated_text(speculator, spoken, long=True)
