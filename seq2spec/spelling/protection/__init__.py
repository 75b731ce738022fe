"""What a corrector must never change, kept out of its way and put back as written.

A correction model can only write what its tokenizer can: the shipped speller's vocabulary has no curly quotes,
dashes, accented letters or ``@ _ = ~ < > { } | \\ # * [ ]``, and any character a tokenizer lacks comes back as
nothing or as another word; a character its vocabulary holds only alone (``barely_written``) the model has hardly
seen, and it garbles the words that hold it. A corrector also has no business changing numbers, addresses,
identifiers or the whitespace between words. ``Layout.of`` cuts a text into its words and the whitespace between
them and sorts each word into one of three kinds:

- kept: a word holding a digit, a URL, an e-mail address, an @handle or #tag, a path, a command-line flag, a snake_case,
  CamelCase or dotted identifier, a lower-case letter before a capital (``iPhone``, ``eBay``), an all-capital acronym,
  code punctuation, a roman numeral numbering an item (``(iv)``), a letter alone other than ``a`` and ``I`` (``x = y +
  z``, plan B) or a word of software no dictionary knows (``technical_words``: ``async``, ``backend``, ``numpy``,
  commands and file formats such as ``postgres`` and ``csv``, with an s too: ``csvs``) (``is_technical``), a word of
  current English no dictionary knows (``is_current_word``: ``noob``, ``chai``, ``Connor``, regional words: ``brekkie``,
  ``idli``, and loanwords: ``tagine``, ``hanbok``), a place's name (``is_place_name``: ``Yambol``, and of several words:
  ``La Paz``, ``place_name_spans``), a unit or a sports statistic's count after a number (``200 ml``, ``8
  ast``: ``measurement_units``), the pronoun ``thee`` (``archaic_pronouns``) and old verb forms (``goeth``, ``thou
  sayest``: ``archaic_verbs``), a symbol written twice in a row (``A+++``), an address abbreviation beside a name or a
  number (``Oak Rd``, ``Hwy 9``: ``address_abbreviations``), the shorthand of clinical notes where two or more of it
  meet (``po bid prn``: ``clinical_abbreviations``), a title and the name after it (``Ms Rose``, ``Aunt Bee's``:
  ``honorific_names``), a greeting the model takes for a slip (``hey dan``: ``greetings``),
  both parts of a word broken by a hyphen at a line's end (``infor- mation``: ``broken_words``; the model reads the word
  whole), a name within a sentence (``is_name_within_sentence``: ``Matteo``), informal writing (``is_informal``: a chat
  abbreviation such as ``lol``, ``idk``, ``thx``, an office abbreviation such as ``qty``, ``attn``, a colloquial
  spelling such as ``gimme``, ``coulda``, ``y'all``, a dropped g such as ``sittin'``, the pronoun ``i`` in lower case, a
  double contraction such as ``who'd've``, a letter said long such as ``sooo``), one word in quotes of its own (``the
  word "teh"``: ``is_quoted_word``), the words of a code span between backticks (``code_spans``), the words of a
  quotation a check says to keep (``Layout.of``'s ``quote_kept``: one in another language, ``"Bitte nicht stören"``), a
  token longer than ``LONGEST_WORD`` (not read at all; but for one in a script written without spaces, such as
  Chinese, Japanese or Thai, where a token may be a sentence: ``is_too_long``), a token of symbols alone (``#``,
  ``—``, ``->``), or a character the tokenizer cannot write other than the typographic ones below. The model reads
  what the tokenizer can write of it (``cafe`` for ``café``, nothing for ``→``) so that the sentence still reads as
  one; the word comes back exactly as written.
- mapped: a word whose only unwritable characters are typographic quotes, apostrophes, dashes or ellipses, or whose
  contraction is written with an acute accent or a backtick for its apostrophe (``isn´t``, ``it`s``). The model reads
  their plain forms (``it's`` for ``it’s``) and may correct the word; its word comes back with the typographic
  characters in their places (``dosn't`` -> ``doesn't`` -> ``doesn’t``), or as written where the model changed their
  number.
- free: every other word, the model's to correct. A word inside Markdown emphasis, a Markdown link's text or an inline
  HTML tag (``**very importnat**``, ``[teh docs](url)``, ``<b>here</b>``: ``markup_spans``) is read without the markup,
  which comes back around the model's word; the word must come back in place, as a mapped word must. A contraction
  written without its apostrophe that is no English word (``thats``, ``youre``, ``Im``:
  ``CONTRACTIONS_WITHOUT_APOSTROPHE``) is read with it. A command or file format that may be a slip of a word (``sed``,
  ``env``, ``toml``: ``technical_words_in_context``) beside another technical word is free too; the change check
  (``capital_check``) writes it back unless the model is sure of its own word. In a text written with ’ and no ',
  apostrophes the model adds are written ’ too (``didnt`` -> ``didn’t``); a run of two or more of ``. ! ?`` ending the
  word (``Wait...``, ``what?!``) comes back as written. In a text written in capitals, its words in capitals are free
  but for acronyms, read in sentence case and written back in capitals (``shouted_words``: ``FRNOT`` -> ``FRONT``).

``Layout.assemble`` lines the model's output words up with the words it read (difflib, case ignored), puts kept and
mapped words back in their places, the words it did not read beside their neighbours, and the text's own whitespace
between words that were neighbours in the text. Where the model dropped, split or merged a kept or mapped word, so
that it cannot be put back in place, ``assemble`` returns None, and the caller decodes the runs of free words
between them on their own (``Layout.free_runs``), which always succeeds. The model's output for what it reads is
its greedy output; only what it never read, or cannot write, comes from the text.

The rules are one table, ``rules.RULES`` (a name, what it keeps, how it finds it), with the readings of ``READINGS``
(``markup``, ``broken_words``, ``shouted``); ``Layout.of`` walks those of its ``rules`` (``RuleSet``), and
``SpellingSettings.protection_off`` names those to switch off. Modules: ``word_lists`` (the assets the rules read),
``writing`` (what a tokenizer writes), ``word_rules`` and ``span_rules`` (the rules), ``phrases`` and ``markup``
(spans of several words), ``word`` (a word read and written back), ``shouted`` (a text in capitals), ``layout``.
"""

from __future__ import annotations

from seq2spec.spelling.protection.layout import Layout, text_apostrophe
from seq2spec.spelling.protection.rules import ALL_RULES, ENGLISH_RULES, READINGS, RULES, Rule, RuleSet, rule_names
from seq2spec.spelling.protection.word import Kind, Word
from seq2spec.spelling.protection.writing import TokenizerWriting

__all__ = [
    "ALL_RULES",
    "ENGLISH_RULES",
    "READINGS",
    "RULES",
    "Kind",
    "Layout",
    "Rule",
    "RuleSet",
    "TokenizerWriting",
    "Word",
    "rule_names",
    "text_apostrophe",
]
