"""A request after a conversational opening (router/intent.py `request_clause`, used by
router/fallback.py): the form and the topic are read from the clause that carries the request; a
clause that points back ("what was written about it", "such die mal raus") takes the names of the
clause before it. Phrasings not in the eval set. Pure: no database."""

from __future__ import annotations

from datetime import date

import pytest

from router.fallback import fallback_decision

TODAY = date(2026, 11, 29)


@pytest.mark.parametrize(("question", "tool", "topic"), [
    ("Okay so I'm new to all this, could you track down the posts on Bundler?", "SearchArticles", "Bundler"),
    ("I keep hearing about it at work. Has anything been posted about RubyGems MFA?", "SearchArticles",
     "RubyGems"),
    ("Мой тимлид упомянул Net::IMAP, можешь найти, что об этом писали?", "SearchArticles", "IMAP"),
    ("Wir migrieren gerade auf Ruby 3.3. Kannst du mir die Meldungen dazu raussuchen?", "SearchArticles", "Ruby"),
    ("Ich sitze gerade an einem Vortrag über ECDSA, erkläre mir kurz, was Let's Encrypt dazu sagt",
     "AskArticles", "ECDSA"),
])
def test_the_request_after_a_conversational_opening_decides(question: str, tool: str, topic: str) -> None:
    decision = fallback_decision(question, TODAY)
    assert decision.tool == tool, question
    found = decision.arguments.get("text") or decision.arguments.get("question") or ""
    assert topic.casefold() in found.casefold(), (question, decision.arguments)


def test_a_message_that_opens_with_its_request_is_read_as_before() -> None:
    decision = fallback_decision("Find posts about YJIT, please, I need them for a talk", TODAY)
    assert decision.tool == "SearchArticles" and "YJIT" in decision.arguments["text"]
