import pytest
from pydantic import ValidationError

from infra.settings import ConfigError, Settings


def test_openai_embeddings_without_endpoint_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNOUT_EMBEDDING_PROVIDER", "openai")
    monkeypatch.delenv("TURNOUT_EMBEDDING_BASE_URL", raising=False)
    with pytest.raises(ValidationError, match="TURNOUT_EMBEDDING_BASE_URL"):
        Settings()


def test_limits_read_from_their_own_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNOUT_LIMIT_MAX_ROUNDS", "2")
    assert Settings().limits.max_rounds == 2
    monkeypatch.setenv("TURNOUT_LIMIT_MAX_ROUNDS", "0")
    with pytest.raises(ValidationError):
        Settings()


def test_missing_service_urls_say_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNOUT_DATABASE_URL", "")
    with pytest.raises(ConfigError, match="turnout up"):
        Settings().require_services()


def test_llm_unset_means_degraded_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TURNOUT_LLM_BASE_URL", raising=False)
    assert Settings().llm_configured is False


def test_rag_retrieval_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNOUT_RAG_RETRIEVAL", "lexical")
    monkeypatch.setenv("TURNOUT_RAG_LEXICAL_WEIGHT", "3")
    settings = Settings()
    assert settings.rag_retrieval == "lexical" and settings.rag_lexical_weight == 3.0
    monkeypatch.setenv("TURNOUT_RAG_RETRIEVAL", "fuzzy")
    with pytest.raises(ValidationError, match="rag_retrieval"):
        Settings()
    monkeypatch.setenv("TURNOUT_RAG_RETRIEVAL", "hybrid")
    monkeypatch.setenv("TURNOUT_RAG_LEXICAL_WEIGHT", "0")
    monkeypatch.setenv("TURNOUT_RAG_VECTOR_WEIGHT", "0")
    with pytest.raises(ValidationError, match="both 0"):
        Settings()
    # The keyword list counts its weak weight when its match is weak: with the vectors at 0 too,
    # such questions would be ranked by nothing.
    monkeypatch.setenv("TURNOUT_RAG_LEXICAL_WEIGHT", "2")
    monkeypatch.setenv("TURNOUT_RAG_LEXICAL_WEAK_WEIGHT", "0")
    with pytest.raises(ValidationError, match="LEXICAL_WEAK_WEIGHT are both 0"):
        Settings()
    monkeypatch.setenv("TURNOUT_RAG_VECTOR_WEIGHT", "1")
    assert Settings().rag_lexical_weak_weight == 0.0


def test_key_budgets_empty_is_unlimited_and_a_negative_one_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from decimal import Decimal

    from pydantic import ValidationError

    monkeypatch.setenv("TURNOUT_KEY_DAILY_BUDGET_USD", "")
    monkeypatch.setenv("TURNOUT_KEY_MONTHLY_BUDGET_USD", "12.5")
    monkeypatch.setenv("TURNOUT_KEY_MONTHLY_BUDGET_TOKENS", "1000000")
    s = Settings()
    assert (s.key_daily_budget_usd, s.key_monthly_budget_usd, s.key_daily_budget_tokens,
            s.key_monthly_budget_tokens) == (None, Decimal("12.5"), None, 1_000_000)
    monkeypatch.setenv("TURNOUT_KEY_DAILY_BUDGET_TOKENS", "-5")
    with pytest.raises(ValidationError, match="key_daily_budget_tokens"):
        Settings()


def test_jobs_per_key_in_flight_is_checked_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().jobs_per_key_in_flight == 4  # the default: half the router's threads in `turnout up`
    monkeypatch.setenv("TURNOUT_JOBS_PER_KEY_IN_FLIGHT", "0")  # no cap: the plain FIFO
    assert Settings().jobs_per_key_in_flight == 0
    for bad in ("-1", "two", "1.5", "10001"):
        monkeypatch.setenv("TURNOUT_JOBS_PER_KEY_IN_FLIGHT", bad)
        with pytest.raises(ValidationError, match="jobs_per_key_in_flight"):
            Settings()
