"""recipes/word_lists/make_technical_words.py: the list of software words the text steps keep as written."""

from __future__ import annotations

import gzip
import sys
import types

import make_technical_words

from seq2spec.spelling.protection.word_lists import (
    TECHNICAL_WORDS_IN_CONTEXT_PATH,
    TECHNICAL_WORDS_PATH,
    technical_words,
    technical_words_in_context,
)


def test_words_of_descriptions_are_chosen_by_the_rule(monkeypatch):
    misspellings = {"ouput"} | make_technical_words.DESCRIPTION_TYPOS  # codespell's, as the recipe reads them
    monkeypatch.setattr(make_technical_words, "_misspellings", lambda: misspellings)
    descriptions = [
        "async backend for the numpy ouput (tty) llibrary",
        "Async backend, numpy; ouput tty llibrary redis",
        "backend for numpy tty ouput llibrary async",
    ]
    words = make_technical_words.technical_words(descriptions, 2)
    # dictionary words, codespell's misspellings, the descriptions' own typos, a three-letter word one edit from a
    # common word ("tty": "try") and words in fewer than two descriptions ("redis") are left out; only lower-case
    # writing counts ("Async" does not)
    assert words == ["async", "backend", "numpy"]


def test_the_shipped_list_is_the_recipes_rule():
    words = technical_words()
    assert len(words) > 1000 and {"async", "backend", "numpy", "systemd", "csv", "postgres", "readme"} <= words
    lines = TECHNICAL_WORDS_PATH.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and lines[1:] == sorted(words)
    assert not words & make_technical_words.DESCRIPTION_TYPOS


def test_command_names_come_from_the_bin_folders_of_contents_indexes(tmp_path):
    contents = tmp_path / "Contents-amd64.gz"
    lines = [
        "usr/bin/scp    net/openssh-client",
        "usr/sbin/chown    utils/coreutils",
        "usr/lib/postgresql/15/bin/postgres    database/postgresql-15",
        "usr/games/fortune    games/fortune-mod",
        "usr/bin/jq    utils/jq",  # two letters
        "usr/share/doc/sed/README    utils/sed",  # no command
        "usr/bin/x86_64-linux-gnu-gcc    devel/gcc",  # no word
    ]
    with gzip.open(contents, "wt", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    assert make_technical_words.command_names([contents]) == {"scp", "chown", "postgres", "fortune"}


def test_file_extensions_come_from_mime_types(tmp_path):
    mime_types = tmp_path / "mime.types"
    mime_types.write_text("# comment csv\ntext/csv\t\t\t\t\tcsv\nimage/svg+xml\tsvg svgz\napplication/x-7z\t7z\n")
    assert make_technical_words.file_extensions(mime_types) == {"csv", "svg", "svgz"}


def test_words_a_writer_may_mean_otherwise_are_kept_in_context_only(monkeypatch):
    zipf = {"set": 5.9, "sed": 2.9, "shown": 4.9, "chown": 1.8, "toml": 0.0, "tool": 5.0, "csv": 2.6, "ftdump": 0.0}
    fake = types.ModuleType("wordfreq")
    fake.zipf_frequency = lambda word, language, wordlist: zipf.get(word, 0.0)
    monkeypatch.setitem(sys.modules, "wordfreq", fake)
    monkeypatch.setattr(make_technical_words, "_misspellings", lambda: {"alot"})
    commands = {"sed", "chown", "ftdump", "journalctl", "set"}
    others = {"toml", "csv", "svg", "numpy", "alot"}
    anywhere, in_context = make_technical_words.words_by_context(commands, others, {"numpy"}, 1.5, 7, 2.0)
    # a short command English text does not write ("ftdump"; "journalctl" is long enough), a misspelling ("alot"), a
    # dictionary word ("set") and a listed word ("numpy") are left out; a slip of a far commoner word ("sed", "chown",
    # "toml") is kept in context
    assert anywhere == ["csv", "journalctl", "svg"] and in_context == ["chown", "sed", "toml"]


def test_the_shipped_list_in_context_is_the_recipes_rule():
    words = technical_words_in_context()
    assert len(words) > 500 and {"sed", "env", "chown", "toml"} <= words
    lines = TECHNICAL_WORDS_IN_CONTEXT_PATH.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#") and lines[1:] == sorted(words)
    assert not words & technical_words()


def test_c_function_names_come_from_the_man_pages_of_manpages_dev(tmp_path):
    contents = tmp_path / "Contents-all.gz"
    lines = [
        "usr/share/man/man3/strlen.3.gz    doc/manpages-dev",
        "usr/share/man/man2/epoll_wait.2.gz    doc/manpages-dev",  # no word
        "usr/share/man/man2/fsync.2.gz    doc/manpages-dev,doc/other-doc",
        "usr/share/man/man3/xcb_connect.3.gz    doc/libxcb-doc",  # another library's
        "usr/share/man/man3/lapack.3.gz    doc/liblapack-doc",  # another package
        "usr/share/man/man1/grep.1.gz    utils/grep",  # a command's page, not a function's
        "usr/share/man/man3/memcpy.3.gz    doc/manpages-dev",
    ]
    with gzip.open(contents, "wt", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    assert make_technical_words.man_page_names([contents]) == {"strlen", "fsync", "memcpy"}


def test_written_words_skip_comment_lines(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("# a comment: not words\nmemoize upsert\n  dicts\n\n")
    assert make_technical_words.written_words(path) == {"memoize", "upsert", "dicts"}


def test_the_programming_words_reach_the_shipped_lists():
    words = make_technical_words.written_words(make_technical_words.PROGRAMMING_WORDS)
    shipped = technical_words() | technical_words_in_context()
    # each is in a list, a word of the dictionaries, or one the recipe's rules leave out ("readme" is listed already)
    assert {"dereference", "nullptr", "constexpr", "memoize", "upsert", "dicts", "eslint"} <= shipped
    assert len(words & shipped) > 300
    assert {"strlen", "memcpy", "getenv"} <= shipped  # manpages-dev's C functions


def test_written_programming_words_go_in_context_only_beside_a_frequent_word(monkeypatch):
    fake = types.ModuleType("wordfreq")
    fake.zipf_frequency = lambda word, language, wordlist: {"memorize": 3.3, "upset": 4.0, "cost": 5.3}.get(word, 0.0)
    monkeypatch.setitem(sys.modules, "wordfreq", fake)
    monkeypatch.setattr(make_technical_words, "_misspellings", lambda: {"alot"})
    programming = {"memoize", "const", "numpy", "alot", "set", "upsert"}
    anywhere, in_context = make_technical_words.words_by_context(set(), set(), {"numpy"}, 1.5, 7, 2.0, programming)
    # the frequency gap would keep neither "memoize" nor "upsert" anywhere ("memorize" and "upset" are more than 2
    # Zipf above them); a written word is kept anywhere unless one edit from a word symspellpy counts 20 million
    # times or more ("const": "cost"); a listed word, a misspelling and a dictionary word are left out
    assert anywhere == ["memoize", "upsert"] and in_context == ["const"]
