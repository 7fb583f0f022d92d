"""The messages between processes, one module per hop (pydantic, camelCase on the wire).

- `job`: the API's `run_job` message (`JobMessage`: the question as stored, for the runner).
- `ask`: the router's `turnout.rag.answer` call (`AskRequest`) and its reply (`AskOutcome`).
- search: `turnout.search.search` carries `infra.results.NormalizedSearch` and answers an
  `infra.results.ArticlesPage` (they are parts of the result document too, so they live there).
- the stored result: `infra.results.QuestionResult` (`JobRow.result`, parsed when the row is read).

Senders pass these models (never a dict built by hand; tests/infra/test_messages.py checks the
send sites); receivers validate the JSON body with the same model. A message from before a
deploy still parses: new fields have defaults.
"""
