#!/usr/bin/env bash
# The Whisper draft's encode, train and eval stages in one go on a GPU, each stage timed.
#
#   bash recipes/distill_on_gpu.sh WORK_DIR [distill_whisper_draft.py options ...]
#
# WORK_DIR holds manifest.jsonl and the speech it names, made on CPU cores by `--stage data` (speaking is CPU work);
# `pack_draft_speech.py --out WORK_DIR RUN ...` merges several data runs into one, training clips as Ogg/Opus at
# 14 kb/s and held-out clips (librivox's among them) as FLAC, so that 20 h of speech fit in about 150 MB. Move the
# folder to the GPU machine under the same path relative to where the script runs (pieces for a transfer:
# `tar cf - WORK_DIR | split -b 50M - draft_data.`, joined there with `cat draft_data.* | tar xf -`). Encoding
# batches 128 clips (their audio read by 16 threads, their log-mel features made on the GPU) and training takes the
# options given (e.g. `--batch-size 64 --steps 1500 --lr 2e-4 --init-draft seq2spec/assets/whisper_base_draft`),
# its encoder outputs held on the GPU. A stage's output is kept, so a rerun after an interruption resumes.
# DEVICE=cpu runs the same stages on the CPU (to try it with a tiny setting).
set -euo pipefail
work=${1:?usage: distill_on_gpu.sh WORK_DIR [distill_whisper_draft.py options ...]}
shift
device=${DEVICE:-cuda}
threads=${THREADS:-$(nproc)}  # CPU threads of each stage (the draft's data loading, a CPU trial's work)
recipe="$(dirname "$0")/distill_whisper_draft.py"
python - "$work" <<'CHECK'
import json, pathlib, sys
manifest = pathlib.Path(sys.argv[1]) / "manifest.jsonl"
if not manifest.is_file():
    sys.exit(f"{manifest} is missing: run distill_whisper_draft.py --stage data first (on CPU cores)")
missing = [r["path"] for r in map(json.loads, manifest.read_text().splitlines()) if not pathlib.Path(r["path"]).is_file()]
if missing:
    sys.exit(f"{len(missing)} clips named in {manifest} are missing here, e.g. {missing[0]}")
CHECK
for stage in encode train eval; do
    started=$SECONDS
    python "$recipe" --stage "$stage" --work-dir "$work" --device "$device" --encode-batch 128 --threads "$threads" "$@"
    echo "$stage: $((SECONDS - started)) s on $device" | tee -a "$work/stage_times.txt"
done
