"""Train seq2spec's spelling-correction pair: a ~15M-parameter T5 v1.1 corrector and a distilled small draft.

Stages (run in order by ``--stage all``; each resumes from its last checkpoint in ``--work-dir``):
  text       (not part of ``all``) snapshots the broader text of ``speller_text.py`` (Debian package descriptions,
             manual pages) into the work directory, for ``--text-share``; ``validate`` then also scores it
  tokenizer  SentencePiece unigram model (2048 pieces, byte fallback) on the training sentences, clean and corrupted
  big        the big model, on (corrupted -> clean) pairs made fresh for every step
  average    (not part of ``all``) the big checkpoint averaged with the weights its run started from (--average-with)
  small      the draft, distilled from the big model (cross-entropy on the clean text + KL to the big model's logits)
  validate   the big model's CER and unchanged-clean share on held-out sentences outside the evaluation's:
             for choosing between candidate runs (not part of ``all``)
  eval       held-out CER, unchanged-clean share, teacher-forced agreement, decoder cost; writes metrics.json
  export     fp16 safetensors, tokenizer and model card into --export-dir (the package's shipped weights)

Needs, besides seq2spec: ``apt-get install wordnet-base fortunes fortunes-min`` and ``pip install codespell protobuf``
for the first stage only: it snapshots the corpus and the typo dictionary into ``--work-dir`` (sources.json.gz), and
every later stage reads that snapshot, so a work directory copied to a GPU machine trains there without them.
Every batch is drawn from a generator seeded by (seed, step), so a resumed run sees the same data as an unbroken one.
``--device cuda`` trains on a GPU (bf16 autocast there too); ``--data-workers`` makes the batches in worker processes.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import math
import random
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import speller_data  # noqa: E402
import speller_text  # noqa: E402

from seq2spec.spelling.pipeline import SpellingPipeline  # noqa: E402
from seq2spec.spelling.settings import SpellingSettings  # noqa: E402

VOCAB_SIZE = 2048
# The big model: 4+4 layers, d_model 384 (12 heads of 32), gated-GELU feed-forward of 1024 units: 17.3M parameters.
# Wide T5s trained from scratch here sit for thousands of steps on the "bag of source words" plateau (loss ~2.5-4)
# before they learn to copy in order, at ~1.6 steps/s (bf16 autocast, batch 64, 2 cores). A narrow "seed" with the
# same depth and heads of the same size learns to copy within ~1,400 steps at ~4 steps/s, so the big model is grown
# from it: ``widen`` makes the big shape compute exactly the seed's function (residual width tripled by repeating
# each dimension, extra heads and feed-forward units with zero output weights), then the big model trains on.
BIG_SHAPE = {"d_model": 384, "d_kv": 32, "num_heads": 12, "d_ff": 1024, "num_layers": 4, "num_decoder_layers": 4}
SEED_SHAPE = {"d_model": 128, "d_kv": 32, "num_heads": 4, "d_ff": 512, "num_layers": 4, "num_decoder_layers": 4}
# The draft: the seed cut to decoder layers 0 and 3 (d_model 128, its own embeddings), about a tenth of the big
# decoder's cost per token; it already copies, and is then distilled from the big model (half cross-entropy, half KL
# divergence to the big model's next-token distribution).
SMALL_SHAPE = {**SEED_SHAPE, "num_decoder_layers": 2}
SMALL_DECODER_LAYERS = (0, 3)


# ----------------------------------------------------------------------------- data


SOURCES_FILE = "sources.json.gz"
# The dictionary text a run may add (``--gloss-form``): where each form is cached in the work directory, and how
# it is read from the system the first time.
GLOSS_FORMS = {
    "definitions": ("glosses.json.gz", "wordnet_glosses"),
    "headwords": ("headwords.json.gz", "wordnet_headword_entries"),
}


def _cached_json(path: Path, build):
    """``build()``'s result, computed once and kept as gzipped JSON at ``path`` (so later runs need no system data)."""
    if path.exists():
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return json.load(handle)
    value = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    with gzip.open(temporary, "wt", encoding="utf-8") as handle:
        json.dump(value, handle)
    temporary.replace(path)
    return value


@functools.lru_cache(maxsize=2)
def load_sources(work_dir: Path) -> dict:
    """The clean corpus and codespell's typos, read once from the system and kept in ``work_dir`` after that."""
    return _cached_json(
        work_dir / SOURCES_FILE, lambda: {"corpus": speller_data.load_corpus(), "typos": speller_data.load_typos()}
    )


TEXT_FILE = "text.json.gz"


@functools.lru_cache(maxsize=2)
def load_text(work_dir: Path) -> dict:
    """The broader text (``speller_text.build_text``: Debian package descriptions and manual pages), read once from
    the system by ``--stage text`` and kept in ``work_dir`` after that."""
    return _cached_json(work_dir / TEXT_FILE, lambda: speller_text.build_text(load_typos(work_dir)))


def split_text(work_dir: Path) -> tuple[list[str], list[str]]:
    """The broader text's sentences of every source: (training, sorted by length; held out by hash)."""
    sentences = sorted({s for source in load_text(work_dir)["sentences"].values() for s in source})
    held_out = [s for s in sentences if speller_data.is_held_out(s)]
    training = sorted((s for s in sentences if not speller_data.is_held_out(s)), key=lambda s: (len(s), s))
    return training, held_out


@functools.lru_cache(maxsize=4)
def load_glosses(work_dir: Path, form: str = "definitions") -> list[str]:
    """WordNet's definitions, or its entries (headwords and first definition), as extra training text: read once
    from the system and kept in ``work_dir`` after that."""
    filename, reader = GLOSS_FORMS[form]
    return _cached_json(work_dir / filename, getattr(speller_data, reader))


def load_typos(work_dir: Path) -> dict[str, list[str]]:
    return load_sources(work_dir)["typos"]


def split_corpus(work_dir: Path) -> tuple[list[str], list[str]]:
    corpus = load_sources(work_dir)["corpus"]
    held_out = [s for s in corpus if speller_data.is_held_out(s)]
    training = sorted((s for s in corpus if not speller_data.is_held_out(s)), key=lambda s: (len(s), s))
    return training, held_out


def evaluation_sets(
    held_out: list[str], typos: dict[str, list[str]], seed: int, size: int
) -> tuple[list[tuple[str, str]], list[str]]:
    """Disjoint held-out sentences: ``size`` (corrupted, clean) pairs with at least one error, ``size`` clean ones."""
    rng = random.Random(seed)
    shuffled = held_out[:]
    rng.shuffle(shuffled)
    corruptor = speller_data.Corruptor(typos, clean_share=0.0)
    pairs = []
    for sentence in shuffled[:size]:
        corrupted = corruptor(sentence, rng)
        pairs.append((corrupted, sentence))
    return pairs, shuffled[size : 2 * size]


def validation_sets(
    held_out: list[str], typos: dict[str, list[str]], seed: int, eval_size: int, size: int
) -> tuple[list[tuple[str, str]], list[str]]:
    """Like ``evaluation_sets``, from the held-out sentences that the final evaluation (``eval_size`` of each kind,
    same ``seed``) leaves out: for choosing between candidate models without looking at the evaluation set."""
    shuffled = held_out[:]
    random.Random(seed).shuffle(shuffled)  # the shuffle that evaluation_sets starts with
    rest = shuffled[2 * eval_size :]
    if len(rest) < 2 * size:
        raise ValueError(f"{len(rest)} held-out sentences outside the evaluation: too few for 2 x {size}")
    return evaluation_sets(rest, typos, seed + 1227, size)


@dataclass(frozen=True)
class TrainingText:
    """Where a batch's clean sentences come from: the corpus's training split, for ``gloss_share`` of the batches
    WordNet's definitions and for ``text_share`` of them the broader text (package descriptions, manual pages).
    Every list is sorted by length, so one batch has sentences of similar length."""

    sentences: list[str]
    glosses: list[str] = field(default_factory=list)
    gloss_share: float = 0.0
    text: list[str] = field(default_factory=list)
    text_share: float = 0.0

    def pick(self, rng: random.Random, batch_size: int) -> list[str]:
        if self.text and self.text_share > 0:
            draw = rng.random()
            if draw < self.text_share:
                pool = self.text
            elif self.glosses and draw < self.text_share + self.gloss_share:
                pool = self.glosses
            else:
                pool = self.sentences
        else:  # as before the broader text existed: the same batches for the same seed
            from_glosses = self.glosses and self.gloss_share > 0 and rng.random() < self.gloss_share
            pool = self.glosses if from_glosses else self.sentences
        window = 8 * batch_size
        start = rng.randrange(0, max(1, len(pool) - window))
        return [pool[start + rng.randrange(min(window, len(pool)))] for _ in range(batch_size)]


def training_glosses(work_dir: Path, form: str = "definitions") -> list[str]:
    """WordNet's definitions (or entries) minus those whose hash falls in the held-out share, sorted by length."""
    glosses = [g for g in load_glosses(work_dir, form) if not speller_data.is_held_out(g)]
    return sorted(glosses, key=lambda s: (len(s), s))


def training_text(args) -> TrainingText:
    """The training split of the corpus, plus WordNet's definitions when ``--gloss-share`` is above 0 (held-out
    hashes excluded there too, so no held-out sentence is ever trained on)."""
    training, _ = split_corpus(args.work_dir)
    text_share = getattr(args, "text_share", 0.0)
    limit = getattr(args, "text_max_chars", 200)
    text = [s for s in split_text(args.work_dir)[0] if len(s) <= limit] if text_share > 0 else []
    glosses = training_glosses(args.work_dir, args.gloss_form) if args.gloss_share > 0 else []
    if not glosses and not text:
        return TrainingText(training)
    return TrainingText(training, glosses, args.gloss_share, text, text_share)


def folds_capitals(args) -> bool:
    """``--fold-capitals``: training pairs, validation and evaluation go through ``fold_capitals`` as ``correct``'s."""
    return getattr(args, "fold_capitals", False)


def correct_steps(args) -> SpellingSettings:
    """The steps around the model that validation and evaluation take, as ``correct`` takes them: ``--fold-capitals``
    and ``--keep-dictionary-words``."""
    return SpellingSettings(
        fold_capitals=folds_capitals(args), keep_dictionary_words=getattr(args, "keep_dictionary_words", False)
    )


def training_noise(args, typos: dict[str, list[str]]):
    """The corruption of the training batches: the recipe's ``Corruptor``, or with ``--human-noise-share`` above 0
    ``speller_text.MixedNoise`` (that share of the corrupted sentences with ``noise.HumanNoise``); with
    ``--fold-capitals`` its pairs folded as ``correct`` folds them (``speller_text.FoldedNoise``)."""
    human = getattr(args, "human_noise_share", 0.0)
    if human <= 0:
        noise = speller_data.Corruptor(typos, clean_share=args.clean_share)
    else:
        capitalised = getattr(args, "capitalised_typo_weight", 1.0)
        noise = speller_text.MixedNoise(typos, args.clean_share, human, args.initial_typo_share, capitalised)
    return speller_text.FoldedNoise(noise) if folds_capitals(args) else noise


def make_batch(tokenizer, training: TrainingText | list[str], corruptor, seed: int, step: int, batch_size: int):
    """A batch of sentences of similar length (``training`` is sorted by length), corrupted afresh."""
    rng = random.Random(seed * 1_000_003 + step)
    text = training if isinstance(training, TrainingText) else TrainingText(training)
    pairs = [speller_text.training_pair(corruptor, sentence, rng) for sentence in text.pick(rng, batch_size)]
    noisy = [source for source, _ in pairs]
    clean = [target for _, target in pairs]
    source = tokenizer(noisy, padding=True, return_tensors="pt")
    labels = tokenizer(clean, padding=True, return_tensors="pt")["input_ids"]
    labels[labels == tokenizer.pad_token_id] = -100
    return source["input_ids"], source["attention_mask"], labels


class BatchStream(torch.utils.data.IterableDataset):
    """The batches of steps ``first`` to ``last - 1`` in order; with W data-loader workers, worker k makes steps
    k, k + W, ... and the loader's round-robin hands them back in step order. A step's batch depends only on
    (seed, step), so the stream is the same whatever the number of workers."""

    def __init__(self, tokenizer, training, corruptor, copier, copy_steps: int, seed: int, batch_size: int,
                 first: int, last: int) -> None:  # fmt: skip
        super().__init__()
        self.tokenizer, self.training, self.corruptor, self.copier = tokenizer, training, corruptor, copier
        self.copy_steps, self.seed, self.batch_size, self.first, self.last = copy_steps, seed, batch_size, first, last

    def __iter__(self):
        worker = torch.utils.data.get_worker_info()
        offset, stride = (worker.id, worker.num_workers) if worker else (0, 1)
        for step in range(self.first + offset, self.last, stride):
            noise = self.copier if step < self.copy_steps else self.corruptor
            yield make_batch(self.tokenizer, self.training, noise, self.seed, step, self.batch_size)


# ----------------------------------------------------------------------------- models


def new_model(shape: dict, seed: int):
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=VOCAB_SIZE,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=True,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        **shape,
    )
    model = T5ForConditionalGeneration(config)
    model.generation_config.max_new_tokens = 128
    return model


def decoder_macs_per_token(config, source_length: int = 24) -> int:
    """Multiply-adds of one decoder step (all layers and the LM head), for a source of ``source_length`` tokens."""
    d, inner, ff = config.d_model, config.num_heads * config.d_kv, config.d_ff
    gated = 3 if config.is_gated_act else 2
    self_attention = 4 * d * inner
    cross_attention = 2 * d * inner + 2 * inner * source_length  # q, o projections + scores/values over the source
    layer = self_attention + cross_attention + gated * d * ff
    return config.num_decoder_layers * layer + d * config.vocab_size


# ----------------------------------------------------------------------------- checkpoints


def save_checkpoint(path: Path, model, optimizer, step: int, elapsed: float = 0.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "elapsed": elapsed}
    torch.save(state, temporary)
    temporary.replace(path)  # atomic: a killed run never leaves a half-written checkpoint


def load_checkpoint(path: Path, model, optimizer) -> tuple[int, float]:
    """Resume point: (steps done, training seconds spent so far)."""
    if not path.exists():
        return 0, 0.0
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    if state.get("optimizer") is not None:  # a weights-only checkpoint resumes with a fresh optimizer
        optimizer.load_state_dict(state["optimizer"])
    return int(state["step"]), float(state.get("elapsed", 0.0))


def learning_rate(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


# ----------------------------------------------------------------------------- evaluation


@torch.inference_mode()
def correct_texts(
    model,
    tokenizer,
    texts: list[str],
    batch_size: int = 64,
    max_new_tokens: int = 128,
    steps: SpellingSettings | None = None,
) -> list[str]:
    """``model``'s greedy corrections of ``texts``; with ``steps`` (capitals folded, dictionary words kept) as
    ``correct`` runs the model."""
    if steps is not None:
        decode = lambda written: correct_texts(model, tokenizer, written, batch_size, max_new_tokens)  # noqa: E731
        return SpellingPipeline(steps, decode, tokenizer=tokenizer)(texts)
    model.eval()
    outputs = []
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    results = [""] * len(texts)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = tokenizer([texts[i] for i in chunk], padding=True, return_tensors="pt").to(model.device)
        generated = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False)
        for index, text in zip(chunk, tokenizer.batch_decode(generated, skip_special_tokens=True), strict=True):
            results[index] = text
    outputs.extend(results)
    return outputs


def cer(references: list[str], hypotheses: list[str]) -> float:
    import jiwer

    return float(jiwer.cer(references, hypotheses))


def word_outcomes(noisy: list[str], references: list[str], outputs: list[str]) -> dict[str, int]:
    """Word by word, what a corrector did to corrupted sentences: of the misspelled words, how many it ``fixed``,
    ``left`` as they were or ``changed`` into another wrong word; of the correct words, how many it ``kept`` or
    ``broke``. Sentences whose output has another number of words are counted apart (``unaligned``)."""
    counts = dict.fromkeys(("fixed", "left", "changed", "kept", "broke", "unaligned"), 0)
    for source, reference, output in zip(noisy, references, outputs, strict=True):
        words = source.split(" "), reference.split(" "), output.split(" ")
        if len({len(sentence) for sentence in words}) > 1:
            counts["unaligned"] += 1
            continue
        for given, wanted, written in zip(*words, strict=True):
            if given != wanted:
                outcome = "fixed" if written == wanted else "left" if written == given else "changed"
            else:
                outcome = "kept" if written == wanted else "broke"
            counts[outcome] += 1
    return counts


def correction_scores(
    model, tokenizer, pairs, clean, max_new_tokens: int = 128, steps: SpellingSettings | None = None
) -> dict:
    """CER of the (corrupted, clean) ``pairs`` before and after ``model``'s correction, and the share of the
    ``clean`` sentences it returns unchanged (``steps``: the steps ``correct`` takes around the model)."""
    noisy = [source for source, _ in pairs]
    references = [reference for _, reference in pairs]
    hypotheses = correct_texts(model, tokenizer, noisy, max_new_tokens=max_new_tokens, steps=steps)
    unchanged = correct_texts(model, tokenizer, clean, max_new_tokens=max_new_tokens, steps=steps)
    return {
        "cer_input": cer(references, noisy),
        "cer_output": cer(references, hypotheses),
        "clean_unchanged": sum(a == b for a, b in zip(unchanged, clean, strict=True)) / len(clean),
    }


def quick_eval(model, tokenizer, pairs, clean, steps: SpellingSettings | None = None) -> dict:
    # 48 new tokens cover the quick-evaluation sentences and keep an untrained model's babbling cheap
    scores = correction_scores(model, tokenizer, pairs, clean, max_new_tokens=48, steps=steps)
    model.train()
    return scores


# ----------------------------------------------------------------------------- stages


def stage_tokenizer(args) -> None:
    import sentencepiece as spm
    from transformers import T5Tokenizer

    target = args.work_dir / "tokenizer"
    if (target / "tokenizer.json").exists():
        print(f"tokenizer: {target} exists, skipped")
        return
    training, _ = split_corpus(args.work_dir)
    rng = random.Random(args.seed)
    corruptor = speller_data.Corruptor(load_typos(args.work_dir))
    lines = training + [corruptor(sentence, rng) for sentence in training]
    raw = args.work_dir / "spm"
    raw.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_prefix=str(raw / "spiece"),
        vocab_size=VOCAB_SIZE,
        model_type="unigram",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        byte_fallback=True,
        character_coverage=1.0,
        num_threads=2,
        input_sentence_size=len(lines),
        shuffle_input_sentence=True,
        seed_sentencepiece_size=1_000_000,
        minloglevel=2,
    )
    tokenizer = T5Tokenizer.from_pretrained(str(raw), extra_ids=0)
    tokenizer.model_max_length = 256
    tokenizer.save_pretrained(target)
    print(f"tokenizer: {len(tokenizer)} pieces -> {target}")


def load_tokenizer(args):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(args.work_dir / "tokenizer")


def autocast(args):
    """bf16 autocast (weights and optimizer stay fp32): ~1.5x faster steps on CPUs with AMX/AVX512-BF16."""
    return torch.autocast(torch.device(args.device).type, dtype=torch.bfloat16, enabled=args.precision == "bf16")


def train_loop(args, name: str, model, steps: int, peak_lr: float, loss_fn, tokenizer, copy_steps: int = 0) -> None:
    _, held_out = split_corpus(args.work_dir)
    training = training_text(args)
    typos = load_typos(args.work_dir)
    pairs, clean = evaluation_sets(held_out, typos, args.seed, args.quick_eval_size)
    corruptor = training_noise(args, typos)
    copier = speller_data.Corruptor(typos, clean_share=1.0)  # curriculum: learn to copy first
    model.to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.98), weight_decay=0.01)
    checkpoint = args.work_dir / f"{name}.ckpt"
    step, spent = load_checkpoint(checkpoint, model, optimizer)
    log_path = args.work_dir / f"{name}_log.jsonl"
    if log_path.exists():  # drop records of steps after the checkpoint (a run killed between saves)
        kept = [line for line in log_path.read_text(encoding="utf-8").splitlines() if json.loads(line)["step"] <= step]
        log_path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    if step >= steps:
        print(f"{name}: already trained for {step} steps")
        return
    model.train()
    started, first_step = time.time(), step
    progress = tqdm(total=steps, initial=step, desc=f"train {name}", dynamic_ncols=True)
    stream = BatchStream(tokenizer, training, corruptor, copier, copy_steps, args.seed, args.batch_size, step, steps)
    workers = {"num_workers": args.data_workers, "prefetch_factor": 4} if args.data_workers else {}
    batches = iter(torch.utils.data.DataLoader(stream, batch_size=None, **workers))
    while step < steps:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, steps, peak_lr, args.warmup)
        input_ids, mask, labels = (tensor.to(args.device, non_blocking=True) for tensor in next(batches))
        with autocast(args):
            loss = loss_fn(model, input_ids, mask, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        progress.update(1)
        progress.set_postfix(loss=f"{loss.item():.3f}")
        elapsed = spent + time.time() - started
        record = {
            "step": step,
            "loss": round(loss.item(), 4),
            "lr": optimizer.param_groups[0]["lr"],
            "elapsed_s": round(elapsed, 1),
        }
        out_of_time = args.time_budget_minutes and time.time() - started > 60 * args.time_budget_minutes
        if step % args.eval_every == 0 or step == steps or out_of_time:
            record.update(quick_eval(model, tokenizer, pairs, clean, steps=correct_steps(args)))
            progress.write(json.dumps(record))
        if step % args.save_every == 0 or step == steps or out_of_time:
            save_checkpoint(checkpoint, model, optimizer, step, elapsed)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
        if out_of_time:
            progress.write(f"{name}: time budget reached at step {step}; rerun to resume")
            break
    progress.close()
    record_run(args, name, first_step, step, steps, peak_lr, (time.time() - started) / 60)


def record_run(args, name: str, first: int, last: int, planned: int, peak_lr: float, minutes: float) -> None:
    """Appends what this run of a stage did to ``{name}_runs.jsonl``: the model card's training table."""
    device = torch.device(args.device)
    threads = f"{args.threads} thread" + ("s" if args.threads != 1 else "")
    hardware = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {threads}"
    run = {
        "steps": [first, last],
        "planned_steps": planned,
        "hardware": hardware,
        "batch_size": args.batch_size,
        "peak_lr": peak_lr,
        "warmup": args.warmup,
        "precision": args.precision,
        "gloss_share": args.gloss_share,
        "gloss_form": args.gloss_form,
        "clean_share": args.clean_share,
        "minutes": round(minutes, 1),
    }
    if getattr(args, "text_share", 0.0) > 0:
        run.update(text_share=args.text_share, text_max_chars=args.text_max_chars)
    if getattr(args, "human_noise_share", 0.0) > 0:
        run.update(human_noise_share=args.human_noise_share, initial_typo_share=args.initial_typo_share)
        if args.capitalised_typo_weight != 1.0:
            run.update(capitalised_typo_weight=args.capitalised_typo_weight)
    if folds_capitals(args):
        run.update(fold_capitals=True)
    if name == "big":
        run.update(dropout=args.dropout, init_from=str(args.init_from) if args.init_from else None)
    if name == "small":
        run.update(init_from=str(args.small_init_from) if args.small_init_from else None)
    with open(args.work_dir / f"{name}_runs.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(run) + "\n")


HISTORY_FILE = "training_runs.jsonl"  # next to exported weights: every run behind them, each with its "stage"


def inherit_history(work_dir: Path, weights: Path) -> None:
    """A work directory whose first run starts from exported weights (``--init-from .../big/model.safetensors``)
    takes over their training history, the export's ``training_runs.jsonl``, so that the model card it writes
    lists every run behind its models, not only its own."""
    history = weights.parent.parent / HISTORY_FILE
    if not history.exists() or any((work_dir / f"{name}_runs.jsonl").exists() for name in STARTS):
        return
    for line in history.read_text(encoding="utf-8").splitlines():
        run = json.loads(line)
        with open(work_dir / f"{run.pop('stage')}_runs.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(run) + "\n")


def write_history(work_dir: Path, export_dir: Path) -> None:
    """The work directory's runs of every stage, in order, as the export's ``training_runs.jsonl``."""
    lines = []
    for name in STARTS:
        path = work_dir / f"{name}_runs.jsonl"
        if path.exists():
            runs = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
            lines.extend(json.dumps({"stage": name, **run}) for run in runs)
    (export_dir / HISTORY_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def cross_entropy(model, input_ids, mask, labels):
    return model(input_ids=input_ids, attention_mask=mask, labels=labels).loss


def stage_seed(args) -> None:
    """The narrow model the big one grows from: copying (clean -> clean) first, then correction."""
    tokenizer = load_tokenizer(args)
    model = new_model(SEED_SHAPE, args.seed)

    train_loop(
        args, "seed", model, args.seed_steps, args.seed_lr, cross_entropy, tokenizer, copy_steps=args.seed_copy_steps
    )


# state-dict names of the weights that read the residual stream ([out, d_model]) and that write to it ([d_model, in])
_READS = (".q.weight", ".k.weight", ".v.weight", ".wi_0.weight", ".wi_1.weight", ".wi.weight")
_WRITES = (".o.weight", ".wo.weight")


@torch.no_grad()
def widen(narrow, shape: dict, seed: int, noise: float = 0.0):
    """``shape``'s T5 computing what ``narrow`` computes (up to ``noise``, a relative perturbation of the copied
    weights that lets the repeated dimensions drift apart in training).

    The residual stream is repeated r = d_new / d_old times: embeddings and norm weights are tiled (an RMS norm of
    a tiled vector is the tiled norm); a weight reading the stream is tiled along its input and divided by r; a
    weight writing to it is tiled along its output. Heads keep their size, so attention scores are unchanged; the
    new heads and feed-forward units read with fresh random weights and write with zero weights. The tied output
    head sees the tiled hidden state: the decoder's final norm is divided by sqrt(r) so that the logits, scaled by
    d_model ** -0.5, stay the same."""
    old, new = narrow.config, new_model(shape, seed)
    ratio, remainder = divmod(new.config.d_model, old.d_model)
    if remainder or new.config.d_kv != old.d_kv or new.config.num_layers != old.num_layers:
        raise ValueError("widen needs a d_model multiple, the same head size and the same depth")
    if new.config.num_decoder_layers != old.num_decoder_layers or new.config.d_ff < old.d_ff:
        raise ValueError("widen needs the same decoder depth and at least as many feed-forward units")
    generator = torch.Generator().manual_seed(seed)
    target = new.state_dict()
    for name, value in narrow.state_dict().items():
        grown = target[name]
        if name.endswith(_READS):
            grown[: value.shape[0]] = value.repeat(1, ratio) / ratio
        elif name.endswith(_WRITES):
            grown.zero_()
            grown[:, : value.shape[1]] = value.repeat(ratio, 1)
        elif name.endswith("relative_attention_bias.weight"):  # [buckets, heads]: the old heads keep their biases
            grown[:, : value.shape[1]] = value
        elif value.dim() == 2:  # embeddings and the tied head [vocab, d_model]
            grown.copy_(value.repeat(1, ratio))
        else:  # RMS norm weights
            grown.copy_(value.repeat(ratio))
            if name == "decoder.final_layer_norm.weight":
                grown /= math.sqrt(ratio)
        if noise and value.dim() == 2 and not name.endswith("relative_attention_bias.weight"):
            grown += noise * grown.std() * torch.randn(grown.shape, generator=generator)
    new.load_state_dict(target)
    return new


def stage_big(args) -> None:
    tokenizer = load_tokenizer(args)
    if args.init_from:
        inherit_history(args.work_dir, args.init_from)
        model = new_model(BIG_SHAPE, args.seed)
        model.load_state_dict(load_weights(args.init_from))
        model.train()
    elif (args.work_dir / "seed.ckpt").exists():
        model = widen(load_trained(args, "seed", SEED_SHAPE, "cpu"), BIG_SHAPE, args.seed, noise=args.widen_noise)
        model.train()
    else:
        model = new_model(BIG_SHAPE, args.seed)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = args.dropout
    train_loop(args, "big", model, args.big_steps, args.lr, cross_entropy, tokenizer, copy_steps=args.copy_steps)


def average_weights(tuned: dict[str, torch.Tensor], start: dict[str, torch.Tensor], weight: float):
    """``weight`` x ``tuned`` + (1 - ``weight``) x ``start``, tensor by tensor (float32). Two models of one shape
    where one was fine-tuned from the other: their average keeps most of what the start knew and most of what the
    fine-tuning added (Wortsman et al. 2022, "Robust fine-tuning of zero-shot models")."""
    if tuned.keys() != start.keys():
        raise ValueError(f"the two state dicts differ in {sorted(tuned.keys() ^ start.keys())[:5]}")
    for key in tuned:
        if tuned[key].shape != start[key].shape:
            raise ValueError(f"{key}: shape {tuple(tuned[key].shape)} against {tuple(start[key].shape)}")
    return {key: weight * tuned[key].float() + (1 - weight) * start[key].float() for key in tuned}


def stage_average(args) -> None:
    """The big checkpoint's weights become ``--average-weight`` of themselves plus the rest of ``--average-with``'s
    (the weights its fine-tuning started from): recorded in ``big_runs.jsonl``, refused on a checkpoint already
    averaged (a rerun would average twice)."""
    if args.average_with is None:
        raise SystemExit("--stage average needs --average-with WEIGHTS (the weights the big run started from)")
    if not 0.0 < args.average_weight < 1.0:
        raise SystemExit(f"--average-weight {args.average_weight}: must lie strictly between 0 and 1")
    path = args.work_dir / "big.ckpt"
    if not path.exists():
        raise SystemExit(f"{path}: no big checkpoint to average (run --stage big first)")
    state = torch.load(path, map_location="cpu")
    if state.get("averaged_with"):
        raise SystemExit(f"{path} is already an average (with {state['averaged_with']}); retrain or restore it")
    averaged = average_weights(state["model"], load_weights(args.average_with), args.average_weight)
    temporary = path.with_suffix(".tmp")
    torch.save(
        {"model": averaged, "optimizer": None, "step": state["step"], "elapsed": state.get("elapsed", 0.0),
         "averaged_with": str(args.average_with), "average_weight": args.average_weight},
        temporary,
    )  # fmt: skip
    temporary.replace(path)
    run = {"averaged_with": str(args.average_with), "average_weight": args.average_weight, "minutes": 0.0}
    with open(args.work_dir / "big_runs.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(run) + "\n")
    print(f"big: {args.average_weight:.0%} of its weights + {1 - args.average_weight:.0%} of {args.average_with}")


# Tied to ``shared.weight`` (T5's one embedding matrix): safetensors exports store it once.
TIED_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight")


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """A state dict from a checkpoint of this recipe (its "model" entry), a bare state dict, or safetensors (an
    export such as the shipped ``big/model.safetensors``, whose tied embedding copies are filled in), as float32."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(path)
        for key in TIED_KEYS:
            state.setdefault(key, state["shared.weight"])
    else:
        state = torch.load(path, map_location="cpu")
        state = state["model"] if "model" in state else state
    return {key: value.float() for key, value in state.items()}


def load_trained(args, name: str, shape: dict, device: str | None = None):
    """The stage's checkpointed model, in eval mode, on ``device`` (default: ``--device``)."""
    model = new_model(shape, args.seed)
    state = torch.load(args.work_dir / f"{name}.ckpt", map_location="cpu")
    model.load_state_dict(state["model"])
    return model.to(device or args.device).eval()


@torch.no_grad()
def cut_decoder(model, decoder_layers: tuple[int, ...], seed: int):
    """A copy of ``model`` whose decoder keeps only ``decoder_layers`` (in order); everything else as it is. The first
    kept layer takes over the relative-position bias, which T5 keeps in decoder layer 0."""
    config = {**model.config.to_dict(), "num_decoder_layers": len(decoder_layers)}
    shape = {key: config[key] for key in SEED_SHAPE}
    cut = new_model(shape, seed)
    source, target = model.state_dict(), cut.state_dict()
    bias = "layer.0.SelfAttention.relative_attention_bias.weight"
    for name in target:
        origin = name
        if name.startswith("decoder.block."):
            index = int(name.split(".")[2])
            origin = name.replace(f"decoder.block.{index}.", f"decoder.block.{decoder_layers[index]}.", 1)
            if name.endswith(bias):
                origin = f"decoder.block.0.{bias}"
        target[name].copy_(source[origin])
    cut.load_state_dict(target)
    return cut


def stage_small(args) -> None:
    tokenizer = load_tokenizer(args)
    teacher = load_trained(args, "big", BIG_SHAPE)
    if args.small_init_from:
        inherit_history(args.work_dir, args.small_init_from)
        student = new_model(SMALL_SHAPE, args.seed + 1)
        student.load_state_dict(load_weights(args.small_init_from))
        student.train()
    elif (args.work_dir / "seed.ckpt").exists():
        seed_model = load_trained(args, "seed", SEED_SHAPE, "cpu")
        student = cut_decoder(seed_model, SMALL_DECODER_LAYERS, args.seed + 1).train()
    else:
        student = new_model(SMALL_SHAPE, args.seed + 1)

    def loss_fn(model, input_ids, mask, labels):
        output = model(input_ids=input_ids, attention_mask=mask, labels=labels)
        with torch.no_grad():
            teacher_logits = teacher(input_ids=input_ids, attention_mask=mask, labels=labels).logits
        keep = labels != -100
        distill = F.kl_div(
            F.log_softmax(output.logits[keep], dim=-1),
            F.log_softmax(teacher_logits[keep], dim=-1),
            log_target=True,
            reduction="batchmean",
        )
        return (1 - args.distill_weight) * output.loss + args.distill_weight * distill

    train_loop(args, "small", student, args.small_steps, args.small_lr, loss_fn, tokenizer)


@torch.inference_mode()
def teacher_forced_agreement(big, small, tokenizer, texts: list[str], batch_size: int = 64) -> float:
    """Share of positions where the small model's argmax equals the big model's greedy next token."""
    agree = total = 0
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(texts[start : start + batch_size], padding=True, return_tensors="pt").to(big.device)
        generated = big.generate(**batch, max_new_tokens=128, do_sample=False)
        decoder_input, targets = generated[:, :-1], generated[:, 1:]
        valid = torch.ones_like(targets, dtype=torch.bool)
        ended = torch.cumsum((targets == tokenizer.eos_token_id).long(), dim=1)
        valid &= (ended - (targets == tokenizer.eos_token_id).long()) == 0  # up to and including the first EOS
        logits = small(**batch, decoder_input_ids=decoder_input).logits
        agree += int(((logits.argmax(-1) == targets) & valid).sum())
        total += int(valid.sum())
    return agree / total


def stage_eval(args) -> dict:
    tokenizer = load_tokenizer(args)
    big = load_trained(args, "big", BIG_SHAPE)
    small = load_trained(args, "small", SMALL_SHAPE)
    _, held_out = split_corpus(args.work_dir)
    pairs, clean = evaluation_sets(held_out, load_typos(args.work_dir), args.seed + 7, args.eval_size)
    noisy = [n for n, _ in pairs]
    references = [r for _, r in pairs]
    started = time.time()
    corrected = correct_texts(big, tokenizer, noisy, steps=correct_steps(args))
    big_seconds = time.time() - started
    unchanged = correct_texts(big, tokenizer, clean, steps=correct_steps(args))
    small_corrected = correct_texts(small, tokenizer, noisy, steps=correct_steps(args))
    params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    metrics = {
        "held_out_sentences": len(held_out),
        "eval_corrupted": len(pairs),
        "eval_clean": len(clean),
        "cer_input": cer(references, noisy),
        "cer_big": cer(references, corrected),
        "cer_small": cer(references, small_corrected),
        "clean_unchanged_big": sum(a == b for a, b in zip(unchanged, clean, strict=True)) / len(clean),
        "words_big": word_outcomes(noisy, references, corrected),
        "agreement_small_with_big": teacher_forced_agreement(big, small, tokenizer, noisy + clean),
        "big_parameters": params(big),
        "small_parameters": params(small),
        "decoder_cost_ratio": decoder_macs_per_token(small.config) / decoder_macs_per_token(big.config),
        "big_correct_seconds": big_seconds,
        "fold_capitals": correct_steps(args).fold_capitals,
        "keep_dictionary_words": correct_steps(args).keep_dictionary_words,
        "examples": [
            {"input": n, "output": c, "reference": r} for (n, r), c in list(zip(pairs, corrected, strict=True))[:12]
        ],
    }
    (args.work_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    print(json.dumps({k: v for k, v in metrics.items() if k != "examples"}, indent=2))
    return metrics


def text_validation_sets(work_dir: Path, typos, seed: int, size: int) -> tuple[list[tuple[str, str]], list[str]]:
    """``size`` held-out sentences of the broader text with 1-3 human-like typos (``noise.HumanNoise``) and
    ``size`` other ones left clean: never trained on, and no sentence of the evaluation sets."""
    _, held_out = split_text(work_dir)
    rng = random.Random(seed)
    shuffled = held_out[:]
    rng.shuffle(shuffled)
    if len(shuffled) < 2 * size:
        raise ValueError(f"{len(shuffled)} held-out sentences of the broader text: too few for 2 x {size}")
    noise = speller_text.MixedNoise(typos, clean_share=0.0, human_share=1.0, initial_share=0.0)
    return [(noise(s, rng), s) for s in shuffled[:size]], shuffled[size : 2 * size]


def stage_text(args) -> None:
    """Snapshots the broader text (``speller_text``) into the work directory; later stages read the snapshot."""
    text = load_text(args.work_dir)
    for source, sentences in text["sentences"].items():
        print(f"{source}: {len(sentences)} sentences from {len(text['packages'][source])} packages")
    training, held_out = split_text(args.work_dir)
    print(f"broader text: {len(training)} training sentences, {len(held_out)} held out -> {args.work_dir / TEXT_FILE}")


def stage_validate(args) -> dict:
    """The big checkpoint's CER and unchanged-clean share on the validation sentences (held out, and outside the
    final evaluation), appended to ``validation.jsonl``: the figures that pick a candidate for the evaluation."""
    tokenizer = load_tokenizer(args)
    big = load_trained(args, "big", BIG_SHAPE)
    step = int(torch.load(args.work_dir / "big.ckpt", map_location="cpu", mmap=True)["step"])  # tensors stay unread
    _, held_out = split_corpus(args.work_dir)
    typos = load_typos(args.work_dir)
    pairs, clean = validation_sets(held_out, typos, args.seed + 7, args.eval_size, args.validation_size)
    scores = correction_scores(big, tokenizer, pairs, clean, steps=correct_steps(args))
    result = {
        "big_step": step,
        "sentences": [len(pairs), len(clean)],
        "cer_input": scores["cer_input"],
        "cer_big": scores["cer_output"],
        "clean_unchanged_big": scores["clean_unchanged"],
        "fold_capitals": correct_steps(args).fold_capitals,
        "keep_dictionary_words": correct_steps(args).keep_dictionary_words,
    }
    if (args.work_dir / TEXT_FILE).exists():  # the broader text's held-out sentences, with human-like noise
        pairs, clean = text_validation_sets(args.work_dir, typos, args.seed + 7, min(args.validation_size, 400))
        scores = correction_scores(big, tokenizer, pairs, clean, steps=correct_steps(args))
        result.update(
            text_sentences=[len(pairs), len(clean)],
            text_cer_input=scores["cer_input"],
            text_cer_big=scores["cer_output"],
            text_clean_unchanged_big=scores["clean_unchanged"],
        )
    with open(args.work_dir / "validation.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(result) + "\n")
    print(json.dumps(result))
    return result


MODEL_CARD = """# seq2spec speller: a T5 spelling corrector and its distilled draft

Trained offline by `recipes/train_speller.py` (seed {seed}). Both models share one SentencePiece
tokenizer and are stored as float16 safetensors (`big/`, `small/`); `seq2spec.default_models.load_speller()`
loads them (as float32 on CPU). `Seq2SeqSpeculator()` / `seq2spec correct` use the big model when no model is
named, proposing by copy of the spell-checked source (the draft is one argument away: `Seq2SeqSpeculator(None, draft)`).

## Data
- Clean text: {corpus} English sentences, deduplicated: WordNet 3.0 usage examples (Debian `wordnet-base`,
  WordNet licence) and the `fortunes`/`fortunes-min` databases (Debian). A stable 5% split by sentence hash
  ({held_out} sentences) is held out and never trained on.
- Extra training text: {glosses} WordNet 3.0 definitions ("a widely used search engine for the web ..."), or, in
  the runs marked "(headwords)", {entries} dictionary entries: a synset's words and its first definition
  ("sweptwing: (of an aircraft) having sweptback wings"), so that every headword, rare and proper ones included,
  appears spelled as the dictionary spells it. Those whose hash falls in the held-out share are left out. A run's
  "glosses" column below says what share of its batches came from them. Their vocabulary is far wider than the
  examples': rare, technical and proper words the model must learn to copy. The held-out figures below are on the
  corpus sentences only.{text_data}
- Corruption, drawn afresh for every training step: a share of the sentences is left clean (the model learns to
  copy; 30% by default, each run's share in the "left clean" column below); the rest get 1-3 misspelled words, 60%
  of them real misspellings from codespell's dictionary (typo -> fix, reversed; CC BY-SA 3.0 data) where the word
  has one, otherwise keyboard-neighbour substitution, deletion, insertion, transposition or doubling of a letter.

## Tokenizer
SentencePiece unigram, {vocab} pieces, byte fallback, trained on the training sentences and one corrupted copy
of each. Chosen over byte-level ByT5 because decoding cost grows with the number of output tokens: subword
pieces give about 4 characters per token, so about 4x fewer decoder steps, while byte fallback still
represents any misspelling.

## Models
| | parameters | encoder / decoder layers | d_model | d_ff | decoder cost per token |
|---|---:|---|---:|---:|---:|
| big | {big_params:.1f}M | {big_layers} | {big_d} | {big_ff} | 1 |
| small (draft) | {small_params:.1f}M | {small_layers} | {small_d} | {small_ff} | {ratio:.3f} |

T5 v1.1 feed-forward (gated GELU) with a tied, scaled output head as in the original T5. Decoder cost is
multiply-adds per decoder step (all layers and the LM head, 24-token source).

How they are made (bf16 autocast, fp32 weights and optimizer): the big model is grown from a narrow seed, because
wide T5s trained from scratch on this data stay for thousands of steps on a "bag of source words" plateau before
they copy in order. A seed with the big model's depth and head size but d_model {seed_d} and {seed_ff} feed-forward
units learns to copy ({seed_copy_steps} clean -> clean steps), then to correct; it is widened to the big shape so
that it computes the same function (each residual dimension repeated {widen_ratio} times, reading weights tiled and
divided by {widen_ratio}, writing weights tiled, extra heads and feed-forward units writing zeros; {widen_noise}
relative noise to break the symmetry) and the big model trains on correction. The small model is the seed cut to
decoder layers 0 and 3 (it already copies), distilled from the big one: {distill_keep:.0%} cross-entropy on the
clean text, {distill:.0%} KL divergence to the big model's next-token distribution on the same (corrupted -> clean)
batches.

## Training
AdamW (betas 0.9, 0.98, weight decay 0.01); the learning rate warms up linearly, then follows a cosine to 10% of its
peak over each run's planned steps. Every run of a stage, in order (a run that starts from another's weights starts a
fresh optimizer and schedule):

{training_runs}

The logs of loss and quick held-out CER are `seed_log.jsonl`, `big_log.jsonl` and `small_log.jsonl`, and these
runs `*_runs.jsonl`, in the work directory; `training_runs.jsonl` next to this card keeps the runs, and a work
directory whose first run starts from these weights (`--init-from`) takes them over.

## Held-out figures ({eval_corrupted} corrupted and {eval_clean} clean held-out sentences{decoded_as})
| | value |
|---|---:|
| CER of the uncorrected input | {cer_input:.4f} |
| CER after the big model's correction | {cer_big:.4f} |
| CER after the small model's correction | {cer_small:.4f} |
| clean sentences returned unchanged (big) | {clean_unchanged_big:.1%} |
| small agrees with big's next token (teacher-forced on big's outputs) | {agreement_small_with_big:.1%} |
{word_table}{evaluations}
## Limits
A small model trained for {total_hours:.1f} h in all on ~47k short sentences of aphorisms and dictionary
examples (and, in the runs that say so, ~110k dictionary definitions and Debian's package descriptions and manual
pages): it fixes common misspellings of common words and copies what it does not know; it is no general grammar
corrector. It exists so that seq2spec works out of the box and so that speed can be measured on a real trained pair.

It trained on sentences of 20 to 140 characters and repeats or drops text when given a longer one, so
`Seq2SeqSpeculator.correct` and `seq2spec correct` hand it longer texts one sentence at a time
(`split_longer_than`, 140 by default for this model). It copies capitalised words it does not know far more
often than it corrects them, so `correct` gives it such a word in lower case when a dictionary word is close and
capitalises its word in that place (`fold_capitals`, on by default for this model); where it still leaves such a
word as a non-word one edit from a dictionary word, `correct` takes the dictionary word if the model scores it within
6.5 nats of its own output, 11 for a sentence's first word (`check_capitals`, on by default for this model). It now
and then garbles a correct word it copies ("Staff" -> "Satuff") or drops one ("and the home" -> "an home"), so
`correct` gives back a dictionary word that the model made into a word no dictionary knows or dropped
(`keep_dictionary_words`, on by default for this model). It learned
mostly American spellings and now and then rewrites a British one it reads ("neighbour's" -> "neighbor's"), so
`correct` keeps the writer's variety of English (`keep_spelling_varieties`, on by default for this model). It reads
a word written several times in a row as a slip and writes it once more or fewer ("wait wait wait" -> "wait wait",
"ha ha" -> "has ha"), so `correct` keeps such runs as written (`keep_repeated_words`, on by default). It reads
chat abbreviations, a lower-case pronoun "i", words of software, words of current English no dictionary knows,
names, letters said long and interjections as typos ("abt" -> "bat", "i went" -> "its went", "async" -> "sync", "vlog"
-> "fog", "Matteo" -> "Matter", "sooo" -> "soon", "Whoa" -> "Who"); `correct` keeps them as written (`protect`).
"""


STARTS = {"seed": "random", "big": "the widened seed", "small": "the seed, decoder cut"}


def training_runs(work_dir: Path) -> tuple[str, float]:
    """The model card's table of training runs (from ``*_runs.jsonl``, else from the logs) and their total hours."""
    lines = [
        "| stage | steps | hardware | batch | peak lr | warm-up | dropout | glosses | left clean | started from "
        "| minutes |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    minutes = 0.0
    for name in ("seed", "big", "small"):
        started = None  # the weights the last run started from (``--init-from``), for a row of averaged weights
        path = work_dir / f"{name}_runs.jsonl"
        if path.exists():
            runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        else:  # a work directory from before runs were recorded: what the log says
            log = work_dir / f"{name}_log.jsonl"
            if not log.exists():
                continue
            last = json.loads(log.read_text(encoding="utf-8").splitlines()[-1])
            runs = [{"steps": [0, last["step"]], "minutes": round(last.get("elapsed_s", 0) / 60, 1)}]
        for run in runs:
            if "averaged_with" in run:
                weight = run["average_weight"]
                start = "the weights it started from" if run["averaged_with"] == started else run["averaged_with"]
                lines.append(
                    f"| {name} | weights averaged | | | | | | | | {weight:.0%} the run above + {1 - weight:.0%} "
                    f"{start} | 0.0 |"
                )
                continue
            started = run.get("init_from")
            first, last = run["steps"]
            planned = run.get("planned_steps", last)
            steps = f"{first}-{last}" + (f" (of {planned} planned: stopped early)" if last < planned else "")
            origin = run.get("init_from") or STARTS[name]
            lines.append(
                f"| {name} | {steps} | {run.get('hardware', '?')} | {run.get('batch_size', '?')} "
                f"| {run.get('peak_lr', '?')} | {run.get('warmup', '?')} | {run.get('dropout', 0.0)} "
                f"| {gloss_column(run)} | {clean_column(run)} | {origin} "
                f"| {run['minutes']} |"
            )
            minutes += run["minutes"]
    return "\n".join(lines), minutes / 60


def gloss_column(run: dict) -> str:
    """A run's share of dictionary batches, and their form when it is not the plain definitions."""
    share = run.get("gloss_share", 0.0)
    form = run.get("gloss_form", "definitions")
    text = run.get("text_share", 0.0)
    return (
        f"{share:.0%}"
        + (f" ({form})" if share > 0 and form != "definitions" else "")
        + (f"; broader text {text:.0%}" if text > 0 else "")
    )


def clean_column(run: dict) -> str:
    """A run's share of sentences left clean, the share of the others given human-like noise (and how much likelier
    a capitalised word took a typo), and whether its pairs were folded as ``correct`` folds them."""
    human = run.get("human_noise_share", 0.0)
    weight = run.get("capitalised_typo_weight", 1.0)
    notes = [f"human-like noise: {human:.0%} of the rest"] if human else []
    notes += [f"capitalised words {weight:g}x as likely to take a typo"] if human and weight != 1.0 else []
    notes += ["capitals folded as `correct` folds them"] if run.get("fold_capitals") else []
    return f"{run.get('clean_share', 0.3):.0%}" + (f" ({'; '.join(notes)})" if notes else "")


def text_data(work_dir: Path) -> str:
    """The model card's line on the broader text, when a run of the work directory trained on it."""
    runs = [
        json.loads(line)
        for name in STARTS
        if (work_dir / f"{name}_runs.jsonl").exists()
        for line in (work_dir / f"{name}_runs.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    if not any(run.get("text_share", 0) > 0 for run in runs) or not (work_dir / TEXT_FILE).exists():
        return ""
    text = load_text(work_dir)["sentences"]
    training, held_out = split_text(work_dir)
    line = (
        f'- Broader text (the runs with a "broader text" share below): {len(text["descriptions"])} sentences of '
        f"Debian bookworm package descriptions (Translation-en; each package's licence) and {len(text['man_pages'])} "
        "of installed manual pages (each package's licence), at most 2,000 per package, made by "
        "`recipes/speller_text.py`; Python's own packages and the out-of-domain evaluation's sources are left out, "
        f'and so is every sentence of both evaluation sets; {len(held_out)} held out by hash. The "left clean" '
        "column says which runs gave a share of the corrupted sentences `recipes/noise.py`'s human-like typos."
    )
    return "\n" + textwrap.fill(line, width=116, subsequent_indent="  ", break_on_hyphens=False)


def word_table(words: dict[str, int] | None) -> str:
    """The model card's word-by-word account of the big model's corrections (empty for older metrics files)."""
    if not words:
        return ""
    misspelled = words["fixed"] + words["left"] + words["changed"]
    correct = words["kept"] + words["broke"]
    return (
        "\nWord by word, on the corrupted sentences whose correction has as many words as the input "
        f"({words['unaligned']} sentences had not and are left out):\n\n"
        "| misspelled words | fixed | left as they were | changed into another wrong word |\n|---:|---:|---:|---:|\n"
        f"| {misspelled} | {words['fixed'] / misspelled:.1%} | {words['left'] / misspelled:.1%} "
        f"| {words['changed'] / misspelled:.1%} |\n\n"
        "| correct words | kept | broken |\n|---:|---:|---:|\n"
        f"| {correct} | {words['kept'] / correct:.1%} | {words['broke'] / correct:.1%} |\n"
    )


def repository_path(path: str) -> str:
    """``path`` relative to the repository when it lies inside it (reports may hold absolute paths)."""
    root = Path(__file__).resolve().parents[1]
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path


def system_name(report: dict, alone: bool) -> str:
    """The model's row name in the card's comparison: which of ``correct``'s steps around the model the report
    took (``eval_spelling.STEP_NAMES``; all are ``correct``'s default for this model)."""
    from eval_spelling import STEP_NAMES

    taken = [name for key, name in STEP_NAMES.items() if report.get(key, False)]
    if len(taken) == len(STEP_NAMES):
        return f"this model (seq2spec, `correct`'s default: {', '.join(taken)})"
    if alone and taken == [STEP_NAMES["protect"]]:  # protection alone is every model's default
        return "this model (seq2spec)"
    if taken:
        return f"this model (seq2spec, {', '.join(taken)} only)"
    return "this model (seq2spec)" if alone else "this model (seq2spec, its output as it is)"


def evaluation_tables(reports: list[Path]) -> str:
    """The model card's comparison with the classical spell checkers: one table per data set of the
    ``recipes/eval_spelling.py`` reports (their ``--out`` JSON), the speculative output's figures (one row per report
    on that set: with and without ``correct``'s steps around the model) beside each peer's."""
    by_data: dict[str, list[dict]] = {}
    for path in reports:
        report = json.loads(path.read_text(encoding="utf-8"))
        by_data.setdefault(repository_path(report["data"]), []).append(report)
    sections = []
    for data, group in by_data.items():
        first = group[0]
        counts = first["speculative"]["typos"]
        rows = [f"| noisy input | {first['source']['cer']:.4f} | | | | |"]
        systems = {}
        for report in group:
            systems[system_name(report, alone=len(group) == 1)] = report["speculative"]
        for report in group:
            systems.update(report.get("peers", {}))
        for name, result in systems.items():
            typos = result["typos"]
            rows.append(
                f"| {name} | {result['cer']:.4f} | {typos['fixed_share']:.1%} | "
                f"{typos['capitalised_fixed_share']:.1%} / {typos['lowercase_fixed_share']:.1%} | "
                f"{typos['clean_unchanged_share']:.1%} | {typos['broken_share']:.2%} |"
            )
        identical = min(report["identical_share"] for report in group)
        sections.append(
            f"`{data}`: {first['pairs']} pairs, {counts['typos']} typos "
            f"({counts['capitalised_typos']} capitalised), {counts['clean_sentences']} clean sentences; "
            "outputs identical to greedy "
            f"{identical:.1%} (batch {first['batch_size']}, float32):\n\n"
            "| system | CER | typos fixed | capitalised / lower-case typos fixed | clean sentences unchanged "
            "| correct words broken |\n|---|---:|---:|---:|---:|---:|\n" + "\n".join(rows) + "\n"
        )
    if not sections:
        return ""
    return (
        "\n## Against classical spell checkers (`recipes/eval_spelling.py`, peers word by word)\n"
        "The in-domain set is held-out corpus sentences; the out-of-domain set is Debian documentation with human-like "
        "typos, from sources kept out of training; the technical and Unicode-rich sets are lines written for the "
        "evaluation (`recipes/data/make_real_text_sets.py`).\n\n" + "\n".join(sections)
    )


def decoded_as(metrics: dict) -> str:
    """How ``--stage eval`` ran the models, for the card's held-out heading: which of ``correct``'s steps it took."""
    names = {"fold_capitals": "capitals folded", "keep_dictionary_words": "dictionary words kept"}
    steps = [name for key, name in names.items() if metrics.get(key)]
    return f"; {' and '.join(steps)}, as `correct` runs the model" if steps else ""


def write_model_card(args, metrics: dict, configs: dict, vocab: int) -> None:
    training, held_out = split_corpus(args.work_dir)
    runs_table, hours = training_runs(args.work_dir)
    card = MODEL_CARD.format(
        seed=args.seed,
        corpus=len(training) + len(held_out),
        held_out=len(held_out),
        glosses=len(training_glosses(args.work_dir)),
        entries=len(training_glosses(args.work_dir, "headwords")),
        vocab=vocab,
        big_params=metrics["big_parameters"] / 1e6,
        small_params=metrics["small_parameters"] / 1e6,
        big_layers=f"{configs['big'].num_layers} / {configs['big'].num_decoder_layers}",
        small_layers=f"{configs['small'].num_layers} / {configs['small'].num_decoder_layers}",
        big_d=configs["big"].d_model,
        small_d=configs["small"].d_model,
        big_ff=configs["big"].d_ff,
        small_ff=configs["small"].d_ff,
        ratio=metrics["decoder_cost_ratio"],
        seed_copy_steps=args.seed_copy_steps,
        seed_d=SEED_SHAPE["d_model"],
        seed_ff=SEED_SHAPE["d_ff"],
        widen_ratio=BIG_SHAPE["d_model"] // SEED_SHAPE["d_model"],
        widen_noise=args.widen_noise,
        distill=args.distill_weight,
        distill_keep=1 - args.distill_weight,
        training_runs=runs_table,
        total_hours=hours,
        word_table=word_table(metrics.get("words_big")),
        text_data=text_data(args.work_dir),
        evaluations=evaluation_tables(args.card_evaluations),
        decoded_as=decoded_as(metrics),
        **{
            key: metrics[key]
            for key in (
                "eval_corrupted",
                "eval_clean",
                "cer_input",
                "cer_big",
                "cer_small",
                "clean_unchanged_big",
                "agreement_small_with_big",
            )
        },
    )
    (args.export_dir / "MODEL_CARD.md").write_text(card, encoding="utf-8")


def stage_export(args) -> None:
    tokenizer = load_tokenizer(args)
    metrics = json.loads((args.work_dir / "metrics.json").read_text())
    configs = {}
    for name, shape in (("big", BIG_SHAPE), ("small", SMALL_SHAPE)):
        model = load_trained(args, name, shape)
        configs[name] = model.config
        target = args.export_dir / name
        model.cpu().half().save_pretrained(target, safe_serialization=True)
        tokenizer.save_pretrained(target)
    write_model_card(args, metrics, configs, len(tokenizer))
    write_history(args.work_dir, args.export_dir)
    public = {key: value for key, value in metrics.items() if key != "examples"}
    (args.export_dir / "metrics.json").write_text(json.dumps(public, indent=2))
    _, held_out = split_corpus(args.work_dir)
    write_heldout_sample(args, held_out)
    print(f"exported to {args.export_dir}")


def write_heldout_sample(args, held_out: list[str]) -> None:
    """The final evaluation's held-out pairs as a TSV (source, reference): corrupted ones, then clean ones.

    Benchmarks and the evaluation recipe read it, so they run without the WordNet and fortunes packages.
    """
    import csv

    pairs, clean = evaluation_sets(held_out, load_typos(args.work_dir), args.seed + 7, args.eval_size)
    args.sample_path.parent.mkdir(parents=True, exist_ok=True)
    with open(args.sample_path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow(["source", "reference"])
        writer.writerows(pairs)
        writer.writerows((sentence, sentence) for sentence in clean)
    print(f"held-out sample: {len(pairs)} corrupted + {len(clean)} clean pairs -> {args.sample_path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--stage",
        choices=["text", "tokenizer", "seed", "big", "average", "small", "validate", "eval", "export", "all"],
        default="all",
    )
    parser.add_argument("--work-dir", type=Path, default=Path("runs/speller"), help="checkpoints, logs, tokenizer")
    parser.add_argument("--export-dir", type=Path, default=Path("seq2spec/assets/speller"))
    parser.add_argument(
        "--sample-path", type=Path, default=Path("recipes/data/spelling_heldout.tsv"), help="held-out pairs (TSV)"
    )
    parser.add_argument(
        "--card-evaluations", type=Path, nargs="*", default=[],
        help="export stage: recipes/eval_spelling.py reports (JSON) of the exported pair, tabled in the model card",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seed-steps", type=int, default=4000, help="training steps of the narrow seed model")
    parser.add_argument("--seed-copy-steps", type=int, default=1500, help="of which the first copy clean -> clean")
    parser.add_argument("--seed-lr", type=float, default=1e-3, help="seed model: peak learning rate")
    parser.add_argument(
        "--widen-noise", type=float, default=0.01, help="relative noise on the seed's weights when the big grows"
    )
    parser.add_argument("--big-steps", type=int, default=3500)
    parser.add_argument(
        "--init-from",
        type=Path,
        help="big stage: start from these big-shape weights (a checkpoint, state dict or model.safetensors) "
        "instead of growing the seed, with a fresh schedule: training continued on another machine",
    )
    parser.add_argument(
        "--average-with",
        type=Path,
        help="average stage: the weights the big run started from (its --init-from), averaged into the big checkpoint",
    )
    parser.add_argument(
        "--average-weight", type=float, default=0.5,
        help="average stage: the big checkpoint's share of the average (the rest: --average-with's)",
    )  # fmt: skip
    parser.add_argument("--small-steps", type=int, default=1500)
    parser.add_argument(
        "--small-init-from",
        type=Path,
        help="small stage: start from these small-shape weights (e.g. a shipped draft's model.safetensors) instead "
        "of cutting the seed, with a fresh schedule: a draft re-distilled from a retrained big model",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--gloss-share", type=float, default=0.5,
        help="share of batches drawn from WordNet's definitions instead of the corpus (0: corpus only)",
    )  # fmt: skip
    parser.add_argument(
        "--gloss-form", choices=sorted(GLOSS_FORMS), default="definitions",
        help="those batches' text: the definitions alone, or entries that start with the synset's headwords "
        "('adust: burned brown by the sun')",
    )  # fmt: skip
    parser.add_argument("--clean-share", type=float, default=0.3, help="training sentences left clean (copy)")
    parser.add_argument(
        "--text-share", type=float, default=0.0,
        help="share of batches drawn from the broader text (Debian package descriptions and manual pages; "
        "snapshot made by --stage text) instead of the corpus or the glosses",
    )  # fmt: skip
    parser.add_argument(
        "--text-max-chars", type=int, default=200, help="the broader text's longest training sentence, characters"
    )
    parser.add_argument(
        "--human-noise-share", type=float, default=0.0,
        help="share of the corrupted training sentences given 1-3 typos by noise.HumanNoise (the rest: the "
        "recipe's codespell and edit noise)",
    )  # fmt: skip
    parser.add_argument(
        "--initial-typo-share", type=float, default=0.2,
        help="of the sentences given human-like noise, the share whose first word gets a typo",
    )  # fmt: skip
    parser.add_argument(
        "--capitalised-typo-weight", type=float, default=1.0,
        help="human-like noise: how much likelier a capitalised word is picked for a typo than a lower-case one",
    )  # fmt: skip
    parser.add_argument(
        "--fold-capitals", action="store_true",
        help="train on pairs as correct folds them (capitalised near-dictionary words in lower case, source and "
        "target), and validate and evaluate through the same folding, as correct runs the model",
    )  # fmt: skip
    parser.add_argument(
        "--keep-dictionary-words", action="store_true",
        help="validate and evaluate as correct runs the shipped speller: a dictionary word the model made into a "
        "non-word kept as written (training pairs are unchanged)",
    )  # fmt: skip
    parser.add_argument(
        "--distill-weight", type=float, default=0.5, help="small model: weight of the KL term (rest: cross-entropy)"
    )
    parser.add_argument(
        "--precision", choices=["bf16", "fp32"], default="bf16", help="bf16: CPU autocast for the training steps"
    )
    parser.add_argument("--lr", type=float, default=2e-4, help="big model: peak learning rate (cosine decay to 10%%)")
    parser.add_argument("--small-lr", type=float, default=1e-3, help="small model: peak learning rate")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument(
        "--copy-steps",
        type=int,
        default=0,
        help="the big model's first steps on clean -> clean only (a copying curriculum; 0: none)",
    )
    parser.add_argument("--eval-every", type=int, default=500, help="quick held-out CER every N steps")
    parser.add_argument("--quick-eval-size", type=int, default=64)
    parser.add_argument("--eval-size", type=int, default=400, help="held-out sentences per final evaluation set")
    parser.add_argument(
        "--validation-size", type=int, default=700, help="validate stage: held-out sentences of each kind"
    )
    parser.add_argument("--save-every", type=int, default=200)
    parser.add_argument("--time-budget-minutes", type=float, default=0, help="stop a stage after this (0: none)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (auto: cuda when there is one)")
    parser.add_argument(
        "--data-workers", type=int, default=0, help="processes making batches ahead of the GPU (0: in the loop)"
    )
    parser.add_argument("--dropout", type=float, default=0.0, help="dropout rate of the big model while it trains")
    args = parser.parse_args()
    for name in ("gloss_share", "clean_share", "text_share", "human_noise_share", "initial_typo_share"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: a share must lie in [0, 1]")
    if args.capitalised_typo_weight <= 0:
        parser.error(f"--capitalised-typo-weight {args.capitalised_typo_weight}: must be positive")
    if args.text_share + args.gloss_share > 1:
        parser.error(f"--text-share {args.text_share} + --gloss-share {args.gloss_share}: more than all batches")
    for name in ("eval_size", "validation_size", "quick_eval_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: needs at least 1 sentence of each kind")
    torch.set_num_threads(args.threads)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: this torch sees no CUDA device")
    args.work_dir.mkdir(parents=True, exist_ok=True)
    stages = ["tokenizer", "seed", "big", "small", "eval", "export"] if args.stage == "all" else [args.stage]
    for stage in stages:
        globals()[f"stage_{stage}"](args)


if __name__ == "__main__":
    main()
