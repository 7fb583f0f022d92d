"""What an MCP tool call submits as a job (through api/submission.py, as `POST /v1/questions`): the
`AskTurnout` tool's arguments checked, the job's question, language, the host's chosen call and,
for a follow-up, the job it continues."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from api.submission import NewJob
from infra.messages.job import ToolCall
from infra.results import LANGUAGES
from infra.settings import Limits
from infra.text import squash_controls

SOURCE = "mcp"  # the jobs' `source`
ASK_TURNOUT = "AskTurnout"
ASK_TURNOUT_DESCRIPTION = (
    "Ask Turnout a free-text question about its articles; Turnout's own router picks the search, the "
    "answer or both (use it when you would rather not choose filters yourself). For a follow-up "
    "(\"only the German ones\", \"summarize them\") pass the previous call's job id as previousJobId."
)
_ID = {"type": "string", "minLength": 1, "maxLength": 64}
ASK_TURNOUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "description": "The user's question, in their words."},
        "answerLanguage": {
            "type": "string", "enum": list(LANGUAGES),
            "description": f"Language of the answer ({', '.join(LANGUAGES)}). Default: the language of the question.",
        },
        "previousJobId": {**_ID, "description": "A follow-up: the job id of the call it continues."},
        "conversationId": {**_ID, "description": "A follow-up of the newest job of this conversation."},
    },
    "required": ["question"],
    "additionalProperties": False,
}
_ALLOWED = frozenset(ASK_TURNOUT_SCHEMA["properties"])


@dataclass(frozen=True)
class Submission:
    """What a tool call submits: the job's question and language, and the host's chosen call."""

    question: str
    answer_language: str | None
    tool_call: ToolCall | None
    previous_job_id: str | None = None  # asked for (AskTurnout)
    conversation_id: str | None = None

    def request_hash(self) -> str:
        body: dict[str, Any] = {"question": self.question, "answerLanguage": self.answer_language,
                                "toolCall": self.tool_call.wire() if self.tool_call is not None else None}
        if self.previous_job_id or self.conversation_id:  # absent as before: stored hashes stay valid
            body.update(previousJobId=self.previous_job_id, conversationId=self.conversation_id)
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def new_job(self, client: str | None) -> NewJob:
        """The job this call submits, for the MCP client `client` ("name/version")."""
        return NewJob(
            question=self.question, answer_language=self.answer_language, request_hash=self.request_hash(),
            source=SOURCE, client=client, tool_call=self.tool_call, previous_job_id=self.previous_job_id,
            conversation_id=self.conversation_id,
        )


def ask_turnout_submission(arguments: dict[str, Any], limits: Limits) -> Submission | str:
    """The submission of an `AskTurnout` call, or the `ERROR: …` text for the host's model."""
    question, language = arguments.get("question"), arguments.get("answerLanguage")
    unknown = sorted(set(arguments) - _ALLOWED)
    if unknown:
        return f"ERROR: {ASK_TURNOUT}: unknown argument {unknown[0]!r}; allowed: {', '.join(sorted(_ALLOWED))}"
    if not isinstance(question, str) or not question.strip():
        return f"ERROR: {ASK_TURNOUT}: argument 'question' must be a non-empty string"
    if len(question) > limits.question_max_chars:
        return f"ERROR: {ASK_TURNOUT}: question is {len(question)} characters; at most {limits.question_max_chars}"
    if language is not None and language not in LANGUAGES:
        return f"ERROR: {ASK_TURNOUT}: answerLanguage {language!r} is not supported; use one of {', '.join(LANGUAGES)}"
    ids = {name: arguments.get(name) for name in ("previousJobId", "conversationId")}
    for name, value in ids.items():
        if value is not None and not (isinstance(value, str) and 0 < len(value) <= 64):
            return f"ERROR: {ASK_TURNOUT}: {name} must be a job id (a string of 1..64 characters)"
    return Submission(question=squash_controls(question), answer_language=language, tool_call=None,
                      previous_job_id=ids["previousJobId"], conversation_id=ids["conversationId"])
