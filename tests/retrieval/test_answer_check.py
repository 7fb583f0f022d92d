"""The answer check, citation repair and passage tightening on their own (pure functions).
The non-answers are the ones the offline model gave in issue 25, or of their kind."""

from __future__ import annotations

from retrieval.answer_check import check_answer, stems
from retrieval.answer_prompt import (
    LANGUAGE_REMINDER,
    STRICT_REMINDER,
    SYSTEM_PROMPT,
    Selection,
    build_messages,
    tighten,
)
from retrieval.citations import ground_citations, repair_citations, unresolved_citations

YJIT = ("Ruby 3.3 ships YJIT, a just-in-time compiler, enabled with --yjit. YJIT makes Rails applications about "
        "15 percent faster and uses less memory than in Ruby 3.2.")
MX = "Ein MX-Eintrag nennt den Mailserver einer Domain; die Priorität entscheidet, welcher Server zuerst gefragt wird."


def test_an_answer_drawn_from_the_passages_is_accepted() -> None:
    check = check_answer("YJIT is a just-in-time compiler shipped with Ruby 3.3; it makes Rails applications "
                         "about 15 percent faster [1].", "What is YJIT in Ruby?", [YJIT], 1)
    assert check.accepted and check.citations == 1 and check.support > 0.8


def test_asking_the_user_for_the_question_is_not_an_answer() -> None:
    # Russian non-answer over English passages (issue 25): nothing cited, nothing carried over.
    check = check_answer("Конечно, я могу помочь вам с этим. Пожалуйста, предоставьте вопрос, и я постараюсь "
                         "ответить.", "Что такое YJIT в Ruby?", [YJIT], 1)
    assert check.verdict in {"empty", "uncited"} and not check.accepted  # nothing but filler, nothing cited
    cited = check_answer("К сожалению, я не могу помочь с этим вопросом про компилятор [1].",
                         "Что такое YJIT в Ruby?", [YJIT], 1)
    assert cited.verdict == "off_material" and cited.cross_script  # a marker alone carries nothing over
    same_language = check_answer("Sure, I can help you with that. Please provide the question you want answered.",
                                 "What is YJIT in Ruby?", [YJIT], 1)
    assert same_language.verdict == "empty"  # every word of it is filler


def test_saying_it_cannot_help_is_not_an_answer_even_with_a_marker() -> None:
    check = check_answer("Es tut mir leid, dabei kann ich leider nicht helfen [1].", "Was ist ein MX-Eintrag?",
                         [MX], 1)
    assert check.verdict == "off_material" and check.support < 0.3


def test_restating_the_question_is_not_an_answer() -> None:
    assert check_answer("What is YJIT in Ruby?", "What is YJIT in Ruby?", [YJIT], 1).verdict == "restates_question"
    assert check_answer("[1]", "What is YJIT in Ruby?", [YJIT], 1).verdict == "empty"


def test_a_short_factual_answer_and_a_cited_cross_language_one_pass() -> None:
    assert check_answer("In 1871 [1].", "When was the lighthouse built?", ["It was built in 1871."], 1).accepted
    russian = check_answer("YJIT ускоряет приложения Rails примерно на 15 процентов [1].", "Что даёт YJIT?",
                           [YJIT], 1)
    assert russian.accepted and russian.cross_script
    uncited = check_answer("YJIT — JIT-компилятор Ruby 3.3, ускоряет Rails.", "Что такое YJIT?", [YJIT], 1)
    assert uncited.accepted  # no marker, but names and numbers of the passage carried over


def test_an_answer_in_another_language_of_the_same_script_is_judged_by_what_it_carries_over() -> None:
    # A German answer from an English passage shares its names and numbers, few of its words: the share of
    # supported words (4 of 14 here) says nothing across languages (dev: good translations ended extractive).
    german = ("YJIT ist ein Übersetzer zur Laufzeit, den Ruby 3.3 mitbringt; er beschleunigt Anwendungen mit Rails "
              "um ungefähr 15 Prozent und braucht dabei weniger Speicher.")
    check = check_answer(german, "Was bringt YJIT?", [YJIT], 1, "de", {"en"})
    assert check.accepted and check.cross_language and check.support < 0.3
    assert check_answer(german + " [1]", "Was bringt YJIT?", [YJIT], 1, "de", {"en"}).accepted
    # A refusal carries nothing over: a marker and words of its own do not make it an answer here.
    refusal = check_answer("Leider enthalten die Abschnitte darüber keine Angaben, tut mir sehr leid [1].",
                           "Was bringt YJIT?", [YJIT], 1, "de", {"en"})
    assert refusal.verdict == "off_material" and refusal.cross_language
    # With a passage in the answer's own language, its words must come from the passages as before.
    assert not check_answer(german, "Was bringt YJIT?", [YJIT], 1, "de", {"en", "de"}).accepted


def test_a_number_is_the_same_word_with_or_without_its_ordinal_or_plural_ending() -> None:
    # "16th" and "1990s" carry over the German "16." and the Russian "1990-х": across languages only names and
    # numbers are shared, so a translated date must count as one.
    assert stems("on the 16th, in the 1990s, the 1st and 2nd, the 3rd") >= {"16", "1990", "1", "2", "3"}
    assert stems("am 16. Mai") & stems("on May 16th") == {"16"}
    assert stems("в 1990-х годах") & stems("in the 1990s") == {"1990"}
    assert stems("H264 and 10GB") == {"h264", "10gb"}  # a name or unit that merely holds digits keeps its letters
    passage = "Die Konferenz findet am 16. Mai in Köln statt."
    assert check_answer("It takes place on the 16th [1].", "Wann findet die Konferenz statt?",
                        [passage], 1, "en", {"de"}).accepted


def test_an_uncited_answer_needs_more_support() -> None:
    loose = "Rails applications run on servers that people configure, monitor and restart carefully every day."
    assert check_answer(loose, "What does YJIT change?", [YJIT], 1).verdict in {"uncited", "off_material"}
    assert check_answer(loose + " [1]", "What does YJIT change?", [YJIT], 1).verdict == "off_material"


def test_citations_that_point_nowhere_are_dropped_and_lists_split() -> None:
    repaired = repair_citations("A [1]. B [3][2]. C [1, 2]. D [1-2]. E [7].", 2)
    assert repaired == "A [1]. B [2]. C [1][2]. D [1][2]. E."
    assert unresolved_citations(repaired, 2) == [] and unresolved_citations("x [0] [3]", 2) == [0, 3]


def test_a_long_chunk_is_tightened_around_the_question() -> None:
    filler = " ".join(f"Sentence number {i} talks about gardening and weather." for i in range(20))
    text = filler + " The MX record names the mail server of a domain. " + filler
    tight = tighten(text, {"recor", "mail"}, max_chars=300)
    assert "The MX record names the mail server of a domain." in tight and len(tight) <= 300


def test_the_system_message_is_the_same_bytes_for_every_question() -> None:
    a = build_messages("Was ist ein MX-Eintrag?", "de", Selection())
    b = build_messages("How fast is YJIT?", "ru", Selection(), reminder="strict")
    assert a[0]["content"] == b[0]["content"] == SYSTEM_PROMPT
    assert a[1]["content"] != b[1]["content"] and "Russian" in b[1]["content"]


def test_an_answer_in_another_language_than_the_one_asked_is_not_the_answer() -> None:
    english = "YJIT is a just-in-time compiler shipped with Ruby 3.3; it makes Rails applications faster [1]."
    assert check_answer(english, "Что такое YJIT?", [YJIT], 1, "en").accepted
    assert check_answer(english, "Что такое YJIT?", [YJIT], 1, "ru").verdict == "wrong_language"
    assert check_answer(english, "Was ist YJIT?", [YJIT], 1, "de").verdict == "wrong_language"
    german = "YJIT ist ein Just-in-time-Compiler, der mit Ruby 3.3 ausgeliefert wird und Rails beschleunigt [1]."
    assert check_answer(german, "What is YJIT?", [YJIT], 1, "de").accepted
    assert check_answer(german, "What is YJIT?", [YJIT], 1, "en").verdict == "wrong_language"
    # A Russian answer full of names, versions and checksums' names is still Russian.
    russian = "YJIT в Ruby 3.3 ускоряет Rails applications примерно на 15 процентов, флаг --yjit [1]."
    assert check_answer(russian, "What is YJIT?", [YJIT], 1, "ru").accepted
    # Quoted passage text is not the model's own words; too few words cannot show a language.
    quoting = 'YJIT ускоряет приложения: «makes Rails applications about 15 percent faster» [1].'
    assert check_answer(quoting, "Что даёт YJIT?", [YJIT], 1, "ru").accepted
    assert check_answer("Ruby 3.3 ships YJIT [1].", "Что такое YJIT?", [YJIT], 1, "ru").accepted


def test_a_retry_reminds_of_what_the_first_reply_missed() -> None:
    plain = build_messages("Что такое YJIT?", "ru", Selection())[1]["content"]
    language = build_messages("Что такое YJIT?", "ru", Selection(), reminder="language")[1]["content"]
    strict = build_messages("Что такое YJIT?", "ru", Selection(), reminder="strict")[1]["content"]
    assert LANGUAGE_REMINDER.format(name="Russian") in language and STRICT_REMINDER not in language
    assert STRICT_REMINDER in strict and "not in Russian" not in strict
    assert "previous reply" not in plain


def test_a_citation_points_at_the_source_that_holds_its_sentence() -> None:
    sources = ["Ruby 3.3 released\n" + YJIT, "Mail records\n" + MX]
    # The small model cites [1] everywhere: the second sentence's words are the second source's.
    assert ground_citations("YJIT makes Rails faster [1]. Der MX-Eintrag nennt den Mailserver [1].", sources) == (
        "YJIT makes Rails faster [1]. Der MX-Eintrag nennt den Mailserver [2].")
    # A marker that no source supports is dropped; one with support stays.
    assert ground_citations("Gardening is fun [2]. YJIT ships with Ruby 3.3 [1][2].", sources) == (
        "Gardening is fun. YJIT ships with Ruby 3.3 [1].")
    # Across scripts only names and numbers can be compared; with none, the marker stays.
    assert ground_citations("Приложения работают быстрее [1].", sources) == "Приложения работают быстрее [1]."
    assert ground_citations("YJIT ускоряет Rails [2].", sources) == "YJIT ускоряет Rails [1]."


def test_a_marker_after_the_sentence_end_cites_that_sentence() -> None:
    assert repair_citations("Обновитесь на Ruby 3.4 или 4.0. [2]", 2) == "Обновитесь на Ruby 3.4 или 4.0 [2]."
    assert repair_citations("A is B. [1][2] C is D [2].", 2) == "A is B [1][2]. C is D [2]."
    # It is grounded against that sentence, not against nothing.
    sources = ["Ruby 3.3 released\n" + YJIT, "Mail records\n" + MX]
    assert ground_citations(repair_citations("Der MX-Eintrag nennt den Mailserver. [1]", 2), sources) == (
        "Der MX-Eintrag nennt den Mailserver [2].")
