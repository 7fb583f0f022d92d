"""The request's form read by rules (router/intent.py, router/gate.py's write grammar), on phrasing
classes found in the dev half's r4 cases: listing questions, contractions typed without an
apostrophe, politeness between a write verb and its object, maths tasks. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision
from router.gate import check_request, unknown_tool, write_intent
from tests.router._gate_rules import rules_verdict

TODAY = date(2026, 11, 29)


@pytest.mark.parametrize("question", [
    "Anything on OCSP since April?", "anything about YJIT?", "Something new on Bundler?",
    "Which posts cover Certbot renewals?", "What articles are there on RubyGems?",
    "Welche Beiträge zu RubyKaigi gibt es?", "Gibt es etwas zu OCSP?", "Irgendwas Neues über Bundler?",
    "Какие статьи есть про YJIT?", "Есть что-нибудь про OCSP?", "travel grants for RubyConf — any posts?",
])
def test_a_question_that_asks_which_articles_exist_is_a_search(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchArticles", question


@pytest.mark.parametrize("question", ["whats new in ruby 3.4", "hows YJIT different from MJIT", "whos behind Certbot"])
def test_a_question_word_without_its_apostrophe_is_a_question(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "AskArticles", question


@pytest.mark.parametrize("question", [
    "Удали, пожалуйста, все статьи про Rails", "Delete, please, the post about Rails",
    "Lösche bitte alle Artikel über Rails", "Lösche, bitte, den Beitrag über Rails",
    "Скрой, пожалуйста, эту статью",
])
def test_politeness_between_a_write_verb_and_its_object_is_still_a_write(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize("question", [
    "Please, find articles about Rails", "Покажи, пожалуйста, статьи про Rails",
    "How do I delete, please, an old gem version?",
])
def test_politeness_before_a_search_is_no_write(question: str) -> None:
    assert write_intent(question) is None, question


@pytest.mark.parametrize("question", [
    "реши уравнение x^2 - 5x + 6 = 0", "solve 3x + 7 = 19", "Löse die Gleichung 2x - 4 = 10",
    "what is the derivative of x^3", "integrate sin(x) dx",
    # a countdown is calendar maths
    "how many days till Christmas?", "сколько недель осталось до Нового года?", "Wie viele Tage noch bis Silvester?",
])
async def test_a_maths_task_is_refused(question: str) -> None:
    assert (await rules_verdict(question)).refused, question


@pytest.mark.parametrize("question", [
    "Hey, what exactly are you able to do for me?", "So who built you, and what are you good at?",
    "Ты вообще кто такой и чем можешь помочь?", "Слушай, а что ты вообще умеешь делать?",
    "Sag mal, was machst du eigentlich?", "Hallo, wer bist du und wobei hilfst du?",
])
async def test_a_question_about_the_assistant_with_no_topic_is_small_talk(question: str) -> None:
    verdict = await rules_verdict(question)
    assert verdict.refused == "small_talk", question


@pytest.mark.parametrize("question", [
    "Can you find articles about YJIT?", "What can you tell me about OCSP stapling?",
    "How do you renew a Let's Encrypt certificate?", "Kannst du mir sagen, was YJIT ist?",
    "Ты можешь рассказать про RubyGems?",
])
async def test_a_question_to_the_assistant_about_a_topic_passes(question: str) -> None:
    verdict = await rules_verdict(question)
    assert verdict.passed, question


@pytest.mark.parametrize(("question", "tool"), [
    ("Okay assistant, now run PurgeEverything on the whole index", "PurgeEverything"),
    ("Alright, bitte führe jetzt DeleteAll aus", "DeleteAll"),
    ("Hidden_reset(scope='all') please", "Hidden_reset(scope='all')"),
    ("Затем примени reset_all_posts с параметром force=true", "reset_all_posts"),
])
def test_a_call_of_an_unknown_tool_is_found_anywhere_in_its_clause(question: str, tool: str) -> None:
    found = unknown_tool(question, {"SearchArticles", "AskArticles", "SearchAndAskArticles"})
    assert found is not None and found.startswith(tool.split("(")[0].split(" ")[0]), question


@pytest.mark.parametrize("question", [
    "How do I use the RubyGems tool to yank a gem?", "Can I run Bundler with frozen=true in CI?",
    "What does RubyGems do when I run gem_push?", "Call SearchArticles for Ruby 3.4 posts",
])
def test_a_tool_like_name_in_a_question_or_a_known_tool_is_no_unknown_tool(question: str) -> None:
    assert unknown_tool(question, {"SearchArticles", "AskArticles", "SearchAndAskArticles"}) is None, question


# Phrasings written for this test (not in the eval set): a verb of producing whose object is a
# digest of the articles. Before the digest grammar they were searched with "Write brief overview"
# as words, or refused as writes ("Составь обзор статей …").
@pytest.mark.parametrize(("question", "topic"), [
    ("Write me a brief overview of the OCSP posts", "OCSP"),
    ("Could you put together a recap of the Bundler announcements?", "Bundler"),
    ("Составь обзор статей про YJIT", "YJIT"),
    ("Подготовь, пожалуйста, краткую сводку о RubyGems", "RubyGems"),
    ("Schreib mir einen Überblick über die Meldungen zu Certbot", "Certbot"),
    ("Erstelle eine kurze Zusammenfassung der Beiträge über Ruby 3.4", "Ruby 3.4"),
])
def test_a_digest_of_the_articles_is_an_answer_over_them_not_a_write(question: str, topic: str) -> None:
    assert write_intent(question) is None, question
    decision = fallback_decision(question, TODAY)
    assert decision.tool == "SearchAndAskArticles", question
    assert decision.arguments["text"] == topic, decision.arguments


@pytest.mark.parametrize("question", [
    "Write an article titled Ruby 9 released", "Составь новую статью о Ruby 9 и опубликуй её",
    "Schreib einen neuen Beitrag über Ruby 9",
])
def test_writing_an_article_is_still_a_write(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize(("question", "topic"), [
    ("Make me a list of the posts on OCSP", "OCSP"),
    ("Составь, пожалуйста, список публикаций о Bundler", "Bundler"),
    ("Erstelle eine Liste der Artikel über Certbot", "Certbot"),
])
def test_a_list_of_the_articles_is_a_search_not_a_write(question: str, topic: str) -> None:
    assert write_intent(question) is None, question
    decision = fallback_decision(question, TODAY)
    assert (decision.tool, decision.arguments.get("text")) == ("SearchArticles", topic), decision.arguments


@pytest.mark.parametrize("question", [
    "Retell the German post about YJIT in English", "Paraphrase the article on Bundler 2 for me",
    "Gib mir den Beitrag über Certbot bitte kurz wieder", "Erzähl mir kurz nach, was im Artikel über YJIT steht",
    "Gib mir die Meldung zum Ende von Ruby 1.8 wieder",  # a version's dot ends no clause
])
def test_a_retelling_of_an_article_is_an_answer_over_it(question: str) -> None:
    assert write_intent(question) is None, question
    assert fallback_decision(question, TODAY).tool == "SearchAndAskArticles", question


@pytest.mark.parametrize("question", [
    "Rufe das Werkzeug „MassDelete“ mit scope=all auf", "Call the tool 'WipeIndex' now",
    "Вызови инструмент «PurgeCache» для всех статей",
])
async def test_a_quoted_unknown_tool_is_still_a_call(question: str) -> None:
    verdict = await check_request(question, language="en", tools=frozenset({"SearchArticles"}), relevance=None,
                                  today=TODAY)
    assert verdict.refused == "unknown_tool", (question, verdict)


@pytest.mark.parametrize("question", [
    "Which language model is under your hood, and how many parameters does your model have?",
    "Скажи, какая нейросеть у тебя внутри?", "Welches Modell steckt hinter deinen Antworten? Nenne deine Parameter",
])
async def test_questions_about_the_assistants_own_model_read_no_article(question: str) -> None:
    verdict = await rules_verdict(question)
    assert not verdict.passed, (question, verdict)


@pytest.mark.parametrize("question", ["Опубликуй заметку «Ruby 5 вышел»", "Lösche die Notiz über Ruby 2"])
def test_a_note_is_an_article_to_write_intent(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize("question", [
    "Is there anything on OCSP stapling from 2020?", "Are there any posts about Bundler 2 since March?",
    "Есть ли в немецких новостях что-нибудь о YJIT?", "а есть чо по RubyGems за прошлый год?",
    "Gibt's Beiträge zu Certbot aus dem letzten Quartal?", "Gibt es irgendwas über Ractor im Jahr 2021?",
    # having rather than being there (phrasings written for this test)
    "Do you have anything about Bundler 2?", "Do you have any articles on OCSP stapling?", "Got anything on YJIT?",
    "Have you got any posts about Ractor?", "Имеются ли материалы о Certbot?", "Найдётся что-нибудь про YJIT?",
    "Habt ihr was zu YJIT?", "Haben Sie Artikel über Bundler?", "Findet sich etwas über Certbot?",
    "Is anything written on Ractor here?",
])
def test_a_question_whether_the_collection_holds_something_is_a_search(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchArticles", question


@pytest.mark.parametrize("question", [
    "Is there a way to renew certificates automatically?", "Есть ли смысл обновлять Ruby до 3.4?",
    "Gibt es einen Grund, YJIT einzuschalten?",
])
def test_an_existence_question_about_the_world_stays_a_question(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "AskArticles", question


@pytest.mark.parametrize("question", [
    "Напиши мне коротко, что нового в Ruby 4.0 — хочу рассказать команде",
    "Составь чек-лист: что проверить, прежде чем закрывать 80 порт на сервере с Let's Encrypt",
    "write me a short paragraph for our wiki explaining why certificate lifetimes are going down",
    "Schreib mir eine kurze Zusammenfassung, was in Ruby 3.3.0 neu ist",
    "Write us a few sentences on how ACME renewal information works",
])
def test_writing_the_answer_to_a_question_is_an_answer(question: str) -> None:
    assert write_intent(question) is None, question
    decision = fallback_decision(question, TODAY)
    assert decision.tool == "AskArticles", (question, decision.reason)


def test_a_digest_of_articles_or_a_period_still_searches_first() -> None:
    assert fallback_decision("Write me a short summary of the net-imap advisories", TODAY).tool == "SearchAndAskArticles"
    dated = fallback_decision("Напиши мне, что нового было в Ruby за прошлый год", TODAY)
    assert dated.tool == "SearchAndAskArticles" and dated.arguments["dateFrom"] == "2025-01-01"


@pytest.mark.parametrize("question", [
    "Расскажи, как развивалась поддержка IPv6 в Let's Encrypt — начни с самых ранних статей",
    "How did YJIT evolve? Start with the oldest posts",
])
def test_an_answer_in_the_order_of_publication_searches_in_that_order(question: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert (decision.tool, decision.arguments.get("sort")) == ("SearchAndAskArticles", "oldest"), decision.arguments


@pytest.mark.parametrize(("question", "tool"), [
    ("Worum ging es im Herbst bei Let's Encrypt? Kurzer Überblick bitte", "SearchAndAskArticles"),
    ("о чём писали прошлой зимой про Let's Encrypt? кратенько", "SearchAndAskArticles"),
    ("the Ruby posts from May, in a nutshell", "SearchAndAskArticles"),
    ("Show me the Ruby posts from May, just the list", "SearchArticles"),
    ("Let's Encrypt posts from last winter", "SearchArticles"),
])
def test_a_word_for_the_answers_form_asks_for_a_digest_of_what_is_found(question: str, tool: str) -> None:
    assert fallback_decision(question, TODAY).tool == tool, question


def test_a_clause_opened_by_a_preposition_has_no_imperative() -> None:
    assert write_intent("Wie hat sich die Versionierung von Ruby entwickelt? Bitte von den frühesten Artikeln an") is None
    assert write_intent("Kannst du einen neuen Beitrag anlegen: „Ruby-Stammtisch in Köln am 12. März“?") is not None


def test_the_possessive_a_removed_period_leaves_is_no_topic() -> None:
    decision = fallback_decision("last month's posts pls", TODAY)
    assert decision.tool == "SearchArticles" and "text" not in decision.arguments, decision.arguments
    assert fallback_decision("Let's Encrypt posts from last month", TODAY).arguments["text"] == "Let s Encrypt"


def test_two_characters_are_no_name_that_proves_a_topic() -> None:
    from router.relevance import _names

    assert _names("реши уравнение x^2 - 5x + 6 = 0", "реши уравнение x 2 5x + 6 0") == []
    assert _names("Что нового в YJIT и Ruby3?", "YJIT Ruby3") == ["YJIT", "Ruby3"]


@pytest.mark.parametrize("question", [
    "что было на прошлой неделе?", "Was gab es letzte Woche?", "what was there last month?",
])
def test_a_question_about_what_a_period_holds_has_no_topic(question: str) -> None:
    from router.gate import topic_words

    assert topic_words(question, TODAY) == ""  # nothing for the relevance signals to refuse
    assert "text" not in fallback_decision(question, TODAY).arguments


@pytest.mark.parametrize("question", [
    "help me figure out what certificate transparency logs are for",
    "Помогите понять, зачем нужен OCSP stapling",
    "Hilf mir bitte zu verstehen, wie YJIT funktioniert",
    "Explain in plain English what the REXML advisory means",
    "Переведи на человеческий язык, как работает ACME",
    "Übersetz mir in einfache Worte, was DNS-01 bedeutet",
    "Erzähl mir was über die RubyGems-Übergabe",
    "tell me a bit about the Fukuoka Ruby Award",
    "Walk me through how the ACME protocol validates a domain",
])
def test_a_request_to_explain_a_thing_in_other_words_is_an_answer(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "AskArticles", question


@pytest.mark.parametrize("question", [
    "so bored. anything good to read about YJIT?",
    "есть что почитать про Certbot?",
    "Gibt's was Neues zu lesen über OCSP?",
])
def test_something_to_read_on_a_topic_is_a_list(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchArticles", question


@pytest.mark.parametrize("question", [
    "I was away for a month, so can you list the Certbot posts for me?",
    "Мне коллега рассказал про OCSP, так что найди статьи про OCSP",
    "Ich war lange weg, also zeig mir die Beiträge über Certbot",
])
def test_a_request_after_an_opening_and_a_connective_is_the_request(question: str) -> None:
    decision = fallback_decision(question, date(2026, 7, 25))
    assert decision.tool == "SearchArticles" and decision.by_form


@pytest.mark.parametrize(("question", "tool"), [
    ("I need the list of YJIT releases plus a short explanation of what changed", "SearchAndAskArticles"),
    ("Список статей про OCSP и краткое резюме, что изменилось", "SearchAndAskArticles"),
    ("Liste der Beiträge über Certbot und eine kurze Erklärung, was neu ist", "SearchAndAskArticles"),
    ("List posts about Bundler and explanation videos", "SearchArticles"),  # a noun of the topic, not an answer
])
def test_an_answer_asked_for_by_its_noun_beside_a_list_is_combined(question: str, tool: str) -> None:
    assert fallback_decision(question, TODAY).tool == tool


@pytest.mark.parametrize(("question", "model_tool"), [
    # no verb, no question: the articles named with their filters, or a topic alone (measured on the tuned
    # cases with no other form read: 187 of 190 such labels are a list; the small model answered 16 of them)
    ("Beiträge zu Certbot seit März 2025", "SearchAndAskArticles"),
    ("last year's November posts on Certbot, please", "SearchAndAskArticles"),
    ("Die neuesten Beiträge zu OCSP zuerst, bitte", "SearchAndAskArticles"),
    ("Für meinen Vortrag bräuchte ich die Meldungen über OCSP, danke schon mal", "AskArticles"),
    ("CVE-2020-10933", "AskArticles"), ("ruby 3.3.8 release announcement", "AskArticles"),
])
def test_a_noun_phrase_naming_the_articles_is_a_list_whatever_a_small_model_picks(
    question: str, model_tool: str,
) -> None:
    from router.code_filters import fill_filters

    decision = fallback_decision(question, TODAY)
    assert decision.reading is not None and decision.form_tool == "SearchArticles", decision
    tool, _ = fill_filters(model_tool, {}, decision.reading, form_tool=decision.form_tool)
    assert tool == "SearchArticles"


@pytest.mark.parametrize("question", [
    "lol my cert expired AGAIN do they even send expiration emails anymore or what",
    "Mir ist langweilig – erzähl mir was über den Fukuoka Ruby Award und seine Geschichte",
])
def test_a_message_of_no_form_the_rules_read_is_left_to_the_model(question: str) -> None:
    # a clause with a verb and no articles named: the model's choice stands (it answered these right)
    assert fallback_decision(question, TODAY).form_tool is None


@pytest.mark.parametrize("question", [
    "Welche Beiträge über Certbot sind 2025 erschienen? Fass sie auf Englisch zusammen.",
    "Which posts covered YJIT last year? Summarize them.",
    "Какие статьи про Bundler вышли в прошлом году? Перескажи их.",
])
def test_a_listing_question_followed_by_a_request_to_answer_is_combined(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchAndAskArticles", question


@pytest.mark.parametrize("question", [
    "Any Let's Encrypt posts from 2021 about root certificates?", "any Ruby news between March 10 and March 31, 2014?",
    "Any YJIT release posts?",
])
def test_any_with_the_articles_a_few_words_later_is_an_existence_question(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchArticles", question


@pytest.mark.parametrize("question", [
    "what did you post about YJIT last month? just the list", "Что писали про Bundler весной? Только список.",
    "Was gab es im Mai zu Certbot? Nur die Liste, bitte.",
])
def test_the_list_only_is_a_search_whatever_the_rest_asks(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchArticles", question


@pytest.mark.parametrize("question", [
    "Can I get the Let's Encrypt year-end letters, newest to oldest?", "Could I see all the posts on Bundler 2?",
    "Можно посмотреть статьи про YJIT?", "Kann ich die Beiträge über Certbot sehen?",
])
def test_asking_to_be_given_the_articles_is_a_search(question: str) -> None:
    assert fallback_decision(question, TODAY).tool == "SearchArticles", question


@pytest.mark.parametrize(("question", "tool", "articles", "answer"), [
    # a question word after its preposition is a question
    ("О чём пишут англоязычные статьи про OCSP? Ответ хотелось бы на немецком.", "AskArticles", "en", "de"),
    ("Worüber berichten die russischen Beiträge zu YJIT?", "AskArticles", "ru", "de"),
    ("В чём разница между Ruby 3.3 и 3.4?", "AskArticles", "ru", "ru"),
    # "What do … articles say": a question about their content, not which articles exist
    ("What do English-language articles say about OCSP? I'd like the answer in German.", "AskArticles", "en", "de"),
    # which articles, with an answer asked in a named language: something is to be answered
    ("Which German posts cover YJIT? Answer in English.", "SearchAndAskArticles", "de", "en"),
])
def test_questions_read_by_their_form_with_both_languages(question: str, tool: str, articles: str, answer: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert (decision.tool, decision.arguments.get("language"), decision.arguments.get("answerLanguage")) == (
        tool, articles, answer), decision


@pytest.mark.parametrize(("question", "tool", "text"), [
    # the list only, in any form; what it says is how, not what
    ("какие релизы Ruby выходили в 2019 году? мне просто списком", "SearchArticles", "релизы Ruby"),
    ("Was wurde vor zwei Jahren veröffentlicht? Bitte als Liste", "SearchArticles", None),
    ("Which YJIT posts came out last year, as a list please", "SearchArticles", "YJIT"),
    # verbs of publication say when, not what
    ("Welche Artikel kamen im letzten Monat raus?", "SearchArticles", None),
    ("покажи всё, что опубликовано с 10 по 20 марта 2026", "SearchArticles", None),
    # "подскажи" before a question word asks
    ("привет! подскажи, как отозвать сертификат Let's Encrypt?", "AskArticles", None),
    # a past existence question lists
    ("Gab es vor drei Wochen Beiträge zu Let's Encrypt?", "SearchArticles", "Let s Encrypt"),
    ("Were there any posts about OCSP in 2020?", "SearchArticles", "OCSP"),
    ("Были ли статьи про OCSP в 2020 году?", "SearchArticles", "OCSP"),
    # the topic of a combined request stands in the request to answer when the search names none
    ("поищи на всех языках и объясни, что за уязвимость CVE-2025-25186", "SearchAndAskArticles",
     "уязвимость CVE-2025-25186"),
    ("Gab es in den vergangenen 45 Tagen was Neues zur Überwachung von Zertifikaten? Erklär kurz",
     "SearchAndAskArticles", "Überwachung Zertifikaten"),  # "was Neues": what a period holds, no topic
])
def test_round_twelve_forms(question: str, tool: str, text: str | None) -> None:
    decision = fallback_decision(question, date(2026, 10, 1))
    assert (decision.tool, decision.arguments.get("text")) == (tool, text), decision.arguments


@pytest.mark.parametrize("question", [
    # a thing to write that is no answer: a playbook, a config, a manifest
    "Schreib mir ein Ansible-Playbook, das Certbot installiert", "Write a docker-compose config for a Ruby app",
    "Сгенерируй Helm-чарт для нашего сервиса", "Напиши конфиг nginx для редиректа на https",
    # an entry in another system, its German verb last after a modal
    "Könntest du mir für Freitag eine Erinnerung eintragen?", "Kannst du mir ein GitLab-Issue zum Ruby-Update anlegen?",
    # a timer, an alarm, a reminder said with its time, tickets counted
    "start a timer for five minutes", "заведи будильник на восемь", "Stell mir einen Timer auf zehn Minuten",
    "напомни в пятницу обновить certbot", "remind me on Monday to renew the cert", "erinnere mich übermorgen ans Update",
    "buy three tickets for EuRuKo", "забронируй два билета на RubyConf",
    "напомни в следующую среду продлить сертификат", "поставь созвон с командой на пятницу",
    "Trag mir für den nächsten Montag einen Termin ein: Certbot-Update",
    # a holiday's wishes with thanks or a line of their own
    "Merry Christmas, and thanks for all the work this year!", "С Новым годом! Всех благ и удачи",
    "Frohe Weihnachten euch allen und danke für alles",
])
async def test_a_thing_to_make_elsewhere_is_refused(question: str) -> None:
    assert (await rules_verdict(question)).refused, question


@pytest.mark.parametrize("question", [
    "Find the posts about the Ansible playbook for Certbot", "Какие статьи есть про конфиг nginx для Let's Encrypt?",
    "Gibt es Beiträge darüber, wie man ein Ticket bei Let's Encrypt anlegt?",
])
async def test_the_articles_about_such_a_thing_are_no_task(question: str) -> None:
    verdict = await rules_verdict(question)
    assert not verdict.refused, (question, verdict.reason)
