"""Transcription with speech encoder-decoders other than Whisper (Moonshine, Speech2Text, Canary, Cohere ASR,
SeamlessM4T, SpeechT5, a wav2vec2 encoder joined to a text decoder, ...), through the same audio reading.

Such a model comes with its own processor: a feature extractor that turns audio at its sampling rate into what its
encoder reads (log-mel features or the raw samples) and a tokenizer. Clips are read and mixed down as for Whisper,
resampled to the extractor's rate, sorted by duration into batches, turned into features (padded within the batch,
with the attention mask where the extractor gives one) and decoded with the model's greedy output. What belongs to
Whisper alone (language and task tokens, timestamps, word times, the long-form modes and the fallback) is refused by
name; each clip is decoded whole, within whatever length the model accepts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from seq2spec.whisper.audio import SAMPLING_RATE
from seq2spec.whisper.request import TranscriptionRequest

# generate(**{encoder input name: tensor}, attention_mask=..., max_new_tokens=...) -> token ids
GenerateFn = Callable[..., torch.Tensor]
SPEECH_INPUTS = ("input_features", "input_values")
# the fields of a TranscriptionRequest that belong to Whisper (the others, batch size and a cap on new tokens, apply to
# every speech model)
WHISPER_ONLY = ("language", "task", "return_timestamps", "word_timestamps", "decoding", "long_form")


def check_speech_model(model_type: str, encoder_input: str, request: TranscriptionRequest) -> None:
    """A model whose encoder reads audio, asked for nothing only Whisper does."""
    if encoder_input not in SPEECH_INPUTS:
        raise TypeError(
            f"transcribe() needs a speech model; the big model ({model_type}) reads {encoder_input}: use correct() "
            "or generate() for text"
        )
    unused = TranscriptionRequest()
    for name in WHISPER_ONLY:
        if getattr(request, name) != getattr(unused, name):
            raise ValueError(
                f"{name}={getattr(request, name)!r} is an option of Whisper's transcription; {model_type} transcribes "
                "each clip whole with its own greedy output (its own generate arguments go through generate())"
            )


def feature_extractor_of(processor: Any, model_type: str) -> Any:
    """The processor's feature extractor (the processor itself where it is one)."""
    extractor = getattr(processor, "feature_extractor", processor)
    if not callable(extractor) or not isinstance(getattr(extractor, "sampling_rate", None), int):
        raise TypeError(
            f"{model_type}'s processor ({type(processor).__name__}) has no feature extractor that reads audio at a "
            "sampling rate; pass tokenizer= a processor with one (AutoProcessor of the model)"
        )
    return extractor


def transcribe_other_model(
    clips: list[np.ndarray],
    processor: Any,
    generate: GenerateFn,
    *,
    model_type: str,
    encoder_input: str,
    batch_size: int = 16,
    max_new_tokens: int | None = None,
    progress: bool | Callable[[float], None] = False,
) -> list[str]:
    """Text per clip (16 kHz mono float32), in input order."""
    extractor = feature_extractor_of(processor, model_type)
    rate = extractor.sampling_rate
    if rate != SAMPLING_RATE:
        import soxr

        clips = [soxr.resample(clip, SAMPLING_RATE, rate).astype(np.float32) for clip in clips]
    report, bar = _reporter(progress, sum(len(clip) for clip in clips) / rate)
    order = sorted(range(len(clips)), key=lambda index: len(clips[index]))
    results = [""] * len(clips)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = [clips[index] for index in chunk]
        features = _features(extractor, batch, rate)
        output = generate(
            **{encoder_input: features[encoder_input]},
            attention_mask=features.get("attention_mask"),
            max_new_tokens=max_new_tokens,
        )
        for index, text in zip(chunk, processor.batch_decode(output, skip_special_tokens=True), strict=True):
            results[index] = text.strip()
        report(sum(len(clip) for clip in batch) / rate)
    if bar is not None:
        bar.close()
    return results


def _features(extractor: Any, batch: list[np.ndarray], rate: int) -> Any:
    """The batch's features, padded to its longest clip, with the attention mask where the extractor has one."""
    try:
        return extractor(batch, sampling_rate=rate, return_tensors="pt", padding=True, return_attention_mask=True)
    except TypeError:  # an extractor without that keyword
        return extractor(batch, sampling_rate=rate, return_tensors="pt", padding=True)


def _reporter(progress: bool | Callable[[float], None], total_seconds: float) -> tuple[Callable[[float], None], Any]:
    """What to call with the seconds decoded, and the progress bar to close (None where there is none)."""
    if callable(progress):
        return progress, None
    if not progress:
        return (lambda seconds: None), None
    from tqdm import tqdm

    bar = tqdm(total=round(total_seconds, 1), unit="s", desc="seq2spec audio", file=sys.stderr)
    return (lambda seconds: bar.update(round(seconds, 1))), bar
