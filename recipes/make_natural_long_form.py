"""A long-form test file in natural voices: Kokoro-82M's six English evaluation voices (af_heart, am_michael,
bf_emma, bm_george, af_bella, am_fenrir; never used for training or tuning) taking turns to read everyday prose
written for this check, with the pauses of people talking: short ones between sentences, longer and uneven ones
between speakers, and now and then a stretch of room noise with nobody speaking.

The text is written beside the audio (``.txt``) as its reference; ``bench_long_form.py --sample`` repeats the file
to the length it needs. ``--voices held-out`` reads the same text in the four held-out Kokoro voices (af_nicole,
am_echo, bf_isabella, bm_lewis: no draft trains on them, but a choice between drafts may look at them), a natural
long file for choosing, where the evaluation voices' file is for reporting only.

    pip install "seq2spec[voices]"
    npm pack kokoro-js@1.2.1 && tar xzf kokoro-js-1.2.1.tgz          # the voice files: package/voices
    python recipes/make_natural_long_form.py --kokoro-voices package/voices --out natural_long_form.wav
    python recipes/make_natural_long_form.py --kokoro-voices package/voices --voices held-out --out heldout_long.wav
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_unseen_voice_audio import PARAGRAPHS  # noqa: E402
from voices import EVALUATION_VOICES, KOKORO_HELD_OUT, RATE, Voice, speak  # noqa: E402

MORE_PARAGRAPHS = [
    "The meeting started ten minutes late because nobody could find the key to the small room. In the end we sat "
    "in the kitchen, which was warmer anyway, and somebody made a pot of tea for everyone.",
    "Our first question was about the summer timetable. The buses will run every twenty minutes until September, "
    "but the last one on Sunday evenings leaves at half past eight instead of ten.",
    "Then we talked about the garden behind the school. Three families have offered to look after it in August, "
    "and the children want to plant sunflowers along the fence where the old shed used to stand.",
    "Someone asked whether the swimming pool would open again this year. The answer is yes, but only in the "
    "mornings at first, because they are still looking for two more lifeguards.",
    "Before we finished, my sister read out a letter from our old teacher, who moved to the coast last spring. "
    "She says the sea air suits her, and she invites anyone who passes by to stop for lunch.",
    "Walking home, I noticed that the bakery has painted its door bright green. It looks cheerful, although my "
    "father says it reminds him of the hospital where he worked for thirty years.",
]


def speakers(voices: str) -> tuple[str, ...]:
    """The Kokoro voices that take turns: ``"evaluation"`` (reporting only) or ``"held-out"`` (for choosing)."""
    if voices == "evaluation":
        return EVALUATION_VOICES
    if voices == "held-out":
        return KOKORO_HELD_OUT
    raise ValueError(f"voices must be 'evaluation' or 'held-out', got {voices!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the .wav file to write (16 kHz mono)")
    parser.add_argument("--kokoro-voices", type=Path, required=True, help="kokoro-js's voices/ folder")
    parser.add_argument(
        "--voices",
        choices=["evaluation", "held-out"],
        default="evaluation",
        help="the six evaluation voices (default; for reporting) or the four held-out Kokoro voices (for choosing)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    turns = speakers(args.voices)
    rng = np.random.default_rng(args.seed)

    def room(seconds: float) -> np.ndarray:
        return (0.002 * rng.standard_normal(int(seconds * RATE))).astype(np.float32)

    pieces, texts = [room(1.0)], []
    for index, paragraph in enumerate(PARAGRAPHS + MORE_PARAGRAPHS):
        voice = Voice("kokoro", turns[index % len(turns)])
        for sentence in paragraph.replace(". ", ".\n").splitlines():
            pieces += [speak(sentence, voice, stretch=1.0, kokoro_folder=args.kokoro_voices), room(0.3)]
        pieces.append(room(float(rng.uniform(0.5, 2.5)) if index % 4 != 3 else 8.0))
        texts.append(paragraph)
        print(f"{voice.name}: paragraph {index + 1}", file=sys.stderr)
    audio = np.concatenate(pieces)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(args.out, audio, RATE)
    args.out.with_suffix(".txt").write_text(" ".join(texts) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(audio) / RATE:.1f} s")


if __name__ == "__main__":
    main()
