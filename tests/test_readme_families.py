"""README's families section: its table names every encoder-decoder family transformers maps (the refused ones as
refused), and its NLLB translation example runs as printed, its tokens equal to the big model's own ``generate``.

The example loads models by hub name; here they are tiny models of NLLB's architecture (M2M100) and a tokenizer of
NLLB's class, saved where the hub's cache would hold them, read with the hub switched off."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from family_models import FamilyCase, encoder_decoder_cases, perturbed, varied_model

from seq2spec.decoding.families import REFUSED

README = Path(__file__).resolve().parents[1] / "README.md"
BIG, DRAFT = "facebook/nllb-200-3.3B", "facebook/nllb-200-distilled-600M"


def _families_table() -> list[str]:
    section = README.read_text(encoding="utf-8").split("## Families", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_table_names_every_family_and_says_which_are_refused():
    rows = _families_table()
    named = {name: row for row in rows for name in re.findall(r"`([a-z0-9_-]+)`", row.split("|")[1])}
    for case in encoder_decoder_cases():
        assert case.model_type in named, f"README's families table lacks {case.model_type}"
        refused = "refused" in named[case.model_type]
        assert refused == (case.model_type in REFUSED), case.model_type


def _nllb_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import NllbTokenizer

    sentences = ["The weather is fine today.", "Where is the station?", "Le temps est beau.", "Où est la gare ?"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]  # NLLB's ids 0-3
    bpe.train_from_iterator(sentences * 10, trainers.BpeTrainer(vocab_size=48, special_tokens=specials))
    state = json.loads(bpe.to_str())
    merges = [tuple(merge) for merge in state["model"]["merges"]]
    tokenizer = NllbTokenizer(vocab=state["model"]["vocab"], merges=merges, src_lang="eng_Latn")
    tokenizer.save_pretrained(folder)


def _hub_cache(root: Path) -> Path:
    """Tiny stand-ins for the example's two models, laid out as the hub's cache holds downloaded models."""
    big, _ = varied_model(FamilyCase("m2m_100", speech=False))
    cache = root / "hub"
    for name, model in ((BIG, big), (DRAFT, perturbed(big))):
        repository = cache / f"models--{name.replace('/', '--')}"
        snapshot = repository / "snapshots" / ("0" * 40)
        model.save_pretrained(snapshot)
        _nllb_tokenizer(snapshot)
        (repository / "refs").mkdir(parents=True)
        (repository / "refs" / "main").write_text("0" * 40)
    return cache


def test_the_translation_example_runs_as_printed_and_equals_generate(tmp_path):
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- translation-example -->\n```python\n(.*?)```", text, re.S)
    assert block, "README.md lost its translation example"
    check = f"""
import torch
from transformers import AutoModelForSeq2SeqLM
big = AutoModelForSeq2SeqLM.from_pretrained({BIG!r})
assert len(tokenizer) <= big.config.vocab_size
expected = big.generate(**batch, forced_bos_token_id=french, max_new_tokens=64, do_sample=False, num_beams=1)
assert torch.equal(tokens, expected), (tokens, expected)
assert (tokens[:, 1] == french).all()
print("EQUAL", len(set(map(tuple, tokens.tolist()))))
"""
    environment = {"HF_HUB_CACHE": str(_hub_cache(tmp_path)), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    finished = subprocess.run(
        [sys.executable, "-c", block.group(1) + check],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "EQUAL 2" in finished.stdout  # both sentences translated, to different token sequences
