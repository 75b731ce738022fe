"""Long texts cut into sentence pieces for a corrector, and put back together with their whitespace."""

from __future__ import annotations

import pytest

from seq2spec.spelling.pieces import join_pieces, split_text

TEXTS = [
    "  Hello there.  This is a test! Is it? Yes.\n",
    "A long sentence without an end that goes on and on, with clauses; and more clauses: listing things, one "
    "after another, until it is far too long for the model",
    'He said "Stop." Then he left.) And (then) more.',
    "Short.",
    "",
    "   ",
    "Supercalifragilisticexpialidocious" * 3 + " word",
    "One.\tTwo!\n\nThree? Four\u2026 five.",
    "我今天去了商店，买了面包和牛奶，然后回家做晚饭。她说：「好的。」明天见！",
    "「はい。」と彼は言った。今日は天気がいいので、公園に散歩に行きました。 本当？",
]
UNSPACED_ENDS = "。！？，、：」"


@pytest.mark.parametrize("limit", [1, 12, 40, 140, 10_000])
@pytest.mark.parametrize("text", TEXTS)
def test_pieces_join_back_to_the_text(text, limit):
    split = split_text(text, limit)
    assert join_pieces(split, split.pieces) == text
    assert all(piece == piece.strip() for piece in split.pieces)
    # whitespace between pieces, or nothing after a Chinese or Japanese sentence or clause end
    between = zip(split.pieces[:-1], split.gaps[:-1], strict=True)
    assert all(gap.isspace() or piece[-1] in UNSPACED_ENDS for piece, gap in between)
    assert all(piece for piece in split.pieces) or split.pieces == [""]
    # a piece is over the limit only where it is a single word
    assert all(len(piece) <= limit or " " not in piece for piece in split.pieces if piece.isascii())


def test_a_text_that_fits_is_one_piece_and_a_long_one_is_cut_at_sentence_ends():
    assert split_text("Hello there. This is a test.", 40).pieces == ["Hello there. This is a test."]
    split = split_text("  Hello there.  This is a test! Is it? Yes.\n", 20)
    assert split.pieces == ["Hello there.", "This is a test!", "Is it?", "Yes."]
    assert (split.leading, split.gaps) == ("  ", ["  ", " ", " ", "\n"])


def test_a_long_sentence_is_cut_after_clauses_then_between_words():
    split = split_text("one two three, four five six; seven eight nine ten eleven twelve", 20)
    assert split.pieces == ["one two three,", "four five six;", "seven eight nine ten", "eleven twelve"]


def test_chinese_and_japanese_are_cut_at_their_full_stops_and_commas_without_spaces():
    split = split_text("我今天去了商店，买了面包和牛奶，然后回家做晚饭。她说：「好的。」明天见！", 16)
    assert split.pieces == ["我今天去了商店，买了面包和牛奶，", "然后回家做晚饭。", "她说：「好的。」", "明天见！"]
    assert split.gaps == ["", "", "", ""]
    # marks of one sentence stay together; a closing bracket stays with its sentence
    assert split_text("真的吗？！是的。。。好「嗯。」", 4).pieces == ["真的吗？！", "是的。。。", "好「嗯。」"]
    assert join_pieces(split, ["A", "B", "C", "D"]) == "ABCD"


def test_corrected_pieces_replace_the_originals():
    split = split_text("Teh cat. A dgo.", 8)
    assert join_pieces(split, ["The cat.", "A dog."]) == "The cat. A dog."
    with pytest.raises(ValueError, match="expected 2 pieces"):
        join_pieces(split, ["The cat. A dog."])


def test_the_limit_must_be_positive():
    with pytest.raises(ValueError, match="positive number of characters"):
        split_text("text", 0)


def test_only_texts_over_the_limit_are_cut_and_joined_back_in_order():
    from seq2spec.spelling.pieces import PiecedTexts

    texts = [" short. ", "Long one. Two! Three?", "", "ok"]
    pieced = PiecedTexts.of(texts, 10)
    assert pieced.pieces == [" short. ", "Long one.", "Two!", "Three?", "", "ok"]
    assert pieced.owners == [0, 1, 1, 1, 2, 3]
    assert pieced.join(pieced.pieces) == texts
    assert pieced.join([p.upper() for p in pieced.pieces])[1] == "LONG ONE. TWO! THREE?"
    with pytest.raises(ValueError, match="expected 6 decoded pieces"):
        pieced.join(["x"])
