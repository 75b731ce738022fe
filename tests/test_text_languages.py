"""``correct`` around a model of another language: the English rules of protection stay off for its texts
(``SpellingSettings.language``), and a byte-level tokenizer reads accented letters as written."""

from __future__ import annotations

import argparse

import pytest
from conftest import greedy
from transformers import AutoTokenizer, ByT5Tokenizer

from seq2spec import Seq2SeqSpeculator
from seq2spec.commands.flags import add_spelling_flags, spelling_changes
from seq2spec.default_models import SPELLER_DIR, SPELLER_SETTINGS
from seq2spec.spelling.decode import TextDecoder
from seq2spec.spelling.languages import not_english
from seq2spec.spelling.pieces import join_pieces, split_text
from seq2spec.spelling.pipeline import SpellingPipeline
from seq2spec.spelling.protection import ENGLISH_RULES, Kind, Layout, RuleSet, TokenizerWriting, rule_names
from seq2spec.spelling.protection.word_rules import LONGEST_WORD
from seq2spec.spelling.protection.writing import barely_written
from seq2spec.spelling.settings import SpellingSettings

# sentences with typos in the languages users' own correctors speak
OTHER_LANGUAGES = [
    "Gestern habe ich meinen Freund im Kranknhaus besucht, er hatte eine schwere Operaton.",
    "Die Kinder spilen im Garten und die Mutter kocht das Mitagessen.",
    "Вчера я ходил в магозин и купил хлеб, малоко и сыр.",
    "Mañana vamos a la playa con mis amigos si no llueve mucho.",
    "Je suis allé au marché avec ma mère pour acheter des pommes.",
    "Wczoraj poszedłem do sklepu i kupiłem chleb oraz mleko.",
]
ENGLISH = ["Im not sure, dont ask Matteo about it.", "thx, ill be there soon"]


def reads(settings: SpellingSettings, texts: list[str], tokenizer) -> list[str]:
    """What the model reads of ``texts`` under ``settings`` (its output: what it read)."""
    seen: list[str] = []

    def decode(pieces: list[str]) -> list[str]:
        seen.extend(pieces)
        return list(pieces)

    SpellingPipeline(settings, decode, tokenizer=tokenizer)(texts)
    return seen


def test_a_byte_level_tokenizer_writes_accented_letters():
    # ByT5's vocabulary lists each byte as a Latin-1 character; it writes "é" as two bytes, never as that piece
    tokenizer = ByT5Tokenizer()
    assert barely_written(tokenizer) == frozenset()
    text = "Je suis allé au marché avec ma mère, señor Müller."
    layout = Layout.of(text, TokenizerWriting(tokenizer), rules=RuleSet(ENGLISH_RULES))
    assert layout.model_text == text
    assert all(word.kind is Kind.FREE for word in layout.words)


def test_a_vocabulary_of_pieces_keeps_its_rare_character():
    if not (SPELLER_DIR / "big").is_dir():
        pytest.skip("the speller weights are not shipped")
    assert barely_written(AutoTokenizer.from_pretrained(SPELLER_DIR / "big")) == frozenset({"í"})


def test_a_model_of_another_language_reads_its_texts_as_written():
    tokenizer = ByT5Tokenizer()
    texts = OTHER_LANGUAGES + ENGLISH
    # by default each text is told apart: English rules for English text only
    told = reads(SpellingSettings(), texts, tokenizer)
    assert told[: len(OTHER_LANGUAGES)] == OTHER_LANGUAGES
    assert told[len(OTHER_LANGUAGES) :] == ["I'm not sure, don't ask Matteo about it.", "thx, ill be there soon"]
    # German said: no English rule for any text, English contractions read as written
    assert reads(SpellingSettings(language="de"), texts, tokenizer) == texts
    # English said: the German "im" read as the English "I'm"
    english = reads(SpellingSettings(language="en"), OTHER_LANGUAGES[:2], tokenizer)
    assert english == [text.replace(" im ", " I'm ") for text in OTHER_LANGUAGES[:2]]


def test_a_sentence_of_a_script_written_without_spaces_is_read_whole():
    tokenizer = ByT5Tokenizer()
    texts = [
        "我今天去了商店，买了面包和牛奶，然后回家做晚饭。" * 3,
        "今日は天気がいいので、公園に散歩に行きました。" * 3,
        "ฉันไปตลาดเมื่อวานนี้และซื้อผลไม้หลายอย่าง" * 2,
    ]
    assert all(len(text) > LONGEST_WORD for text in texts)
    assert reads(SpellingSettings(), texts, tokenizer) == texts
    # a string of data is still no word to read
    noise = "a" * (LONGEST_WORD + 1)
    assert reads(SpellingSettings(), [f"Thsi is {noise} here"], tokenizer) == ["Thsi is here"]


def test_the_english_rules_keep_names_only_in_english():
    tokenizer = ByT5Tokenizer()
    writing = TokenizerWriting(tokenizer)
    text = "Die Kinder spilen im Garten und die Mutter kocht das Mitagessen."
    kept = {word.text for word in Layout.of(text, writing).words if word.kind is Kind.KEPT}
    assert "Garten" in kept  # a capitalised word within an English sentence is taken for a name
    other = Layout.of(text, writing, rules=RuleSet(ENGLISH_RULES))
    assert all(word.kind is Kind.FREE for word in other.words)
    assert ENGLISH_RULES <= set(rule_names())
    # the contraction reading is a rule of its own, to switch off by name
    assert reads(SpellingSettings(protection_off=("contractions",)), ENGLISH[:1], tokenizer) == [
        "Im not sure, dont ask Matteo about it."
    ]


def test_texts_told_apart():
    assert not_english("Вчера я ходил в магозин.")
    assert not_english("Die Kinder spilen im Garten und die Mutter kocht das Mitagessen.")
    assert not not_english("The novel beggins with a murder")
    assert not not_english("an occasional workrer")
    assert not not_english("Im here")


def test_language_settings_are_checked():
    assert SpellingSettings(language="DE").language == "de"
    assert SpellingSettings(language="pt-BR").language == "pt-br"
    assert SpellingSettings().texts_in_english is None
    assert SpellingSettings(keep_dictionary_words=True).texts_in_english is True  # an English corrector's step
    assert SpellingSettings(language="ru").texts_in_english is False
    assert SPELLER_SETTINGS.language == "en"
    for bad in ("german", "", "e", 7):
        with pytest.raises(ValueError, match="language must be a language code"):
            SpellingSettings(language=bad)
    with pytest.raises(ValueError, match="keep_dictionary_words, keep_other_languages read English dictionaries"):
        SpellingSettings(language="de", keep_dictionary_words=True, keep_other_languages=True)
    with pytest.raises(ValueError, match="fold_capitals"):
        SPELLER_SETTINGS.updated(language="de")


def test_the_command_line_language_flag():
    parser = argparse.ArgumentParser()
    add_spelling_flags(parser)
    assert spelling_changes(parser.parse_args(["--language", "de"])) == {"language": "de"}
    assert spelling_changes(parser.parse_args(["--language", "auto"])) == {"language": None}
    assert spelling_changes(parser.parse_args([])) == {}
    with pytest.raises(SystemExit):
        parser.parse_args(["--language", "German!"])


def test_the_english_speller_refuses_another_language_before_reading(tmp_path, capsys):
    from seq2spec.commands.main import main

    text = tmp_path / "de.txt"
    text.write_text("Die Kinder spilen im Garten.\n", encoding="utf-8")
    assert main(["correct", "--language", "de", "--out", str(tmp_path / "out.txt"), str(text)]) == 2
    assert "keep_dictionary_words" in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "out.txt.partial").exists()


def test_correct_with_a_model_of_another_language_is_greedy(toy_byte_models):
    big, small, tokenizer = toy_byte_models
    texts = OTHER_LANGUAGES + ENGLISH
    seen: list[str] = []

    def greedy_batch(input_ids, attention_mask):
        seen.extend(tokenizer.batch_decode(input_ids, skip_special_tokens=True))
        return greedy(big, input_ids, attention_mask, max_new_tokens=24)

    reference = TextDecoder(tokenizer, greedy_batch, batch_size=4)
    for language in (None, "de"):
        seen.clear()
        settings = SpellingSettings(language=language)
        expected = SpellingPipeline(settings, reference, tokenizer=tokenizer)(texts)
        assert set(OTHER_LANGUAGES) <= set(seen)  # read as written
        for draft in (small, "input-copy"):
            speculator = Seq2SeqSpeculator(big, draft, tokenizer, spelling=settings)
            assert speculator.correct(texts, batch_size=4, max_new_tokens=24) == expected
    assert len({output for output in expected}) > 2  # the toy writes varied outputs


def test_sentences_of_other_scripts_end_where_they_end():
    hindi = "मैं कल बाज़ार गया था। वहाँ मैंने फल खरीदे। फिर मैं घर लौट आया।"
    assert split_text(hindi, 30).pieces == ["मैं कल बाज़ार गया था।", "वहाँ मैंने फल खरीदे।", "फिर मैं घर लौट आया।"]
    arabic = "هل ذهبت إلى السوق؟ نعم ذهبت."
    assert split_text(arabic, 20).pieces == ["هل ذهبت إلى السوق؟", "نعم ذهبت."]
    french = "Il a dit « bonjour. » Puis il est parti."
    assert split_text(french, 25).pieces == ["Il a dit « bonjour. »", "Puis il est parti."]
    for text in (hindi, arabic, french):
        pieces = split_text(text, 20)
        assert join_pieces(pieces, pieces.pieces) == text


def test_a_speech_model_s_language_is_transcribe_s(toy_whisper_dirs):
    with pytest.raises(TypeError, match="transcribe"):
        Seq2SeqSpeculator(str(toy_whisper_dirs[0]), None, language="fr")
