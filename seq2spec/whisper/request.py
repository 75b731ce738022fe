"""``TranscriptionRequest``: how audio is transcribed, one value carried from the commands and the server through
``Seq2SeqSpeculator.transcribe`` to the decoding (and to Ray's actors); ``WhisperDecoding``: how Whisper decodes
beyond greedy search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

# how a recording longer than 30 s is decoded (TranscriptionRequest.long_form)
LONG_FORMS = ("sequential", "vad", "batched")
TASKS = ("transcribe", "translate")


# openai-whisper's transcribe() defaults for its fallback from greedy decoding to sampling
FALLBACK_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
FALLBACK_COMPRESSION_RATIO = 2.4  # gzip ratio above which a window's text counts as a repetition loop
FALLBACK_LOGPROB = -1.0  # average log-probability below which a window is decoded again, hotter
FALLBACK_NO_SPEECH = 0.6  # a window this likely silent (and below the log-prob threshold) is skipped


@dataclass(frozen=True)
class WhisperDecoding:
    """How Whisper decodes beyond plain greedy search (the default: all off, exactly greedy).

    ``temperature_fallback``: openai-whisper's defaults. A window whose greedy text is too repetitive (compression
    ratio above 2.4) or too unlikely (average log-probability below -1.0) is decoded again by sampling at
    temperatures 0.2, 0.4, ... 1.0 until it passes; a likely silent window is skipped. Greedy passes stay exactly
    the big model's; sampled ones follow its distribution, reproducibly for a given ``seed``.
    ``condition_on_previous_text``: in long audio each window is decoded after the text of the windows before it.
    ``initial_prompt``: text the first window is decoded after (spellings, names, style).
    """

    temperature_fallback: bool = False
    condition_on_previous_text: bool = False
    initial_prompt: str | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.initial_prompt is not None and (
            not isinstance(self.initial_prompt, str) or not self.initial_prompt.strip()
        ):
            raise ValueError(f"initial_prompt must be non-empty text, got {self.initial_prompt!r}")
        if self.seed is not None and (not isinstance(self.seed, int) or isinstance(self.seed, bool)):
            raise TypeError(f"seed must be an int or None, got {type(self.seed).__name__}")

    def generate_arguments(self, processor) -> dict[str, Any]:
        """Whisper ``generate`` arguments for these choices."""
        arguments: dict[str, Any] = {}
        if self.temperature_fallback:
            arguments.update(
                temperature=FALLBACK_TEMPERATURES,
                compression_ratio_threshold=FALLBACK_COMPRESSION_RATIO,
                logprob_threshold=FALLBACK_LOGPROB,
                no_speech_threshold=FALLBACK_NO_SPEECH,
            )
        if self.condition_on_previous_text:
            arguments["condition_on_prev_tokens"] = True
        if self.initial_prompt is not None:
            arguments["prompt_ids"] = processor.get_prompt_ids(self.initial_prompt, return_tensors="pt")
        return arguments


def fallback_seed(decoding: WhisperDecoding | None) -> int | None:
    """The seed of ``decoding``'s sampled fallback passes (None without the fallback); ``decoding`` checked."""
    if decoding is not None and not isinstance(decoding, WhisperDecoding):
        raise TypeError(
            f"decoding must be a WhisperDecoding (seq2spec.WhisperDecoding(temperature_fallback=True, ...)), got "
            f"{type(decoding).__name__}"
        )
    return decoding.seed if decoding is not None and decoding.temperature_fallback else None


Languages = str | Sequence[str | None] | None  # one for every clip, or one per clip (None: detected)


def languages_per_clip(language: Languages, clips: int) -> list[str | None] | None:
    """``language`` checked: None when one value serves every clip (a language, or None to detect each clip's),
    else the list of one entry per clip."""
    if language is None or isinstance(language, str):
        return None
    if not isinstance(language, (list, tuple)):
        raise TypeError(
            f"language must be a language code, None (detected per clip) or a list of them, one per clip; got "
            f"{type(language).__name__}"
        )
    if len(language) != clips:
        raise ValueError(f"language lists {len(language)} entries for {clips} clips: give one per clip (None: detect)")
    for index, entry in enumerate(language):
        if entry is not None and not isinstance(entry, str):
            raise TypeError(f"language[{index}] must be a language code or None, got {type(entry).__name__}")
    return list(language)


@dataclass(frozen=True)
class TranscriptionRequest:
    """What ``transcribe`` is asked for.

    ``language`` (multilingual Whisper): a code such as ``"fr"`` for every clip, None to detect each clip's own (a
    batch may mix languages), or a list with one entry per clip (a code, or None to detect that clip's). ``task``:
    ``"transcribe"`` in the speech's language or ``"translate"`` into English. ``return_timestamps``: results are
    ``{"text", "segments": [{"start", "end", "text"}]}``; ``word_timestamps``: with ``"words"`` too, ``[{"word",
    "start", "end"}]``, timed by Whisper's cross-attention alignment as ``big.generate(return_token_timestamps=True)``
    times them. ``long_form``, for recordings longer than 30 s: ``"sequential"``, Whisper's own window after window
    (exactly ``big.generate``); ``"vad"``, the same on the speech Silero VAD finds, what lies between left out;
    ``"batched"``, that speech joined into pieces of at most 30 s, decoded as short clips, each ``big.generate``'s
    tokens for it (files read piece by piece). ``vad`` and ``batched`` give silence and noise no words, times in the
    clip's own. ``batch_size``: the rows decoded together, sorted by duration: clips, or with ``"batched"`` the
    speech pieces. ``max_new_tokens``: a cap per window. ``decoding`` (``WhisperDecoding``): openai-whisper's
    temperature fallback, conditioning on previous text, an initial prompt; its passes at temperature 0 remain
    ``big.generate``'s tokens.
    """

    language: Languages = None
    task: str = "transcribe"
    return_timestamps: bool = False
    word_timestamps: bool = False
    long_form: str = "sequential"
    batch_size: int = 16
    max_new_tokens: int | None = None
    decoding: WhisperDecoding | None = None

    def __post_init__(self) -> None:
        if self.long_form not in LONG_FORMS:
            raise ValueError(f"long_form must be one of {', '.join(LONG_FORMS)}, got {self.long_form!r}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}, got {self.task!r}")
        for name in ("batch_size", "max_new_tokens"):
            value = getattr(self, name)
            if value is None and name == "max_new_tokens":
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        fallback_seed(self.decoding)  # checks its type

    @property
    def finds_speech(self) -> bool:
        """Whether the speech is found first (``long_form`` ``"vad"`` or ``"batched"``)."""
        return self.long_form in ("vad", "batched")

    def updated(self, **changes: Any) -> TranscriptionRequest:
        """A copy with ``changes`` applied; an unknown name is a ``TypeError`` that lists the known ones."""
        unknown = sorted(set(changes) - {item.name for item in fields(self)})
        if unknown:
            hint = " (vad=True is long_form='vad')" if "vad" in unknown else ""
            known = ", ".join(item.name for item in fields(self))
            raise TypeError(f"unknown transcription option(s) {unknown}{hint}; known: {known}")
        return replace(self, **changes) if changes else self

    @classmethod
    def of(cls, request: TranscriptionRequest | None, changes: dict[str, Any]) -> TranscriptionRequest:
        """``request`` (None: the defaults) with ``changes`` applied."""
        if request is not None and not isinstance(request, TranscriptionRequest):
            raise TypeError(
                f"request must be a TranscriptionRequest, got {type(request).__name__} (pass language=, task=, ... "
                "by name)"
            )
        return (request or cls()).updated(**changes)
