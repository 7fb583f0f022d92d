"""The `refused` result: a message that is no request to read the collection, answered in the
user's language. The model's own words are never shown (they could be anything); the reason is
audited and kept in `routedReason`."""

from __future__ import annotations

from infra.results import Language, QuestionResult, Usage
from infra.status import ResultStatus, ResultType

REFUSAL: dict[Language, str] = {
    "en": "Turnout answers questions about its articles. This message is not one, so nothing was searched.",
    "ru": "Turnout отвечает на вопросы о своих статьях. Это сообщение не такой вопрос, поэтому поиск не выполнялся.",
    "de": "Turnout beantwortet Fragen zu seinen Artikeln. Diese Nachricht ist keine solche Frage, "
          "daher wurde nichts gesucht.",
}


def refusal(language: Language, *, routed_by: str, routed_reason: str, usage: Usage) -> QuestionResult:
    """The refused result in `language`, saying who decided it and why."""
    return QuestionResult(
        result_type=ResultType.ANSWER,
        status=ResultStatus.REFUSED,
        answer_language=language,
        message=REFUSAL[language],
        routed_by=routed_by,  # type: ignore[arg-type]
        routed_reason=routed_reason,
        usage=usage,
    )
