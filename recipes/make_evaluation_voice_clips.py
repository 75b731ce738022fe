"""Short clips in Kokoro-82M's six evaluation voices, for measuring Whisper drafts only (never for training or tuning).

Each of af_heart, am_michael, bf_emma, bm_george, af_bella and am_fenrir reads ``--per-voice`` clips of one to three
sentences drawn from the draft corpus's held-out sentences (``distill_whisper_draft.split_sentences``: no training
clip speaks them), at its natural speed, with a short lead of room noise. Writes 16 kHz WAV files and
``references.tsv`` (file, text) into ``--out``.

    python recipes/make_evaluation_voice_clips.py --out ~/.cache/seq2spec/evaluation_voice_clips \\
        --kokoro-voices package/voices      # npm pack kokoro-js@1.2.1 && tar xzf kokoro-js-1.2.1.tgz
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import distill_whisper_draft  # noqa: E402
from voices import EVALUATION_VOICES, RATE, Voice, speak  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for the clips and references.tsv")
    parser.add_argument("--kokoro-voices", type=Path, required=True, help="kokoro-js's voices/ folder")
    parser.add_argument("--per-voice", type=int, default=8, help="clips per voice")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(f"{args.seed}:evaluation voices")
    noise = np.random.default_rng(args.seed)
    _, held_out = distill_whisper_draft.split_sentences(held_out_percent=5)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["file\ttext"]
    for index in range(args.per_voice * len(EVALUATION_VOICES)):
        name = EVALUATION_VOICES[index % len(EVALUATION_VOICES)]
        text = " ".join(rng.choice(held_out) for _ in range(rng.choice((1, 2, 2, 3))))
        speech = speak(text, Voice("kokoro", name), stretch=1.0, kokoro_folder=args.kokoro_voices)
        lead = (0.002 * noise.standard_normal(int(rng.uniform(0.1, 0.6) * RATE))).astype(np.float32)
        file = f"{index:03d}_{name}.wav"
        soundfile.write(args.out / file, np.concatenate([lead, speech]), RATE)
        lines.append(f"{file}\t{text}")
        print(f"{file}: {len(speech) / RATE:.1f} s", file=sys.stderr)
    (args.out / "references.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
