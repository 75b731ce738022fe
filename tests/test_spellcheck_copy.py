"""spellcheck_copy: input copy from a classically spell-checked source. The spell check only changes what is
proposed: outputs stay the big model's greedy ones whatever it suggests, and on misspelled text its copies are kept
more often than copies of the raw source."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_same, greedy

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.toys import random_sources
from seq2spec.decoding.proposal import DecodingBatch
from seq2spec.default_models import SPELLER_DIR, load_speller
from seq2spec.drafts.input_copy import copy_sources
from seq2spec.spelling.classical import SpellCheckedSource, correct_text, shared_symspell_corrector

needs_weights = pytest.mark.skipif(not (SPELLER_DIR / "big").is_dir(), reason="needs the shipped speller")
MISSPELLED = [
    "Thsi sentense has a fwe erors in it.",
    "She recieved a leter from her freind yesterday.",
    "The wether is nice today, and the PARK is ful.",
    "Nothing is wrong with this sentence.",
    "Teh comittee will meet on Tuesday to discus the budjet.",
]


def test_the_spell_check_keeps_case_punctuation_and_unknown_tokens():
    correct_word = shared_symspell_corrector()
    assert correct_text("Teh cat, (recieved) a LETTR.", correct_word) == "The cat, (received) a LETTER."
    assert correct_text("AppArmor x86_64  gzip's", correct_word) == "AppArmor x86_64  gzip's"
    assert shared_symspell_corrector() is correct_word  # the dictionary is loaded once


@pytest.fixture(scope="module")
def speller():
    return load_speller()


@needs_weights
def test_spell_checked_sources_are_the_corrected_texts_ids(speller):
    _, _, tokenizer = speller
    ids = [tokenizer(text)["input_ids"] for text in ("Teh cat sat.", "Nothing is wrong here.")]
    rewritten = SpellCheckedSource(tokenizer)(ids)
    assert rewritten[0] == tokenizer("The cat sat.")["input_ids"]
    assert rewritten[1] is ids[1]  # a text the check leaves alone keeps its own ids


@needs_weights
@pytest.mark.parametrize("batch_size", [1, 5])
def test_spellcheck_copy_equals_greedy_and_keeps_more_copies(speller, batch_size):
    big, small, tokenizer = speller
    # proposals never cut by timing (``fit_copy_width``): the comparison is of what each copy keeps
    plain = Seq2SeqSpeculator(big, "input-copy", tokenizer, fit_copy_width=False)
    checked = Seq2SeqSpeculator(big, "input-copy", tokenizer, spellcheck_copy=True, fit_copy_width=False)
    with_draft = Seq2SeqSpeculator(big, small, tokenizer, input_copy=True, spellcheck_copy=True)
    kept = {}
    for name, speculator in (("plain", plain), ("checked", checked), ("with draft", with_draft)):
        proposed = accepted = 0
        for start in range(0, len(MISSPELLED), batch_size):
            batch = tokenizer(MISSPELLED[start : start + batch_size], return_tensors="pt", padding=True)
            expected = greedy(big, batch["input_ids"], batch["attention_mask"], max_new_tokens=64)
            assert_same(speculator.generate(**batch, max_new_tokens=64), expected)
            proposed += speculator.last_stats.proposed_copy_tokens
            accepted += speculator.last_stats.accepted_copy_tokens
        kept[name] = accepted / proposed
    assert kept["checked"] > kept["plain"]


def test_any_rewrite_leaves_the_output_greedy(toy_models, monkeypatch):
    """The guarantee does not rest on the spell check: a rewrite returning other tokens altogether changes nothing."""
    big = toy_models["t5-v1_1"]["big"]
    ids, mask = random_sources(6, seed=31)
    expected = greedy(big, ids, mask, max_new_tokens=24)
    monkeypatch.setattr(SpellCheckedSource, "__call__", lambda self, sources: [row[::-1] for row in sources])
    speculator = Seq2SeqSpeculator(big, "input-copy", tokenizer=object(), spellcheck_copy=True)
    assert_same(speculator.generate(ids, mask, max_new_tokens=24), expected)
    assert speculator.last_stats.proposed_copy_tokens > 0


def test_spellcheck_copy_needs_input_copy_and_a_row_per_source(toy_models):
    big, draft = toy_models["t5-v1_1"]["big"], toy_models["t5-v1_1"]["perturbed"]
    with pytest.raises(ValueError, match="input copy"):
        Seq2SeqSpeculator(big, draft, spellcheck_copy=True)
    ids, mask = random_sources(3, seed=2)
    batch = DecodingBatch(
        encoder_inputs=ids,
        attention_mask=mask,
        encoder_hidden_states=torch.zeros(3, ids.shape[1], 4),
        prompt=torch.zeros(3, 1, dtype=torch.long),
        eos_token_ids=(1,),
        pad_token_id=0,
    )
    with pytest.raises(ValueError, match="2 rows for 3"):
        copy_sources(batch, lambda sources: sources[:2])
