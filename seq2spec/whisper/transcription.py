"""Whisper transcription of clips: reading them, batching by duration, feature extraction, decoding of the text.

Shared by ``Seq2SeqSpeculator.transcribe`` and the evaluation recipe, which passes ``big.generate`` instead of the
speculator so that both decodings see the same batches and features.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from seq2spec.whisper.audio import SAMPLING_RATE, AudioError, AudioFile, to_mono_16k
from seq2spec.whisper.audio_types import AudioReadError
from seq2spec.whisper.feature_file import FeatureFile
from seq2spec.whisper.log_mel import BlockLogMel, computes_like
from seq2spec.whisper.request import Languages, TranscriptionRequest, WhisperDecoding, languages_per_clip
from seq2spec.whisper.speech import Clip, transcribe_in_pieces, transcribe_speech_only

# generate(input_features, attention_mask or None, **whisper generate arguments) -> token ids
GenerateFn = Callable[..., torch.Tensor]
WINDOW_SAMPLES = 30 * SAMPLING_RATE
FRAMES_PER_SECOND = 100  # log-mel frames

ENGLISH = (None, "en", "english", "<|en|>")  # what an English-only model takes as its language


def prepare_clips(audio: Any, sampling_rate: int | None, lazy: bool = False) -> tuple[list[Clip], bool]:
    """``(clips as float32 mono 16 kHz, whether a single input was given)`` from a path, an array or a list of them.

    Arrays (numpy or torch, ``[frames]`` or ``[frames, channels]``) need their ``sampling_rate``: integer samples
    are scaled by their type, float samples must lie in [-1, 1]; files are read with soundfile, whole, or with
    ``lazy`` as ``AudioFile``s read where needed (their headers checked now); a file that stores floats past full
    scale is scaled back by its peak.
    """
    from pathlib import Path

    if sampling_rate is not None and (
        not isinstance(sampling_rate, (int, np.integer)) or isinstance(sampling_rate, bool) or sampling_rate <= 0
    ):
        raise TypeError(
            f"sampling_rate must be a positive int (samples per second), got {sampling_rate!r} "
            f"({type(sampling_rate).__name__})"
        )
    single = not isinstance(audio, (list, tuple))
    clips = []
    for index, item in enumerate([audio] if single else audio):
        if isinstance(item, (str, Path)):
            clips.append(AudioFile(item) if lazy else AudioFile(item).samples())  # read block by block
            continue
        if isinstance(item, AudioFile):
            clips.append(item if lazy else item.samples())
            continue
        if isinstance(item, torch.Tensor):
            item = item.detach().cpu()
            item = (item.float() if item.is_floating_point() else item).numpy()  # bfloat16 has no numpy twin
        if not isinstance(item, np.ndarray):
            raise TypeError(f"audio[{index}] is {type(item).__name__}; expected a path or an array of samples")
        if sampling_rate is None:
            raise ValueError("sampling_rate is required when audio is given as arrays")
        if item.size == 0:
            raise ValueError(f"audio[{index}] is empty")
        try:
            clips.append(to_mono_16k(item, sampling_rate))
        except AudioError as error:
            raise AudioError(f"audio[{index}]: {error}") from None
    return clips, single


def transcribe_clips(
    clips: list[Clip],
    processor,
    generate: GenerateFn,
    request: TranscriptionRequest | None = None,
    *,
    multilingual: bool,
    progress: bool | Callable[[float], None] = False,
    **changes: Any,
) -> list[Any]:
    """Text per clip (16 kHz mono float32, or an ``AudioFile``), or ``{"text", "segments"}`` with
    ``return_timestamps``, in input order, as ``request`` (``TranscriptionRequest``, with ``changes`` applied) asks.

    Clips are sorted by length into batches; a batch holding a clip longer than 30 s is decoded long-form
    (unpadded features with an attention mask, timestamps on, as Whisper's long-form generation requires).
    ``progress``: True shows a bar over seconds of audio; a callable is called with the seconds newly decoded,
    window by window within long files. ``long_form="batched"``: each clip's speech is found and joined into pieces
    of at most 30 s, and the pieces of all clips are decoded as short clips (``seq2spec.whisper.speech``);
    ``"vad"``: each clip's speech is found and decoded alone, what lies between its stretches left out. A list of
    languages: the clips given a code are batched together, each row prompted with its own (Whisper's ``generate``
    takes one language per row), and the clips to detect apart; with ``vad`` or ``batched``, the clips of one entry
    together.
    """
    request = TranscriptionRequest.of(request, changes)
    per_clip = languages_per_clip(request.language, len(clips))
    if per_clip is not None and (request.finds_speech or None in per_clip):
        return _by_language(clips, per_clip, processor, generate, request, multilingual, progress)
    given = per_clip if per_clip is not None else [request.language]
    if not multilingual and (any(code not in ENGLISH for code in given) or request.task != "transcribe"):
        raise ValueError("this Whisper model is English-only: it takes no language or task")
    report, bar = _reporter(progress, sum(len(c) for c in clips) / SAMPLING_RATE)
    try:
        if request.finds_speech:
            return _transcribe_speech(clips, processor, generate, request, multilingual, report)
        return _transcribe_batches(clips, processor, generate, request, multilingual, report)
    finally:
        if bar is not None:
            bar.close()


def _transcribe_speech(
    clips: list[Clip],
    processor,
    generate: GenerateFn,
    request: TranscriptionRequest,
    multilingual: bool,
    report: Callable[[float], None],
) -> list[Any]:
    """``transcribe_clips`` of the speech found in each clip: its pieces decoded together (``batched``) or its
    stretches one after another (``vad``); results clipped to each clip's duration."""
    keys = ("segments",) * request.return_timestamps + ("words",) * request.word_timestamps
    plain = request.updated(long_form="sequential")
    if request.long_form == "batched":

        def decode_pieces(pieces: list[np.ndarray]) -> list[Any]:
            return transcribe_clips(pieces, processor, generate, plain, multilingual=multilingual)

        joined = transcribe_in_pieces(clips, decode_pieces, keys or None, request.batch_size, report)
    else:

        def decode_speech(speech: list[np.ndarray]) -> list[Any]:
            return transcribe_clips(speech, processor, generate, plain, multilingual=multilingual, progress=report)

        joined = transcribe_speech_only(clips, decode_speech, keys or None, report)
    return [clipped_to(result, len(clip) / SAMPLING_RATE) for result, clip in zip(joined, clips, strict=True)]


def _transcribe_batches(
    clips: list[Clip],
    processor,
    generate: GenerateFn,
    request: TranscriptionRequest,
    multilingual: bool,
    report: Callable[[float], None],
) -> list[Any]:
    """``transcribe_clips`` of clips sorted by length into batches of ``request.batch_size``, each decoded by one
    ``generate`` (long-form where a clip is over 30 s)."""
    options: dict[str, Any] = (request.decoding or WhisperDecoding()).generate_arguments(processor)
    if multilingual:
        options.update(language=request.language, task=request.task)
    per_row = isinstance(request.language, (list, tuple))
    order = sorted(range(len(clips)), key=lambda i: len(clips[i]))
    results: list[Any] = [None] * len(clips)
    for start in range(0, len(order), request.batch_size):
        chunk = order[start : start + request.batch_size]
        batch = [clips[i] for i in chunk]
        if multilingual and per_row:
            options["language"] = [request.language[i] for i in chunk]
        rows, lengths = _generate_batch(batch, processor, generate, request, options, report)
        for index, (ids, aligned), length in zip(chunk, rows, lengths, strict=True):
            result = decode(processor.tokenizer, ids, request.return_timestamps)
            if aligned is not None:
                result = result if isinstance(result, dict) else {"text": result}
                times = token_times(ids, aligned, processor.tokenizer)
                result["words"] = words_of(processor.tokenizer, ids, times)
            results[index] = clipped_to(result, length / SAMPLING_RATE)
    return results


def _generate_batch(
    batch: list[Clip],
    processor,
    generate: GenerateFn,
    request: TranscriptionRequest,
    options: dict[str, Any],
    report: Callable[[float], None],
) -> tuple[list[tuple[list[int], list[float] | None]], list[int]]:
    """``(per clip its token ids and, with word timestamps, their aligned times; the clips' lengths in samples)``
    from ``generate`` on one batch of clips; ``report`` follows the windows of long clips as they are decoded."""
    features, lengths = batch_features(batch, processor.feature_extractor, request.word_timestamps)
    long_form = max(lengths) > WINDOW_SAMPLES
    store = features.pop("file", None)  # long files' features, mapped from a file
    tracker = _WindowProgress(report, store)
    try:
        output = generate(
            features["input_features"],
            features.get("attention_mask") if long_form or request.word_timestamps else None,
            max_new_tokens=request.max_new_tokens,
            return_timestamps=request.return_timestamps or long_form,
            **({"return_token_timestamps": True} if request.word_timestamps else {}),
            **({"monitor_progress": tracker} if long_form else {}),
            **options,
        )
    finally:
        if store is not None:
            store.close()
    tracker.finish(sum(lengths) / SAMPLING_RATE)
    return [_row_of(output, row, request.word_timestamps) for row in range(len(batch))], lengths


def _row_of(output: Any, row: int, word_timestamps: bool) -> tuple[list[int], list[float] | None]:
    """One row of ``generate``'s output: its token ids and, with word timestamps, their aligned times. A batch where
    the fallback skipped every window of some clip as silence comes back as float32 (Whisper's generate pads an empty
    float tensor for that clip): token ids all the same."""
    sequences = output["sequences"] if word_timestamps else output
    ids = sequences[row].long().tolist()
    return ids, output["token_timestamps"][row].tolist() if word_timestamps else None


def _by_language(
    clips: list[Clip],
    languages: list[str | None],
    processor,
    generate: GenerateFn,
    request: TranscriptionRequest,
    multilingual: bool,
    progress: bool | Callable[[float], None],
) -> list[Any]:
    """``transcribe_clips`` of the clips given a code (each with its own; with ``vad`` or ``batched``, those of each
    code apart) and of the clips to detect, the results in input order."""
    report, bar = _reporter(progress, sum(len(c) for c in clips) / SAMPLING_RATE)
    results: list[Any] = [None] * len(clips)
    for indices, language in _language_groups(languages, apart=request.finds_speech):
        decoded = transcribe_clips(
            [clips[i] for i in indices],
            processor,
            generate,
            request.updated(language=language),
            multilingual=multilingual,
            progress=report,
        )
        for index, result in zip(indices, decoded, strict=True):
            results[index] = result
    if bar is not None:
        bar.close()
    return results


def _language_groups(languages: list[str | None], apart: bool) -> list[tuple[list[int], Languages]]:
    """``(clip indices, the language to decode them with)``: the clips given a code in one group with the list of
    their codes (or, ``apart``, a group per code), then the clips to detect (None)."""
    groups: list[tuple[list[int], Languages]] = []
    if apart:
        for language in dict.fromkeys(languages):  # in order of first appearance
            groups.append(([i for i, entry in enumerate(languages) if entry == language], language))
        return groups
    given = [i for i, entry in enumerate(languages) if entry is not None]
    if given:
        groups.append((given, [languages[i] for i in given]))
    detected = [i for i, entry in enumerate(languages) if entry is None]
    if detected:
        groups.append((detected, None))
    return groups


def detect_languages(speculator: Any, audio: Any, sampling_rate: int | None) -> Any:
    """``Seq2SeqSpeculator.detect_language``: a code per clip of ``audio`` (one for a single input), detected by the
    speculator's big model."""
    from seq2spec.whisper.languages import detects_language

    model = speculator.big
    if getattr(model.config, "model_type", None) != "whisper" or not detects_language(model):
        raise ValueError("detect_language needs a multilingual Whisper model that detects languages")
    clips, single = prepare_clips(audio, sampling_rate, lazy=True)
    codes = clip_languages(clips, speculator.processor, model)
    return codes[0] if single else codes


def clip_languages(clips: list[Clip], processor, model, batch_size: int = 16) -> list[str]:
    """The language code Whisper ``model`` detects in each clip, as its ``generate`` detects it when given none (the
    first 30 s of the clip's features, computed as ``transcribe_clips`` computes them); a clip over 30 s is read whole
    for its features (their normalisation spans the file), one at a time."""
    from seq2spec.whisper.languages import detected_languages

    codes: list[str] = []
    for start in range(0, len(clips), batch_size):
        batch = clips[start : start + batch_size]
        groups = [[clip] for clip in batch] if any(len(clip) > WINDOW_SAMPLES for clip in batch) else [batch]
        for group in groups:
            features, _ = batch_features(group, processor.feature_extractor, False)
            store = features.pop("file", None)
            try:
                codes += detected_languages(model, features["input_features"])
            finally:
                if store is not None:
                    store.close()
    return codes


def batch_features(batch: list[Clip], extractor, word_timestamps: bool) -> tuple[dict[str, Any], list[int]]:
    """``(the extractor's features of a batch, each clip's samples)``: a batch holding a clip longer than 30 s gets
    unpadded features with an attention mask (long form), computed block by block as files are read where the
    extractor is Whisper's own (``log_mel.BlockLogMel``: an hour of audio is never held whole, at any rate)."""
    streamed = computes_like(extractor) and any(
        isinstance(clip, AudioFile) and len(clip) > WINDOW_SAMPLES + SAMPLING_RATE for clip in batch
    )  # headers may be off by a few samples: a clip this far past 30 s is long whatever it holds
    if streamed:
        features = _features_while_reading(batch, BlockLogMel(extractor))
        return features, features.pop("lengths").tolist()
    clips = [clip.samples() if isinstance(clip, AudioFile) else clip for clip in batch]
    long_form = max(len(clip) for clip in clips) > WINDOW_SAMPLES
    extractor_options = (
        {"truncation": False, "padding": "longest", "return_attention_mask": True}
        if long_form
        else {"return_attention_mask": word_timestamps}  # the clip's own frames, for precise word times
    )
    features = extractor(clips, sampling_rate=SAMPLING_RATE, return_tensors="pt", **extractor_options)
    return features, [len(clip) for clip in clips]


def _features_while_reading(batch: list[Clip], log_mel: BlockLogMel) -> dict[str, Any]:
    """``log_mel`` of the batch, its files read 20 s at a time; a file soundfile fails on part-way is read again
    through PyAV, as ``AudioFile.samples`` does."""
    while True:
        failed: list[tuple[AudioFile, AudioReadError]] = []
        try:
            return log_mel([_blocks(clip, failed) for clip in batch], [len(clip) for clip in batch])
        except AudioReadError:
            if not failed:
                raise
            clip, failure = failed[-1]
            clip.read_through_pyav(failure)  # raises the failure again where PyAV cannot help


def _blocks(clip: Clip, failed: list[tuple[AudioFile, AudioReadError]]) -> Iterator[np.ndarray]:
    """A clip's samples in blocks; a file's read failure is noted in ``failed`` before it goes on."""
    if isinstance(clip, np.ndarray):
        yield clip
        return
    try:
        yield from clip.blocks(seconds=20.0)
    except AudioReadError as failure:
        failed.append((clip, failure))
        raise


def _reporter(progress: bool | Callable[[float], None], total_seconds: float):
    """``(report(seconds), tqdm bar or None)`` for ``progress``: True shows a bar over ``total_seconds``."""
    if progress is not True:
        return progress or (lambda seconds: None), None
    import sys

    from tqdm import tqdm

    from seq2spec.whisper.progress import AudioProgress

    bar = tqdm(total=round(total_seconds, 1), unit="s", desc="audio", file=sys.stderr)
    return AudioProgress(bar).add, bar


class _WindowProgress:
    """Turns Whisper's long-form ``monitor_progress`` (per row: frames decoded, frames in all; 100 per second) into
    seconds newly decoded; with a ``store`` of the features, hands back the memory of the frames each row has
    passed."""

    def __init__(self, report: Callable[[float], None], store: FeatureFile | None = None) -> None:
        self.report = report
        self.reported = 0.0
        self.store = store

    def __call__(self, seek_and_total: torch.Tensor) -> None:
        if self.store is not None:
            self.store.release_before(seek_and_total[:, 0].tolist())
        seconds = float(torch.minimum(seek_and_total[:, 0], seek_and_total[:, 1]).sum()) / FRAMES_PER_SECOND
        if seconds > self.reported:
            self.report(seconds - self.reported)
            self.reported = seconds

    def finish(self, total_seconds: float) -> None:
        if total_seconds > self.reported:
            self.report(total_seconds - self.reported)
        self.reported = total_seconds


def window_offsets(ids: list[int], timestamp_begin: int, precision: float = 0.02, window: int = 1500) -> list[float]:
    """Per token of ``ids``, the start (seconds) of the window it was decoded in. Whisper's long form, and a short clip
    whose last segment it decoded again from that segment's start, return the windows' tokens one after another, and
    each window's timestamp tokens and token times (``return_token_timestamps``) count from its own start. A window
    starts where a segment's first timestamp falls below the last one; where it starts is found as Whisper's
    tokenizer places segments (``_compute_offsets``): a whole window after one that ended with a single timestamp,
    else at that window's last timestamp."""
    offsets = [0.0] * len(ids)
    is_time = [token >= timestamp_begin for token in ids]
    stamps = [i for i, timed in enumerate(is_time) if timed]
    if not stamps:
        return offsets
    bounds = [i for i in range(1, len(ids)) if is_time[i - 1] and is_time[i]]  # a segment ends, the next starts
    if stamps[-1] + 1 not in bounds:
        bounds.append(stamps[-1] + 1)
    first, highest, passed = stamps[0], 0, 0
    for bound in bounds:
        if bound - first > 1:
            start, end = ids[first] - timestamp_begin, ids[bound - 1] - timestamp_begin
            if start < highest:  # a new window
                single_ending = first >= 2 and not (is_time[first - 2] and is_time[first - 1])
                passed += window if single_ending else highest
            highest = end
        offsets[first:] = [passed * precision] * (len(ids) - first)
        first = bound
    return offsets


def token_times(ids: list[int], aligned: list[float], tokenizer, precision: float = 0.02) -> list[float]:
    """Each token's time in the clip: ``aligned`` (Whisper's cross-attention alignment, counted from the token's
    window) plus its window's start (``window_offsets``); a timestamp token, which ends the word before it, no later
    than the time it stands for (the alignment puts the end of a segment's last word up to seconds late)."""
    begin = tokenizer.all_special_ids[-1] + 1  # the first timestamp token, as Whisper's tokenizer finds it
    times = []
    for token, time, offset in zip(ids, aligned, window_offsets(ids, begin, precision), strict=True):
        times.append(time + offset if token < begin else min(time, (token - begin) * precision) + offset)
    return times


def words_of(tokenizer, ids: list[int], times: list[float]) -> list[dict[str, Any]]:
    """Words with start and end (seconds) from tokens and their start times: a word starts at a text token whose
    text starts with a space (or after a special or timestamp token) and ends where the token after it starts."""
    text_limit = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    words: list[dict[str, Any]] = []
    current: list[int] = []
    start = 0.0

    def close(end: float) -> None:
        text = tokenizer.decode(current).strip()
        if text:
            words.append({"word": text, "start": round(start, 2), "end": round(max(end, start), 2)})

    for position, token in enumerate(ids):
        time = times[position]
        if token >= text_limit:  # special and timestamp tokens end a word and start none
            if current:
                close(time)
            current = []
            continue
        if current and tokenizer.decode([token]).startswith(" "):
            close(time)
            current = []
        if not current:
            start = time
        current.append(token)
    if current:
        close(times[-1])
    return words


def clipped_to(result: Any, duration: float) -> Any:
    """``result`` with every segment and word time at most ``duration`` (the clip's own length): Whisper times the
    last window as 30 s of audio, so a window holding the last fraction of a second would otherwise end past the
    file. The text is the model's output as it is."""
    if not isinstance(result, dict):
        return result
    end = round(duration, 2)
    for item in (*result.get("segments", ()), *result.get("words", ())):
        for key in ("start", "end"):
            if item.get(key) is not None and item[key] > end:
                item[key] = end
    return result


def decode(tokenizer, ids: list[int], return_timestamps: bool) -> Any:
    text = tokenizer.decode(ids, skip_special_tokens=True).strip()
    if not return_timestamps:
        return text
    offsets = tokenizer.decode(ids, output_offsets=True).get("offsets", [])
    segments = [
        {
            "start": None if o["timestamp"][0] is None else round(o["timestamp"][0], 2),
            "end": None if o["timestamp"][1] is None else round(o["timestamp"][1], 2),
            "text": o["text"].strip(),
        }
        for o in offsets
    ]
    return {"text": text, "segments": segments}
