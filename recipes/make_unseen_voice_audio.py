"""A long-form test file in a voice the shipped Whisper draft never trained on: hibari-tts (Kokoro's "heart" voice,
distilled; Apache-2.0) reading everyday prose written for this check, resampled to 16 kHz.

The draft's training clips are flite and espeak-ng voices reading WordNet and fortune sentences; this file shares
neither voice nor text with them. The text is written to ``--out`` beside the audio (``.txt``) as its reference.

    pip install hibari-tts
    python recipes/make_unseen_voice_audio.py --out ~/.cache/seq2spec/unseen_voice_long_form.wav
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import soundfile
import soxr

PARAGRAPHS = [
    "On Saturday morning the market opened a little later than usual, because the delivery van had broken down "
    "somewhere outside the village. By nine o'clock the square was full of people carrying baskets and bags.",
    "The baker had brought twice as many loaves as last week, and most of them were gone before ten. A young "
    "couple asked whether he could bake a cake for their daughter's birthday, and he promised to try.",
    "Across the road, the library was holding its monthly sale of old books. Paperbacks cost fifty cents and "
    "hardcovers a dollar, and all the money goes toward new chairs for the reading room.",
    "In the afternoon the weather turned cold and a light rain began to fall. The children who had been playing "
    "football in the park ran home, and the café on the corner filled up with people looking for somewhere warm.",
    "My neighbour says that the river rose almost a metre during the storm last winter. This year the town has "
    "built a low wall along the bank, and everyone hopes it will be enough to keep the water out of the gardens.",
    "Before going to bed I wrote a short list for Monday: call the dentist, return the library books, buy a new "
    "light bulb for the kitchen, and remember to water the tomatoes if it does not rain again.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the .wav file to write (16 kHz mono)")
    parser.add_argument("--voice", default="heart")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from hibari.tts import SAMPLE_RATE, Hibari

    speaker = Hibari(voice=args.voice)
    pieces = []
    for paragraph in PARAGRAPHS:
        for sentence in paragraph.replace(". ", ".\n").splitlines():
            audio = np.asarray(speaker(sentence, seed=args.seed), dtype=np.float32).reshape(-1)
            pieces += [audio, np.zeros(int(0.35 * SAMPLE_RATE), dtype=np.float32)]
        pieces.append(np.zeros(int(0.6 * SAMPLE_RATE), dtype=np.float32))
    audio = soxr.resample(np.concatenate(pieces), SAMPLE_RATE, 16000)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(args.out, audio, 16000)
    args.out.with_suffix(".txt").write_text(" ".join(PARAGRAPHS) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(audio) / 16000:.1f} s")


if __name__ == "__main__":
    main()
