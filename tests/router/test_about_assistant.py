"""Questions about the assistant by sentence structure (router/about_assistant.py): the second person
as the subject of a verb that does not read or tell, an identity question, the assistant as the
topic; a "you" with a verb of reading or telling, an impersonal "how do you …" and a named thing
are requests. Phrasings not in the eval set. Pure."""

from __future__ import annotations

import pytest

from router.about_assistant import asks_about_the_assistant


@pytest.mark.parametrize("question", [
    "Do you dream?", "Which model do you run on?", "Were you trained by a big company?",
    "Are you some sort of search engine?", "Can you feel anything?", "Tell me something about you",
    "Ты где живёшь?", "Вы бот или живой человек?", "Кто тебя создал и зачем?", "Расскажи немного про себя",
    "Wo wohnst du?", "Bist du wirklich eine KI?", "Erzähl mir was von dir", "Magst du Musik?",
])
def test_a_question_about_the_assistant_is_read_from_its_structure(question: str) -> None:
    assert asks_about_the_assistant(question), question


@pytest.mark.parametrize("question", [
    "Can you summarize what changed in Bundler lately?", "Do you know how the ACME protocol validates domains?",
    "What do you think about shorter certificate lifetimes?", "How do you revoke a certificate with certbot?",
    "Ты можешь объяснить, как работает проверка домена?", "Что ты знаешь про уязвимости в Net::FTP?",
    "Kannst du mir erklären, wie OCSP funktioniert?", "Weißt du, warum Ruby 2.7 nicht mehr gepflegt wird?",
    "Can you run Ruby 3.4 on Windows?", "Was hältst du von Certbot?",
])
def test_a_you_with_a_verb_of_reading_or_a_named_thing_is_a_request(question: str) -> None:
    assert not asks_about_the_assistant(question), question
