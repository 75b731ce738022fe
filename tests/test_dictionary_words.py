"""seq2spec.spelling.dictionary_words and seq2spec.spelling.pipeline: which of the model's changes are undone, and in
what order ``correct``'s steps run around the model."""

from __future__ import annotations

import pytest
from transformers import ByT5Tokenizer

from seq2spec.default_models import SPELLER_DIR
from seq2spec.spelling.dictionary_words import (
    dictionary_checker,
    is_dictionary_token,
    keep_dictionary_words,
    word_groups,
)
from seq2spec.spelling.pipeline import SpellingPipeline, looped, most_repeats, runaway
from seq2spec.spelling.settings import SpellingSettings

WORDS = {"the", "staff", "meeting", "is", "at", "noon", "nomad", "well", "known", "from", "form", "every", "day", "s"}


def is_word(word: str) -> bool:
    return word in WORDS


def test_tokens_are_known_when_every_piece_is():
    assert is_dictionary_token("Staff", is_word) and is_dictionary_token("(noon),", is_word)
    assert is_dictionary_token("nomad's", is_word) and is_dictionary_token("well-known", is_word)
    assert is_dictionary_token("30-day", is_word) and is_dictionary_token("a", is_word)  # numbers, single letters
    assert is_dictionary_token("--", is_word)  # punctuation alone
    assert not is_dictionary_token("Satuff", is_word) and not is_dictionary_token("nomade's", is_word)
    assert not is_dictionary_token("x86_64", is_word) and not is_dictionary_token("café", is_word)
    # a contraction is known when its stem is ("didn't": "did"; "can't": "can")
    assert is_dictionary_token("staff's", is_word) and is_dictionary_token("the’ll", is_word)
    known = WORDS | {"did", "can"}
    assert is_dictionary_token("didn't", known.__contains__) and is_dictionary_token("can't", known.__contains__)
    assert not is_dictionary_token("didnt", known.__contains__) and not is_dictionary_token("xyzn't", is_word)
    # a letter alone is no contraction's stem but for I: "y'll" is no word, "I'll" is
    assert not is_dictionary_token("y'll", {"y", "i"}.__contains__) and is_dictionary_token("I'll", is_word)
    # 'm follows I alone: the speller wrote "it'm not sure" for "i'm not sure"
    assert is_dictionary_token("I'm", is_word) and is_dictionary_token("i’m", is_word)
    assert not is_dictionary_token("it'm", {"it"}.__contains__)


def test_a_dictionary_word_made_into_a_non_word_comes_back_as_written():
    source = "Staff meeting is at noon."
    assert keep_dictionary_words(source, "Satuff meeting is at noone.", is_word) == source
    # a typo fixed, a real word changed into another real word, a non-word left a non-word: the model's own
    assert keep_dictionary_words("teh meeting", "the meeting", is_word) == "the meeting"
    assert keep_dictionary_words("form the staff", "from the staff", is_word) == "from the staff"
    assert keep_dictionary_words("Xyzzy is at noon", "Xyzy is at noon", is_word) == "Xyzy is at noon"
    # the output's spacing and case are its own; only the garbled word is replaced, as the source wrote it
    assert keep_dictionary_words("STAFF  meeting", "Satuff  meeting\n", is_word) == "STAFF  meeting\n"
    # words split or merged into dictionary words: the model's own; a dictionary word dropped comes back
    assert keep_dictionary_words("every day", "everyday", (WORDS | {"everyday"}).__contains__) == "everyday"
    assert keep_dictionary_words("thestaff meeting", "the staff meeting", is_word) == "the staff meeting"
    assert keep_dictionary_words("the staff", "staff", is_word) == "the staff"
    assert keep_dictionary_words("", "", is_word) == ""


def test_words_split_or_merged_into_non_words_come_back_as_written():
    """A fix never splits or merges words into a non-word: the speller wrote "A boife" for "Aoife", "neats" for "ne
    sais", "inteet" for "in ternet"; those words come back as written, the model's other changes stay."""
    assert keep_dictionary_words("the staff", "the sta ff", is_word) == "the staff"
    assert keep_dictionary_words("the staff", "thestaff", is_word) == "the staff"
    assert keep_dictionary_words("Aoife, teh meeting", "A boife, the meeting", is_word, unknown=True) == (
        "Aoife, the meeting"
    )
    assert keep_dictionary_words("je ne sais at noon", "je neats at noone", is_word, unknown=True) == (
        "je ne sais at noon"
    )
    # unknown words come back only with unknown=True, dictionary words only with dictionary=True
    assert keep_dictionary_words("Aoife at noon", "A boife at noon", is_word) == "A boife at noon"
    assert keep_dictionary_words("the staff", "the sta ff", is_word, dictionary=False) == "the sta ff"
    # a word written as it was beside a split ("te reo" -> "teles of telesi") stays split from its neighbours
    assert keep_dictionary_words("the te reo staff", "the teles of telesi staff", is_word, unknown=True) == (
        "the te reo staff"
    )


def test_dictionary_words_merged_into_another_word_come_back_as_written():
    """The speller wrote "a public formulating list" for "a public forum (mailing list"; a merge that fixes words keeps
    their letters ("every day" -> "everyday")."""
    words = WORDS | {"a", "public", "forum", "mailing", "list", "formulating", "everyday"}
    assert keep_dictionary_words("a public forum (mailing list", "a public formulating list", words.__contains__) == (
        "a public forum (mailing list"
    )
    assert keep_dictionary_words("every day at noon", "everyday at noon", words.__contains__) == "everyday at noon"
    assert keep_dictionary_words(
        "the forum (mailing list", "the formulating list", words.__contains__, dictionary=False
    ) == ("the formulating list")


def test_dictionary_words_the_model_dropped_come_back():
    """The speller dropped correct words: "an home crowd" for "and the home crowd", "a doctor, an engineer" for "a
    doctor, and an engineer", "millions of evolution" for "millions of years of evolution", "the 8000" for "the port
    8000"; a doubled word written once stays a fix, and so does a typo fixed beside a dropped word."""
    words = WORDS | {"and", "an", "home", "crowd", "a", "doctor", "engineer", "of", "years", "evolution", "port", "on"}
    words |= {"millions", "web", "browser", "many", "mani", "store", "to", "went", "i", "go", "big", "file", "now"}
    words |= {"using", "in"}

    def kept(source: str, output: str) -> str:
        return keep_dictionary_words(source, output, words.__contains__, unknown=True)

    assert kept("and the home crowd", "an home crowd") == "and the home crowd"
    assert kept("a doctor, and an engineer", "a doctor, an engineer") == "a doctor, and an engineer"
    assert kept("millions of years of evolution.", "millions of evolution.") == "millions of years of evolution."
    assert kept("the port 8000 on", "the 8000 on") == "the port 8000 on"
    assert kept("There are mani web browser", "There are many browser") == "There are many web browser"
    assert kept("I went to the the store", "I went to the store") == "I went to the store"
    assert kept("the staff teh meeting", "the staff meeting") == "the staff meeting"  # a non-word dropped
    assert kept("go in the big file now", "go file now") == "go in the big file now"  # in order
    # marks alone in the run (protection's to put back: it decodes again where the output moved them)
    assert kept('using " " in the " " filee,', 'using " "t " file,') == 'using " "t " file,'
    assert keep_dictionary_words("and the home crowd", "an home crowd", is_word, dictionary=False) == "an home crowd"


@pytest.mark.skipif(not (SPELLER_DIR / "big").is_dir(), reason="the speller weights are not shipped")
def test_the_shipped_speller_keeps_words_it_dropped():
    """Lines of the Debian documentation (``bench_correct.py``'s): the speller wrote "an user will have to", "the
    entrance is 8000" and "files in " " " "" for them."""
    from seq2spec import Seq2SeqSpeculator

    texts = [
        "After this period, the soft limit will be treated like a hard limit, and the user will have to reduce their "
        "disk space usage to within this limit in order to be abld to write anything to the hard drive.",
        "In the second case, the input and output in the tunnel are reversed; the entrance is port 8000 on the "
        "intermediary machine, the output is on the local host, and the data are then directed to the server.",
        'Debian does not touch files in " " or " ".',
    ]
    expected = [texts[0].replace("abld", "able"), *texts[1:]]
    assert Seq2SeqSpeculator().correct(texts) == expected


def test_non_words_the_model_added_are_left_out():
    assert keep_dictionary_words("the staff meeting", "the staff telesi meeting", is_word, unknown=True) == (
        "the staff meeting"
    )
    assert keep_dictionary_words("staff meeting", "telesi staff meeting", is_word, unknown=True) == "staff meeting"
    # a dictionary word added is the model's (a word a sentence lacked)
    assert keep_dictionary_words("staff meeting", "the staff meeting", is_word, unknown=True) == "the staff meeting"


def test_a_name_made_into_a_distant_dictionary_word_comes_back():
    """The speller wrote "Song" for "Siobhan" and "Rain" for "Rahman"; a capitalised typo one or two edits from a
    word is still fixed ("Teh" -> "The")."""
    known = (WORDS | {"song", "rain"}).__contains__
    assert keep_dictionary_words("Siobhan is at noon", "Song is at noon", known, unknown=True) == "Siobhan is at noon"
    assert keep_dictionary_words("ask Rahman", "ask Rain", known, unknown=True) == "ask Rahman"
    assert keep_dictionary_words("Teh staff", "The staff", known, unknown=True) == "The staff"
    assert keep_dictionary_words("Stafff", "Staff", known, unknown=True) == "Staff"
    assert keep_dictionary_words("siobhan is", "song is", known, unknown=True) == "song is"  # lower case: a typo
    assert keep_dictionary_words("Siobhan is", "Song is", known) == "Song is"  # names only with unknown=True


def test_a_word_made_into_a_distant_dictionary_word_comes_back():
    """The speller wrote "court" for "cohort", "More" for "Mr" and "is" for "from"; a real-word error one edit from
    its word is still the model's to fix ("form" -> "from"), and so are words split or merged."""
    known = (WORDS | {"cohort", "court", "mr", "more", "from", "form", "is", "a", "lot"}).__contains__
    assert keep_dictionary_words("The cohort was large", "The court was large", known) == "The cohort was large"
    assert keep_dictionary_words("ask Mr Smith", "ask More Smith", known) == "ask Mr Smith"
    assert keep_dictionary_words("it came form here", "it came from here", known) == "it came from here"
    assert keep_dictionary_words("alot of it", "a lot of it", known) == "a lot of it"  # a split fixes a non-word
    assert keep_dictionary_words("The cohort", "The court", known, dictionary=False) == "The court"


def test_word_groups_line_up_splits_and_merges():
    assert word_groups(["wit", "aws", "s3", "cp"], ["with", "laws3", "cup"]) == [
        ((0, 1), (0, 1)),
        ((1, 3), (1, 2)),
        ((3, 4), (2, 3)),
    ]
    assert word_groups(["Aoife,"], ["A", "boife,"]) == [((0, 1), (0, 2))]
    added = [((0, 1), (0, 1)), ((1, 1), (1, 2)), ((1, 2), (2, 3))]
    assert word_groups(["the", "staff"], ["the", "extra", "staff"]) == added
    assert word_groups([], []) == []


def test_an_output_that_runs_on_gives_the_text_back():
    """A model that loops ("witout" -> "without without"; "... took about --recursive --storage---storage-class s3
    cupACIER ./25/ took about 5).") writes far more letters than a correction can: the text comes back as it was
    read."""
    text = "Uploading wit aws s3 cp took about 5 houres."

    def looping(texts):
        return [t.replace("wit ", "with ").replace("houres", "hours hours hours hours") for t in texts]

    assert runaway(text, looping([text])[0]) and not runaway(text, "Uploading with aws s3 cp took about 5 hours.")
    assert runaway("witout", "without without") and not runaway("alot", "a lot") and not runaway("Im", "I'm")
    protected = SpellingPipeline(SpellingSettings(keep_looped_texts=True), looping, tokenizer=ByT5Tokenizer())
    assert protected([text, "wit me"]) == [text, "with me"]
    plain = SpellingPipeline(SpellingSettings(protect=False, keep_looped_texts=True), looping)
    assert plain([text, "wit me"]) == [text, "with me"]
    # off unless asked: a model that writes longer texts (a grammar corrector adds words) is its own judge
    assert SpellingPipeline(SpellingSettings(protect=False), looping)([text])[0].endswith("hours hours hours.")


def test_an_output_that_drops_most_words_gives_the_text_back():
    """The shipped speller, reading a rule of 43 dashes, wrote "No Notice" and 131 dashes for a sentence of 25 words;
    the words left of it were "A - Source Notice ---- This Source"."""
    text = "Exhibit A - Source Code Form License Notice --- This Source Code Form is subject to the terms."
    assert runaway(text, "No Notice " + "-" * 131) and not runaway(text, text.replace("Exhibit A - ", ""))
    assert not runaway("teh cat sat", "the") and not runaway("a lot of teh time here, ok", "alot of the time here")

    def collapsing(texts):
        return [" ".join(t.split()[:3]) if len(t.split()) > 4 else t.replace("teh", "the") for t in texts]

    protected = SpellingPipeline(SpellingSettings(keep_looped_texts=True), collapsing, tokenizer=ByT5Tokenizer())
    assert protected([text, "teh end"]) == [text, "the end"]


def test_an_output_that_repeats_a_phrase_gives_the_text_back():
    """Reading a Markdown table's rows without their pipes, the shipped speller wrote "last name first name first
    name first name first name" for "last name first name other last name first name" (as many letters), and the
    words it dropped came back after the table's last pipe."""
    read = "Key Value greeting last name first name other last name first name"
    output = "Key Value greeting last name first name first name first name first name"
    assert looped(read, output) and runaway(read, output)
    assert not looped("ha ha ha, he said", "Ha ha ha, he said.") and not looped("the the cat", "the cat")
    assert looped("witout", "without without without") and not looped("a b a b", "a b a b")
    assert most_repeats("x a b a b a b y".split(), 2) == 3 and most_repeats([], 1) == 1

    def table_loop(texts):
        return [output if t == read else t.replace("teh", "the") for t in texts]

    protected = SpellingPipeline(SpellingSettings(keep_looped_texts=True), table_loop, tokenizer=ByT5Tokenizer())
    assert protected([read, "teh end"]) == [read, "the end"]


def test_the_dictionary_is_the_checkers():
    suggestions = {"staff": "staff", "satuff": "staff", "xyzzy": None}
    check = dictionary_checker(suggestions.get)
    assert check("staff") and not check("satuff") and not check("xyzzy")


def test_the_shipped_dictionary_knows_common_words():
    pytest.importorskip("symspellpy")
    check = dictionary_checker()
    assert check("staff") and check("magenta") and not check("satuff") and not check("magental")


def test_steps_fold_before_the_model_and_keep_words_after(monkeypatch):
    import seq2spec.spelling.pipeline as text_steps

    suggestions = {"evory": "every", "satuff": "staff"}
    fold, keep = text_steps.fold_capitals, text_steps.keep_dictionary_words_of
    monkeypatch.setattr(text_steps, "fold_capitals", lambda texts: fold(texts, suggestions.get))
    monkeypatch.setattr(
        text_steps, "keep_dictionary_words_of", lambda sources, outputs, **kw: keep(sources, outputs, is_word, **kw)
    )
    seen = []

    def model(texts: list[str]) -> list[str]:
        seen.extend(texts)
        return [text.replace("evory", "every").replace("meeting", "meetnig") for text in texts]

    both = SpellingSettings(protect=False, fold_capitals=True, keep_dictionary_words=True)
    assert SpellingPipeline(both, model)(["Evory meeting"]) == ["Every meeting"]
    assert seen == ["evory meeting"]  # the model read the folded text; its garbled "meetnig" is undone
    folding = SpellingSettings(protect=False, fold_capitals=True)
    assert SpellingPipeline(folding, model)(["Evory meeting"]) == ["Every meetnig"]
    plain = SpellingSettings(protect=False)
    assert SpellingPipeline(plain, model)(["Evory meeting"]) == ["Evory meetnig"]  # no steps: the model's output
    with pytest.raises(TypeError, match="keep_dictionary_words must be True or False"):
        SpellingSettings(keep_dictionary_words="yes")


def test_unknown_words_the_model_garbled_come_back_when_asked():
    source = "Okonkwo met Xyzzy at noon."
    output = "Oknkwo met Xyzy at noone."
    assert keep_dictionary_words(source, output, is_word) == "Oknkwo met Xyzy at noon."  # dictionary words only
    assert keep_dictionary_words(source, output, is_word, unknown=True) == source
    assert (
        keep_dictionary_words(source, output, is_word, dictionary=False, unknown=True) == "Okonkwo met Xyzzy at noone."
    )
    # a non-word the model made into a dictionary word is the model's fix
    assert keep_dictionary_words("teh staff", "the staff", is_word, unknown=True) == "the staff"
