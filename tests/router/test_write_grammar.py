"""The write-intent grammar by structure (router/write_intent.py): an imperative of a verb that does
not read, with the collection as its object, is a write whatever the verb; the reading verbs, a
question and a noun that only looks like an imperative are not. None of these verbs is in the
grammar's list of write verbs. Pure: no database."""

from __future__ import annotations

import pytest

from router.write_intent import write_intent


@pytest.mark.parametrize("question", [
    # English: a clause-first verb with a determiner after it
    "Merge the three Bundler posts", "Duplicate the OCSP article", "Pin all posts about RubyKaigi",
    "Bump the Ruby 3.4 article to the front page", "Could you flag these articles as outdated?",
    "Translate the Certbot post into Spanish and store it",
    # Russian: the imperative by its ending
    "Продублируй статью про OCSP", "Закрепи все статьи про RubyKaigi", "Поправь ошибку в заголовке статьи",
    "Пожалуйста, сохрани эту статью в избранное", "Объедините две статьи про Bundler",
    # German: verb first with the object's article after it, or a non-reading infinitive last
    "Dupliziere den Beitrag über OCSP", "Verschiebe bitte alle Artikel über Ruby 1.8 ins Archiv",
    "Berichtige den Fehler im Titel des Beitrags", "Den Artikel über Certbot bitte oben anheften",
])
def test_an_imperative_of_a_verb_that_does_not_read_on_the_collection_is_a_write(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize("question", [
    "Check the posts about OCSP", "Browse the articles on YJIT", "Compare the two Bundler posts",
    "Walk me through the posts about Certbot", "Write a summary of the articles about OCSP",
    "Проверь статьи про OCSP", "Прочитай статью про Bundler и перескажи её", "Уязвимости в статьях про REXML",
    "Последние статьи про Ruby", "Свежие новости про Rails",
    "Haben die Beiträge über Ruby Kommentare?", "Bitte die Artikel über OCSP zusammenfassen",
    "Ich möchte die Beiträge über YJIT lesen", "Kannst du mir die Beiträge zu Ruby raussuchen?",
    "need the latest Ruby security news", "Ruby 3.4.5 Artikel", "How do I merge two certificates?",
])
def test_a_reading_verb_a_question_or_a_noun_first_is_no_write(question: str) -> None:
    assert write_intent(question) is None, question


@pytest.mark.parametrize("question", [
    # a modal before a Russian infinitive that does not read, after an opener
    "слушай, а можешь поправить подпись у статьи про Certbot?", "Можете переименовать заметку о YJIT?",
    "ну можешь убрать статью про OCSP из ленты?",
    # a write verb typed with two letters swapped or one dropped, after a short "pls"
    "pls edti the Certbot renewal post and drop the last paragraph", "plz remvoe the YJIT article",
    "bitte lösceh den Beitrag über OCSP",
    # a name of four words between the verb and its object
    "rename the Let's Encrypt privacy policy article",
])
def test_a_modal_infinitive_a_misspelt_verb_and_a_long_name_are_writes(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize("question", [
    "слушай, а можешь найти статьи про Certbot?", "Можете рассказать, что писали о YJIT?",
    "ну можешь объяснить статью про OCSP?", "можешь почитать статьи про Rails и сказать, что нового?",
    "pls show the Certbot renewal posts", "plz list the YJIT articles",
])
def test_a_modal_before_a_reading_verb_is_no_write(question: str) -> None:
    assert write_intent(question) is None, question


@pytest.mark.parametrize("question", [
    # a wish whose object the collection is, the change a participle after it
    "I'd like every OCSP post from before 2015 archived and taken off the site.",
    "It would be great if the post about Certbot were removed.", "The article about OCSP should be deleted.",
    # a wish with a clause of its own: чтобы / dass, the change its predicate or an infinitive
    "Нужно, чтобы новость «Ruby 2.0 вышел» была переименована.", "Хочу, чтобы ты удалил заметку про Heartbleed.",
    "А можно ли убрать из ленты статью про YJIT? Она устарела.",
    "Ich möchte, dass der Titel des Artikels über Bundler geändert wird.",
    # German verb-second: the modal between the subject and the state asked for
    "Die Beiträge über RubyConf sollen nicht mehr sichtbar sein.",
])
def test_a_wish_that_the_collection_be_changed_is_a_write(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize("question", [
    # the change is what the articles are about, or what the user wants to learn
    "I want the posts published last year about Ruby", "I need posts about features removed in Ruby 3.0",
    "I need articles on the APIs removed in Ruby 3.0", "I want to know which posts were removed",
    "I need the articles that were updated in 2024", "Find articles on why OCSP should be removed",
    "Which posts say that SHA-1 must be removed?",
    "Хочу узнать, что изменилось в статьях о Ruby 3.4", "Мне нужны статьи о том, почему удалили OCSP",
    "Нужно найти статьи, где описано, как удалить сертификат", "Нужны статьи про то, что удалено в Ruby 3.0",
    "Ich will wissen, was in Ruby 3.4 entfernt wurde", "Ich möchte Artikel darüber, was aus Ruby 3.0 entfernt wurde",
    "Ich brauche Beiträge zu Funktionen, die in Ruby 3.0 entfernt wurden",
])
def test_a_wish_to_read_about_a_change_is_no_write(question: str) -> None:
    assert write_intent(question) is None, question


def test_a_dash_ends_the_clause_a_write_verb_acts_in() -> None:
    """ "Я хочу удалить сертификат — есть статьи, как это сделать?": the certificate is what would be
    deleted; the articles are what is asked for, in the clause after the dash."""
    assert write_intent("Я хочу удалить сертификат Let's Encrypt — есть статьи, как это сделать?") is None
    assert write_intent("Ich will mein Zertifikat löschen – gibt es Beiträge dazu?") is None
    assert write_intent("Удали статью про OCSP — она устарела") is not None


@pytest.mark.parametrize("question", [
    "Добрый день! Интересует YJIT — подберите статьи, пожалуйста.", "Перечислите статьи про OCSP",
    "Сравните статьи про Bundler 2 и 3",
])
def test_a_polite_plural_of_a_reading_verb_is_no_write(question: str) -> None:
    assert write_intent(question) is None, question


@pytest.mark.parametrize("question", [
    "сравни, как про DST Root CA X3 пишут в русской и немецкой версиях статей",  # "немецкой": an adjective
    "игнорируй мелкие патч-релизы, покажи статьи про выход Ruby 3.0.0",  # the articles are "покажи"'s
    "Laut den russischen Artikeln: Was ist lencr.org?",  # "laut": according to
    "Ignore the minor releases and list the posts about Ruby 3.0",
])
def test_an_adjective_a_preposition_or_a_later_reading_verb_is_no_write(question: str) -> None:
    assert write_intent(question) is None, question


@pytest.mark.parametrize("question", ["скрой из выдачи все новости 2013 года", "удали из ленты все посты про Ruby 1.8"])
def test_a_verb_of_change_reaches_its_object_past_where_from(question: str) -> None:
    assert write_intent(question) is not None, question


@pytest.mark.parametrize(("question", "writes"), [
    # taking the articles reads them
    ("Take the earliest posts on Bundler and explain what went wrong", False),
    ("Возьми последние статьи про OCSP и объясни, что изменилось", False),
    ("Nimm die neuesten Beiträge zu Certbot und fasse sie zusammen", False),
    # taken away, they change
    ("Take down every post about Ruby 1.8", True),
    ("please take the Certbot article offline", True),
    ("Nimm den Artikel über Ruby 1.9 bitte raus", True),
])
def test_taking_the_articles_reads_them_and_taking_them_down_changes_them(question: str, writes: bool) -> None:
    assert (write_intent(question) is not None) is writes, question


@pytest.mark.parametrize(("question", "writes"), [
    ("zeig mir die beiträge von vor drei wochen", False),  # lower case: "wochen" is the period's, no verb
    ("füg nen neuen artikel hinzu: ruby treffen in köln", True),  # colloquial "nen", the imperative without -e
])
def test_a_lower_case_period_word_is_no_verb_and_a_colloquial_article_is_an_article(question: str,
                                                                                    writes: bool) -> None:
    assert (write_intent(question) is not None) is writes, question


@pytest.mark.parametrize("question", [
    # an -ing form opens a participle clause, not an imperative
    "Taking the Russian posts as the source, explain in English what OCSP stapling is",
    "Reading the German articles only, tell me what changed in Bundler 2",
    # the collection noun inside a question clause is that clause's, not the verb's object
    "Уточни, как в статьях про OCSP описан переход на CRL",
    "Выясни, что в новостях про RubyGems сказано о MFA",
    # German: the verb last in a question clause after a comma is that clause's; the articles its subject
    "Erklär mir, was die englischen Beiträge zum Ende von Ruby 1.8 berichten",
    "Such die Meldungen zu OpenSSL und sag mir, welche Pakete betroffen waren",
])
def test_a_participle_or_a_question_clause_holds_no_write(question: str) -> None:
    assert write_intent(question) is None, question


@pytest.mark.parametrize("question", ["прошлой осенью статьи про Bundler", "позапрошлой весной новости про YJIT"])
def test_a_period_word_first_is_no_imperative(question: str) -> None:
    assert write_intent(question) is None, question


def test_a_period_in_words_before_the_last_verb_keeps_the_verb_in_place() -> None:
    """The reader's spans are of the text with the year in digits: the German last word is still found in them."""
    assert write_intent("zeig mal die beiträge von zweitausendzwanzig bis vor 6 monaten") is None
    assert write_intent("bitte den beitrag über ocsp aus zweitausendzwanzig löschen") is not None
