"""Speech-recognition speed on the embedded Whisper base and its distilled draft, against greedy and the peers.

Methods, on the same clips and features, interleaved, median of ``--repeats`` timed runs after an untimed first
pass (warm-up, outputs, decoder calls, statistics):
- ``greedy``: ``base.generate`` (greedy, language and task forced) at the same batch size: the baseline;
- ``hf assisted``: transformers' assisted generation with the same draft (``assistant_model=``; batch size 1 only);
- ``seq2spec per-row`` / ``seq2spec batch-min`` / ``seq2spec per-row fixed``: the distilled draft, per-row
  acceptance or the batch-minimum rollback, adaptive or fixed draft length (``--skip-methods`` leaves some out);
  on a CUDA device also ``seq2spec per-row, no CUDA graphs``: the draft's lean step run eagerly
  (``draft_cuda_graphs=False``), and ``seq2spec per-row, transformers' forward``: the big model's verification
  forwards through transformers instead of seq2spec's bit-exact mirror (``exact_big_forward=False``);
- ``faster-whisper int8`` / ``float32``: CTranslate2 greedy (beam 1, no VAD, no temperature fallback, no
  conditioning on previous text) on the same base weights, file by file, when ``faster-whisper`` is installed;
- ``hf pipeline, chunked``: long form only, transformers' speech-recognition pipeline on the same model with its
  chunked batching (``--pipeline-batch-size`` 30 s windows per batch): a different output, so the long-form rows
  carry each method's WER against the file's reference (``references.tsv`` beside it) when there is one.
With ``--openai-settings`` every method decodes with openai-whisper's transcription settings instead: temperature
fallback with its thresholds and conditioning on previous text (Whisper's generate arguments; faster-whisper's
defaults). A window that falls back is sampled, so outputs may then differ between methods. ``--word-timestamps``
adds word-level timestamps to every method (``return_token_timestamps``; faster-whisper's ``word_timestamps``).
Short clips: recipes/data/asr_samples (12 TTS clips) and the 5 librivox clips of pocketsphinx-testdata when
installed, repeated to fill the largest batch. Long form: recipes/data/asr_samples/long_form.wav (about 90 s),
decoded by Whisper's sequential timestamp-driven windowing. seq2spec's tokens are compared with greedy's, tensor
for tensor; faster-whisper's text with greedy's text.

    python benchmarks/bench_asr.py                        # batch sizes 1, 4, 16, 64 and long form
    python benchmarks/bench_asr.py --batch-sizes 1 8 --repeats 2
    python benchmarks/bench_asr.py --device cuda --dtype float16
    python benchmarks/bench_asr.py --dtype int8 --batch-sizes 1 8 --name asr_cpu_int8   # the int8 mode
    python benchmarks/bench_asr.py --batch-sizes --long-form-file other.wav --name asr_cpu_other   # long form only
    python benchmarks/bench_asr.py --batch-sizes 8 --openai-settings --name asr_cpu_openai_settings
    python benchmarks/bench_asr.py --batch-sizes --openai-settings --word-timestamps --name asr_cpu_openai_words
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
import transformers

from seq2spec import Seq2SeqSpeculator, SpeculationStats, WhisperDecoding
from seq2spec.default_models import cache_dir, load_whisper_base_pair, whisper_base_sources
from seq2spec.int8 import float_dtype, is_int8
from seq2spec.memory import retain_freed_memory
from seq2spec.whisper.audio import load_audio
from seq2spec.whisper.draft import load_whisper_draft, output_token_ids

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import DecoderCallCounter, processor_name  # noqa: E402
from bench_spelling import DTYPES, PEERS, Row, markdown, plot, record_peer_failure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "recipes" / "data" / "asr_samples"
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
LANGUAGE = {"language": "en", "task": "transcribe"}


def short_clips() -> list:
    paths = sorted(p for p in SAMPLES.glob("*.wav") if p.name != "long_form.wav") + sorted(LIBRIVOX.glob("*.wav"))
    return [load_audio(p) for p in paths]


def ct2_base_dir() -> Path:
    """The embedded base in CTranslate2 layout (the wheel's split model.bin joined once), for faster-whisper."""
    target = cache_dir() / "whisper-base-ct2"
    if (target / "model.bin").is_file():
        return target
    source, parts = whisper_base_sources()
    target.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt", "preprocessor_config.json"):
        if (source / name).is_file():
            shutil.copy(source / name, target / name)
    with open(target / "model.bin.tmp", "wb") as sink:
        for part in parts:
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, sink)
    (target / "model.bin.tmp").replace(target / "model.bin")
    return target


def _faster_whisper_worker(requests, replies, threads: int, settings: dict, word_timestamps: bool) -> None:
    """A child process: both faster-whisper models, transcribing the clips each request names and timing itself."""
    from faster_whisper import WhisperModel

    models = {
        compute_type: WhisperModel(str(ct2_base_dir()), device="cpu", compute_type=compute_type, cpu_threads=threads)
        for compute_type in ("int8", "float32")
    }
    for compute_type, clips in iter(requests.get, None):
        start = time.perf_counter()
        texts = []
        for clip in clips:
            segments, _ = models[compute_type].transcribe(
                clip,
                beam_size=1,
                best_of=1,
                vad_filter=False,
                without_timestamps=len(clip) <= 30 * 16000 and not word_timestamps,
                word_timestamps=word_timestamps,
                **settings,
                **LANGUAGE,
            )
            texts.append("".join(s.text for s in segments).strip())
        replies.put((texts, time.perf_counter() - start))


class PeerRun:
    """One faster-whisper model of the child process as a method: ``run(clips)`` returns the texts; ``seconds``
    is the time the child took for them."""

    def __init__(self, peer: FasterWhisper, compute_type: str) -> None:
        self.peer, self.compute_type, self.seconds = peer, compute_type, 0.0

    def __call__(self, clips: list) -> list[str]:
        texts = self.peer.run(self.compute_type, clips)
        self.seconds = self.peer.seconds
        return texts


class FasterWhisper:
    """faster-whisper (CTranslate2) in a child process of its own.

    In one process with PyTorch, CTranslate2's OpenMP runtime (a second copy of libgomp) slowed every later PyTorch
    run on a two-core CPU by up to 60%, so the peer runs apart; ``seconds`` is the time of its last call measured
    in the child, without the transfer of clips and texts.
    """

    def __init__(self, threads: int, settings: dict, word_timestamps: bool) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.requests, self.replies = context.Queue(), context.Queue()
        arguments = (self.requests, self.replies, threads, settings, word_timestamps)
        self.process = context.Process(target=_faster_whisper_worker, args=arguments, daemon=True)
        self.process.start()
        self.seconds = 0.0
        atexit.register(self.close)

    def run(self, compute_type: str, clips: list) -> list[str]:
        self.requests.put((compute_type, clips))
        texts, self.seconds = self.replies.get()
        return texts

    def close(self) -> None:
        if self.process.is_alive():
            self.requests.put(None)
            self.process.join(30)
        for queue in (self.requests, self.replies):
            queue.close()
            queue.join_thread()


def faster_whisper_methods(
    threads: int, openai_settings: bool = False, word_timestamps: bool = False
) -> dict[str, Callable]:
    """``{"faster-whisper int8": run, "faster-whisper float32": run}``, each a ``PeerRun`` of one child process."""
    try:
        import faster_whisper  # noqa: F401 - only whether it is installed
    except ImportError:
        print("faster-whisper is not installed: its rows are skipped (pip install faster-whisper)")
        return {}
    # openai-whisper's settings are faster-whisper's defaults; otherwise plain greedy decoding
    settings = {} if openai_settings else {"temperature": 0.0, "condition_on_previous_text": False}
    peer = FasterWhisper(threads, settings, word_timestamps)
    methods = {}
    for compute_type in ("int8", "float32"):
        run = PeerRun(peer, compute_type)
        methods[f"faster-whisper {compute_type}"] = run
    return methods


class ChunkedPipeline:
    """transformers' speech-recognition pipeline on the same model, with its chunked batching: the audio cut into
    30 s windows that overlap by 5 s, ``batch_size`` windows decoded in one batched greedy ``generate``, the texts
    merged at the overlaps. A different output from Whisper's sequential long-form decoding (the one greedy and
    seq2spec share), so its WER stands beside its time. ``seconds``: its last call, device synchronised."""

    def __init__(self, big, processor, batch_size: int) -> None:
        from transformers import pipeline

        self.pipe = pipeline(
            "automatic-speech-recognition",
            model=big,
            tokenizer=processor.tokenizer,
            feature_extractor=processor.feature_extractor,
            chunk_length_s=30,
            batch_size=batch_size,
            device=big.device,
        )
        self.seconds = 0.0

    def __call__(self, clips: list) -> list[str]:
        synchronize = torch.cuda.synchronize if self.pipe.device.type == "cuda" else lambda: None
        synchronize()
        start = time.perf_counter()
        outputs = self.pipe([clip.copy() for clip in clips], generate_kwargs=dict(LANGUAGE))
        synchronize()
        self.seconds = time.perf_counter() - start
        return [output["text"].strip() for output in outputs]


def reference_text(path: Path) -> str | None:
    """The transcript of ``path`` in the ``references.tsv`` beside it (``file<TAB>text``), if there is one."""
    table = path.parent / "references.tsv"
    if not table.is_file():
        return None
    for line in table.read_text(encoding="utf-8").splitlines()[1:]:
        name, _, text = line.partition("\t")
        if name == path.name:
            return text
    return None


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER after Whisper's English text normalisation (jiwer)."""
    import jiwer
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    normalise = EnglishTextNormalizer({})
    return jiwer.wer(" ".join(normalise(reference).split()), " ".join(normalise(hypothesis).split()))


def bench(args, failures: dict[str, str]) -> list[Row]:
    """Rows of the table; a peer that raises is left out of that case and its error kept in ``failures``."""
    device = torch.device(args.device)
    big, draft, processor = load_whisper_base_pair(device=device, dtype=DTYPES[args.dtype], draft_dir=args.draft)
    full_vocabulary_draft = None
    if output_token_ids(draft) is not None and args.full_vocabulary_variant and not is_int8(big):
        full_vocabulary_draft = load_whisper_draft(big, args.draft, full_vocabulary=True)
    counter = DecoderCallCounter(big)
    tokenizer = processor.tokenizer
    clips = short_clips()
    peers = (
        faster_whisper_methods(args.threads, args.openai_settings, args.word_timestamps)
        if args.device == "cpu" and not args.no_peers
        else {}
    )
    cases = [(bs, False) for bs in args.batch_sizes] + ([(1, True)] if args.long_form else [])
    decoding = WhisperDecoding(temperature_fallback=True, condition_on_previous_text=True)
    openai_settings = decoding.generate_arguments(processor) if args.openai_settings else {}
    long_form_reference = reference_text(args.long_form_file) if args.long_form else None
    rows: list[Row] = []
    for batch_size, long_form in cases:
        if long_form:
            audio = [load_audio(args.long_form_file)]
            label = "long form"
        else:
            count = max(batch_size * max(1, args.batches), args.min_clips if batch_size == 1 else 0)
            audio = [clips[i % len(clips)] for i in range(count)]
            audio.sort(key=len)
            label = str(batch_size)
        batches = []
        for start in range(0, len(audio), batch_size):
            chunk = audio[start : start + batch_size]
            options = {"truncation": False, "padding": "longest", "return_attention_mask": True} if long_form else {}
            features = processor.feature_extractor(chunk, sampling_rate=16000, return_tensors="pt", **options)
            mask = features.get("attention_mask") if long_form else None
            inputs = features["input_features"].to(device, float_dtype(DTYPES[args.dtype]))
            batches.append((inputs, None if mask is None else mask.to(device), chunk))
        extra = {"return_timestamps": True} if long_form else {}
        extra.update(openai_settings)
        if args.word_timestamps:
            extra["return_token_timestamps"] = True
        sampling = {"seed": 0} if "temperature" in openai_settings else {}

        def greedy(features, mask, extra=extra):
            return big.generate(features, attention_mask=mask, **LANGUAGE, **extra), None

        methods: dict[str, Callable] = {"greedy": greedy}
        if batch_size == 1 and not long_form and not openai_settings:

            def assisted(features, mask):
                return big.generate(features, attention_mask=mask, assistant_model=draft, **LANGUAGE), None

            methods["hf assisted"] = assisted
        # unset: the shipped draft's tuned options apply, as for a user of load_whisper_base_pair()
        confidence = {} if args.min_draft_confidence is None else {"min_draft_confidence": args.min_draft_confidence}
        variants = {
            "seq2spec per-row": Seq2SeqSpeculator(big, draft, processor, **confidence),
            "seq2spec batch-min": Seq2SeqSpeculator(big, draft, processor, acceptance="batch-min", **confidence),
            "seq2spec per-row fixed": Seq2SeqSpeculator(big, draft, processor, adaptive=False, **confidence),
        }
        if device.type == "cuda":  # what the draft's CUDA graphs save
            variants["seq2spec per-row, no CUDA graphs"] = Seq2SeqSpeculator(
                big, draft, processor, draft_cuda_graphs=False, **confidence
            )
            # what the bit-exact mirror of the big model's verification forward saves
            # (seq2spec.decoding.fast.exact_whisper)
            variants["seq2spec per-row, transformers' forward"] = Seq2SeqSpeculator(
                big, draft, processor, exact_big_forward=False, **confidence
            )
        if full_vocabulary_draft is not None:
            variants["seq2spec per-row, draft scoring all tokens"] = Seq2SeqSpeculator(
                big, full_vocabulary_draft, processor, **confidence
            )
        for name in args.skip_methods:
            variants.pop(name, None)
        for name, speculator in variants.items():

            def run(features, mask, s=speculator, extra=extra, sampling=sampling):
                output = s.generate(input_features=features, attention_mask=mask, **LANGUAGE, **extra, **sampling)
                return output, s.last_stats

            methods[name] = run
        case_peers = dict(peers)
        if long_form and not openai_settings and not args.word_timestamps and args.pipeline_batch_size > 0:
            pipeline_name = f"hf pipeline, chunked (batch {args.pipeline_batch_size})"
            case_peers[pipeline_name] = ChunkedPipeline(big, processor, args.pipeline_batch_size)
        for name, peer in case_peers.items():
            methods[name] = peer

        def call(name, method, batch, case_peers=case_peers):
            features, mask, chunk = batch
            return method(chunk) if name in case_peers else method(features, mask)

        # first pass, untimed (it is also the warm-up): outputs, decoder calls, statistics, memory
        passes: dict[str, tuple] = {}
        reference, reference_texts = None, None
        for name, method in list(methods.items()):
            counter.calls = 0
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            outputs, total = [], SpeculationStats()
            try:
                for batch in batches:
                    result = call(name, method, batch)
                    if name in case_peers:
                        outputs.append(result)
                        continue
                    output, stats = result
                    outputs.append(output["sequences"] if args.word_timestamps else output)
                    if stats is not None:
                        total.merge(stats)
            except Exception as error:  # another project's method failing here is a result, not a crash
                if name not in PEERS and name not in case_peers:
                    raise
                record_peer_failure(failures, f"{name}, batch {label}", error)
                del methods[name]
                continue
            peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
            if reference is None:
                reference = outputs
                decoded = [t for out in outputs for t in tokenizer.batch_decode(out, skip_special_tokens=True)]
                reference_texts = [t.strip() for t in decoded]
            if name in case_peers:
                texts = [t for out in outputs for t in out]
                identical = texts == reference_texts
                calls = float("nan")
            else:
                pairs = zip(outputs, reference, strict=True)
                identical = all(a.shape == b.shape and torch.equal(a, b) for a, b in pairs)
                texts = [t.strip() for out in outputs for t in tokenizer.batch_decode(out, skip_special_tokens=True)]
                calls = counter.calls
            wer = word_error_rate(long_form_reference, texts[0]) if long_form and long_form_reference else None
            passes[name] = (identical, calls, total, peak, wer)

        times: dict[str, list[float]] = {name: [] for name in methods}
        for _ in range(args.repeats):
            for name, method in methods.items():
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start, peer_seconds = time.perf_counter(), 0.0
                for batch in batches:
                    call(name, method, batch)
                    peer_seconds += getattr(method, "seconds", 0.0)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                times[name].append(peer_seconds if name in case_peers else time.perf_counter() - start)
        seconds = {name: statistics.median(values) for name, values in times.items()}

        eos = big.generation_config.eos_token_id
        tokens = sum(int((out != eos).sum()) for out in reference)
        for name in methods:
            identical, calls, total, peak, wer = passes[name]
            rows.append(
                Row(
                    batch_size=batch_size if not long_form else -1,
                    method=name,
                    seconds=seconds[name],
                    speedup=seconds["greedy"] / seconds[name],
                    tokens=tokens,
                    tokens_per_second=tokens / seconds[name],
                    big_forwards_per_token=calls / tokens,
                    tokens_per_big_row_forward=total.tokens_per_big_forward if total.big_row_forwards else 1.0,
                    acceptance_rate=total.acceptance_rate,
                    peak_memory_mb=peak,
                    identical_to_greedy=identical,
                    accepted_length_histogram=list(total.accepted_length_histogram),
                    wer=wer,
                )
            )
            row = rows[-1]
            print(
                f"{label:>9} ({len(audio)} clips) {name:24} {row.seconds:7.2f}s x{row.speedup:5.2f} "
                f"tokens/row-forward={row.tokens_per_big_row_forward:.2f} accept={row.acceptance_rate:.2f} "
                f"identical={identical}",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", nargs="*", type=int, default=[1, 4, 16, 64])
    parser.add_argument(
        "--long-form-file",
        type=Path,
        default=SAMPLES / "long_form.wav",
        help="the long-form audio (default: the recipes' sample)",
    )
    parser.add_argument("--batches", type=int, default=1, help="batches per batch size (clips repeat to fill them)")
    parser.add_argument("--min-clips", type=int, default=8, help="clips at batch size 1")
    parser.add_argument("--no-long-form", dest="long_form", action="store_false", help="skip the long-form file")
    parser.add_argument("--no-peers", action="store_true", help="skip faster-whisper")
    parser.add_argument(
        "--pipeline-batch-size", type=int, default=16,
        help="long form: transformers' chunked pipeline as a peer, this many 30 s windows per batch (0: skip it)",
    )  # fmt: skip
    parser.add_argument(
        "--openai-settings",
        action="store_true",
        help="decode with openai-whisper's transcription settings, greedy and seq2spec alike: temperature fallback "
        "(0.0-1.0 by 0.2; compression ratio 2.4, log-prob -1.0, no-speech 0.6) and conditioning on previous text "
        "(faster-whisper with the same settings)",
    )
    parser.add_argument(
        "--min-draft-confidence", type=float, help="seq2spec's min_draft_confidence (default: the draft's tuned value)"
    )
    parser.add_argument(
        "--no-full-vocabulary-variant",
        dest="full_vocabulary_variant",
        action="store_false",
        help="skip the run with the draft scoring all 51,865 tokens instead of its output vocabulary",
    )
    parser.add_argument(
        "--word-timestamps",
        action="store_true",
        help="every method also times each word (Whisper's return_token_timestamps, faster-whisper's word_timestamps)",
    )
    parser.add_argument(
        "--skip-methods",
        nargs="*",
        default=[],
        metavar="NAME",
        help='seq2spec variants to leave out, e.g. "seq2spec batch-min"',
    )
    parser.add_argument("--draft", type=Path, help="a saved Whisper draft folder (default: the shipped draft)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", help="file stem of the results (default asr_cpu or asr_cuda)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    retain_freed_memory()  # as the commands do: no page faults on buffers reused every call
    if args.device == "cpu":
        machine = f"CPU {processor_name()}, {args.threads} threads, torch {torch.__version__}, {args.dtype}"
    else:
        machine = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, {args.dtype}"
    machine += f", transformers {transformers.__version__}"
    failures: dict[str, str] = {}
    rows = bench(args, failures)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / (args.name or f"asr_{'cpu' if args.device == 'cpu' else 'cuda'}")
    record = {
        "machine": machine,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "rows": [asdict(r) for r in rows],
        "failures": failures,
    }
    Path(f"{stem}.json").write_text(json.dumps(record, indent=2))
    confidence = "the draft's tuned value" if args.min_draft_confidence is None else args.min_draft_confidence
    settings = f"; seq2spec min_draft_confidence {confidence}"
    title = machine + settings + f"; batch -1 = the long-form file ({args.long_form_file.name})"
    table = markdown(rows, title, failures).replace("| -1 |", "| long form |")
    Path(f"{stem}.md").write_text(table)
    if any(r.batch_size > 0 for r in rows):
        plot([r for r in rows if r.batch_size > 0], stem, title="Whisper base + draft")
    print()
    print(table)
    if not all(r.identical_to_greedy for r in rows if not r.method.startswith(("faster-whisper", "hf pipeline"))):
        sys.exit("some seq2spec outputs differ from greedy")


if __name__ == "__main__":
    main()
