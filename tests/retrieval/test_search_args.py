"""SearchArticles argument validation and normalization (SPEC §5): pure code, no services."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from infra.results import NormalizedSearch
from infra.settings import Limits
from retrieval.search import (
    TEXT_MAX_CHARS,
    SearchArgs,
    SearchArgumentError,
    fallback_terms,
    normalize_search,
    search_args_schema,
)

TODAY = date(2026, 11, 29)
LIMITS = Limits()


def normalize(**raw: Any) -> NormalizedSearch:
    return normalize_search(raw, limits=LIMITS, today=TODAY)


def rejected(raw: dict[str, Any]) -> SearchArgumentError:
    with pytest.raises(SearchArgumentError) as caught:
        normalize_search(raw, limits=LIMITS, today=TODAY)
    return caught.value


def test_defaults_without_arguments() -> None:
    query = normalize()
    assert query.wire() == {
        "text": None, "language": None, "dateFrom": None, "dateTo": None, "sort": "newest",
        "page": 1, "pageSize": LIMITS.page_size_default, "adjustments": [],
    }


def test_full_arguments_are_kept_as_given() -> None:
    query = normalize(text="  Ruby   release ", language="DE", dateFrom="2024-01-01", dateTo="2024-12-31",
                      sort="Oldest", page=3, pageSize=10)
    assert (query.text, query.language, query.sort) == ("Ruby release", "de", "oldest")
    assert (query.date_from, query.date_to) == (date(2024, 1, 1), date(2024, 12, 31))
    assert (query.page, query.page_size, query.adjustments) == (3, 10, [])


def test_unknown_argument_is_rejected_by_name() -> None:
    error = rejected({"text": "ruby", "hidden": True})
    assert error.field == "hidden"
    assert "unknown argument 'hidden'" in error.message and "pageSize" in error.message


def test_snake_case_names_are_not_wire_names() -> None:
    assert rejected({"page_size": 10}).field == "page_size"


@pytest.mark.parametrize("field", ["dateFrom", "dateTo"])
@pytest.mark.parametrize("value", ["2026-13-01", "2025-02-30", "yesterday", "2026/01/05", "2026-1-5",
                                   "2026-01-05T10:00:00Z"])
def test_malformed_date_names_the_field(field: str, value: str) -> None:
    error = rejected({field: value})
    assert error.field == field
    assert error.message.startswith(field) and value in error.message
    assert str(error) == error.message


def test_date_of_wrong_type_names_the_field() -> None:
    error = rejected({"dateTo": 20260101})
    assert error.field == "dateTo" and "string" in error.message


def test_date_from_after_date_to_is_rejected() -> None:
    error = rejected({"dateFrom": "2025-03-02", "dateTo": "2025-03-01"})
    assert error.field == "dateFrom" and "after dateTo 2025-03-01" in error.message


def test_same_day_range_is_allowed() -> None:
    query = normalize(dateFrom="2025-03-01", dateTo="2025-03-01")
    assert query.date_from == query.date_to == date(2025, 3, 1)


def test_future_date_to_is_clamped_to_today_and_reported() -> None:
    query = normalize(dateFrom="2026-01-01", dateTo="2031-12-31")
    assert query.date_to == TODAY
    assert query.adjustments == [f"dateTo 2031-12-31 is after today; clamped to {TODAY}"]


def test_future_date_from_is_rejected_with_a_reason() -> None:
    error = rejected({"dateFrom": "2027-01-01"})
    assert error.field == "dateFrom" and "after today" in error.message


@pytest.mark.parametrize(("raw", "expected", "note"), [
    ({"pageSize": 51}, (1, 50), "pageSize 51 clamped to 50"),
    ({"pageSize": 0}, (1, 1), "pageSize 0 clamped to 1"),
    ({"pageSize": -5}, (1, 1), "pageSize -5 clamped to 1"),
    ({"page": 0}, (1, 20), "page 0 clamped to 1"),
    ({"page": -3}, (1, 20), "page -3 clamped to 1"),
    ({"page": 10**12}, (100_000, 20), f"page {10**12} clamped to 100000"),
])
def test_out_of_range_paging_is_clamped_and_reported(raw: dict[str, Any], expected: tuple[int, int],
                                                     note: str) -> None:
    query = normalize(**raw)
    assert (query.page, query.page_size) == expected
    assert query.adjustments == [note]


def test_page_size_limit_comes_from_settings() -> None:
    limits = Limits(page_size_default=5, page_size_max=8)
    assert normalize_search({}, limits=limits, today=TODAY).page_size == 5
    assert normalize_search({"pageSize": 9}, limits=limits, today=TODAY).page_size == 8


@pytest.mark.parametrize(("field", "value"), [("language", "fr"), ("language", "German"), ("sort", "relevance")])
def test_unsupported_choice_is_rejected(field: str, value: str) -> None:
    error = rejected({field: value})
    assert error.field == field and repr(value.lower()) in error.message


@pytest.mark.parametrize(("field", "value"), [("page", "2"), ("page", 2.5), ("page", True), ("pageSize", "20"),
                                              ("text", 42), ("language", 7), ("language", [1]),
                                              ("language", {"ru": 1}), ("sort", 1)])
def test_wrong_type_is_rejected(field: str, value: Any) -> None:
    assert rejected({field: value}).field == field


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(SearchArgumentError) as caught:
        normalize_search(["text"], limits=LIMITS, today=TODAY)  # type: ignore[arg-type]
    assert caught.value.field == "arguments"


def test_nulls_and_empty_strings_count_as_absent() -> None:
    query = normalize(text="   ", language="", dateFrom=None, sort=None, page=None)
    assert (query.text, query.language, query.date_from, query.sort, query.page) == (None, None, None, "newest", 1)


def test_overlong_text_is_cut_at_a_word_and_reported() -> None:
    raw = "ruby " * 2000
    query = normalize(text=raw)
    assert query.text is not None and len(query.text) <= TEXT_MAX_CHARS
    assert query.text.split() == ["ruby"] * len(query.text.split())
    assert query.adjustments == [f"text of {len(raw)} characters truncated to {len(query.text)} (max {TEXT_MAX_CHARS})"]


def test_control_characters_are_removed_from_text() -> None:
    assert normalize(text="a\x00b\tc\r\nd\x1b").text == "a b c d"


def test_error_survives_celery_style_rebuild() -> None:
    error = rejected({"dateFrom": "nope"})
    rebuilt = type(error)(*error.args)
    assert (rebuilt.field, rebuilt.message, str(rebuilt)) == (error.field, error.message, str(error))


def test_normalized_query_round_trips_through_the_wire() -> None:
    query = normalize(text="Ruby", dateTo="2030-01-01", pageSize=99)
    assert NormalizedSearch.model_validate(query.wire()) == query


def test_schema_is_closed_and_lists_the_wire_names() -> None:
    schema = search_args_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"text", "language", "dateFrom", "dateTo", "sort", "page", "pageSize"}
    assert set(schema["properties"]) == {f.alias or n for n, f in SearchArgs.model_fields.items()}
    code = {"type": "string", "enum": ["ru", "en", "de"]}
    assert schema["properties"]["language"] == {
        "description": schema["properties"]["language"]["description"],
        "anyOf": [code, {"type": "array", "items": code, "minItems": 1, "maxItems": 3, "uniqueItems": True}],
    }
    assert schema["properties"]["dateTo"]["format"] == "date"
    assert schema["properties"]["page"]["type"] == "integer"
    assert "at most 50" in schema["properties"]["pageSize"]["description"]
    assert "null" not in str(schema)
    assert [name for name, prop in schema["properties"].items() if "anyOf" in prop] == ["language"]


@pytest.mark.parametrize(("given", "normalized"), [
    ("de", "de"), (["de"], "de"), ([" EN", "ru"], ["en", "ru"]), (["ru", "de"], ["de", "ru"]),
    (["ru", "de", "ru"], ["de", "ru"]), (["ru", "en", "de"], ["de", "en", "ru"]), ([], None),
])
def test_language_takes_a_code_or_a_list_of_codes_in_one_normal_form(given: Any, normalized: Any) -> None:
    query = normalize(language=given)
    assert query.language == normalized
    assert query.wire()["language"] == normalized  # echoed on the wire as normalized
    assert NormalizedSearch.model_validate(query.wire()) == query


@pytest.mark.parametrize("given", [["de", "fr"], ["xx"], "fr", ["en", ""]])
def test_a_bad_code_in_a_language_list_is_rejected_by_name(given: Any) -> None:
    error = rejected({"language": given})
    bad = next(code for code in ([given] if isinstance(given, str) else given) if code not in ("ru", "en", "de"))
    assert error.field == "language" and f"language {bad!r} is not supported" in error.message


def test_a_forged_wire_language_list_is_checked_and_normalized() -> None:
    assert NormalizedSearch.model_validate({"language": ["ru", "de"]}).language == ["de", "ru"]
    with pytest.raises(ValueError, match="'fr' is not supported"):
        NormalizedSearch.model_validate({"language": ["ru", "fr"]})


@pytest.mark.parametrize(("text", "terms"), [
    ("Sicherheitslü", ["Sicherheitslü"]),
    ("(CVE-2025-2518), 3.4!", ["CVE-2025-2518", "3.4"]),
    ('"Let\'s Encrypt" go', ["Let's", "Encrypt"]),
    ("ab %% __ ''", []),
    ("Ruby ruby RUBY", ["Ruby"]),
])
def test_fallback_terms(text: str, terms: list[str]) -> None:
    assert fallback_terms(text) == terms
