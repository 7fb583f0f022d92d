"""What a question asks, in parts (retrieval/question_parts.py), and the prompt that lists them."""

from __future__ import annotations

import pytest

from retrieval.answer_prompt import PARTS_NOTE, Selection, build_messages
from retrieval.question_parts import MAX_PARTS, question_parts


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        # a coordinator and a question word, after a clause that asks
        ("When did the Ruby repository move to Git and where is its web view now?",
         ["When did the Ruby repository move to Git", "where is its web view now"]),
        ("Что такое запись CAA и зачем она нужна владельцу домена?",
         ["Что такое запись CAA", "зачем она нужна владельцу домена"]),
        ("Wann ist DST Root CA X3 abgelaufen, und was bedeutet das für alte Android-Geräte?",
         ["Wann ist DST Root CA X3 abgelaufen", "was bedeutet das für alte Android-Geräte"]),
        # a preposition before the question word; "ли" after the word it asks about
        ("Wer hat YJIT entwickelt und in welcher Version kam es dazu?",
         ["Wer hat YJIT entwickelt", "in welcher Version kam es dazu"]),
        ("что такое staging, и можно ли им пользоваться бесплатно",
         ["что такое staging", "можно ли им пользоваться бесплатно"]),
        # a comma list of questions
        ("как пользоваться тестовым окружением, какой там адрес и какой флаг в certbot?",
         ["как пользоваться тестовым окружением", "какой там адрес", "какой флаг в certbot"]),
        # two question sentences; a request sentence is not a part
        ("Which root certificates are there? What is ISRG Root X2? Please answer in German.",
         ["Which root certificates are there", "What is ISRG Root X2"]),
        ("how long are short-lived certs valid and how do i get one",
         ["how long are short-lived certs valid", "how do i get one"]),
    ],
)
def test_a_question_that_asks_several_things_is_cut_into_them(question: str, parts: list[str]) -> None:
    assert question_parts(question) == parts


@pytest.mark.parametrize(
    "question",
    [
        "What is DNS-PERSIST-01?",
        # an embedded question: the request before the comma asks nothing
        "Erkläre mir bitte, welche Challenge-Typen es gibt.",
        # a list of names, not of questions
        "Что такое ISRG Root X1 и X2?",
        "find the posts about REXML and list the vulnerabilities",
        # quoted words do not ask: the message's "is" makes no question of the clause before the comma
        'I see "this method is deprecated", and what now?',
        "Найди статьи про REXML за 2024 год и перечисли, какие уязвимости нашли",
    ],
)
def test_a_question_that_asks_one_thing_stays_whole(question: str) -> None:
    assert question_parts(question) == [" ".join(question.split())]


def test_more_parts_than_the_limit_is_one_question_listing_things() -> None:
    many = " ".join(f"What is item {n}?" for n in range(MAX_PARTS + 1))
    assert question_parts(many) == [many]
    assert len(question_parts(" ".join(f"What is item {n}?" for n in range(MAX_PARTS)))) == MAX_PARTS


def test_the_prompt_lists_the_parts_after_the_question_and_only_when_there_are_several() -> None:
    user = build_messages("When X and what Y?", "en", Selection(parts=["When X", "what Y"]))[1]["content"]
    assert PARTS_NOTE.format(count=2) + "1. When X\n2. what Y\n" in user
    assert user.index("Question: When X and what Y?") < user.index("1. When X")
    assert user.rstrip().endswith('(language code "en").')
    single = build_messages("What is X?", "en", Selection(parts=["What is X?"]))[1]["content"]
    assert "things. Answer each" not in single
    # the system message stays the same bytes, so llama-server's prompt cache keeps it
    assert build_messages("a?", "en", Selection())[0] == build_messages(
        "b and what c?", "en", Selection(parts=["b", "what c"]))[0]
