"""Make the ASR sample set in ``recipes/data/asr_samples/`` offline, with text-to-speech engines from Debian.

Needs ``apt-get install flite espeak-ng``. Every sentence below was written for seq2spec and is in the public
domain, as are the recordings made from it (flite voices: BSD-like licence; espeak-ng: GPL-3, its output is not
covered). Writes 16 kHz mono 16-bit WAV files, one long-form file (a minute or more: the short clips joined with
pauses), and ``references.tsv`` (``file<TAB>text``).

    python recipes/data/make_asr_samples.py
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile
import soxr

OUT = Path(__file__).resolve().parent / "asr_samples"
RATE = 16_000

SENTENCES = [
    "The morning train to the coast was late again today.",
    "Please put the blue folder on the table by the window.",
    "We planted tomatoes, beans and a row of sunflowers.",
    "The library closes at six on Saturdays.",
    "She asked whether the meeting could move to Thursday.",
    "A cold wind blew across the empty market square.",
    "Turn left at the bakery and walk two more blocks.",
    "The children built a small boat out of old boxes.",
    "He forgot his umbrella and got soaked on the way home.",
    "Our team finished the project a week ahead of schedule.",
    "The old clock in the hall stopped at midnight.",
    "Fresh bread smells wonderful early in the morning.",
]
# (engine, voice, speed): flite voices and espeak-ng English variants at several speaking rates
VOICES = [
    ("flite", "slt", None),
    ("flite", "kal", None),
    ("flite", "awb", None),
    ("flite", "rms", None),
    ("espeak-ng", "en-us", 150),
    ("espeak-ng", "en", 185),
]


def speak(text: str, engine: str, voice: str, speed: int | None) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "speech.wav"
        if engine == "flite":
            command = ["flite", "-voice", voice, "-t", text, "-o", str(path)]
        else:
            command = ["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text]
        subprocess.run(command, check=True, capture_output=True)
        samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
    samples = samples.mean(axis=1)
    return soxr.resample(samples, rate, RATE).astype(np.float32) if rate != RATE else samples


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    references = []
    clips = []
    for index, sentence in enumerate(SENTENCES):
        engine, voice, speed = VOICES[index % len(VOICES)]
        samples = speak(sentence, engine, voice, speed)
        name = f"clip{index:02d}_{engine}_{voice}.wav"
        soundfile.write(OUT / name, samples, RATE, subtype="PCM_16")
        references.append((name, sentence))
        clips.append(samples)
    pause = np.zeros(int(0.8 * RATE), dtype=np.float32)
    long_form, text = [], []
    while sum(len(c) for c in long_form) < 65 * RATE:  # at least a minute
        for samples, (_, sentence) in zip(clips, references, strict=True):
            long_form += [samples, pause]
            text.append(sentence)
    soundfile.write(OUT / "long_form.wav", np.concatenate(long_form), RATE, subtype="PCM_16")
    references.append(("long_form.wav", " ".join(text)))
    with open(OUT / "references.tsv", "w", encoding="utf-8") as handle:
        handle.write("file\ttext\n")
        handle.writelines(f"{name}\t{sentence}\n" for name, sentence in references)
    seconds = sum(soundfile.info(OUT / name).duration for name, _ in references)
    print(f"{len(references)} files, {seconds:.0f} s of audio -> {OUT}")


if __name__ == "__main__":
    main()
