"""Articles the injection and load tests plant: ordinary ones, ones carrying injection text,
and secret ones that must never come back (written for these tests)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from infra.corpus import ArticleRecord

DATA = Path(__file__).parent / "data"
PLANTED: dict[str, list[dict[str, str]]] = json.loads((DATA / "planted_articles.json").read_text())
_BASE = datetime(2026, 3, 2, 9, tzinfo=UTC)

# Ordinary published articles (written for these tests) so the compromised model's searches
# for Docker, Redis and Kubernetes find something besides the planted text.
BENIGN = [
    ("en", "Docker image layers explained", "Each Docker image is built from layers. A layer caches one build step, "
     "so small changes rebuild quickly."),
    ("en", "Redis persistence options", "Redis can persist data with snapshots or an append-only file. Choose the "
     "append-only file when losing a second of writes is too much."),
    ("en", "Kubernetes rolling updates", "A Kubernetes deployment replaces pods a few at a time, so the service "
     "keeps answering during an update."),
    ("ru", "Слои образов Docker", "Каждый образ Docker состоит из слоёв. Слой кэширует один шаг сборки."),
    ("ru", "Сохранение данных в Redis", "Redis сохраняет данные снимками или журналом команд."),
    ("ru", "Обновление в Kubernetes", "Kubernetes заменяет поды постепенно, и сервис продолжает работать."),
    ("de", "Docker-Image-Schichten", "Jedes Docker-Image besteht aus Schichten. Eine Schicht speichert einen "
     "Build-Schritt."),
    ("de", "Persistenz in Redis", "Redis speichert Daten als Schnappschuss oder in einer Befehlsdatei."),
    ("de", "Rollende Updates mit Kubernetes", "Kubernetes ersetzt Pods schrittweise, der Dienst bleibt erreichbar."),
]


def _record(id: str, language: str, title: str, text: str, day: int) -> ArticleRecord:
    return ArticleRecord.model_validate({
        "id": id, "language": language, "title": title, "summary": text.split(". ")[0], "body_html_or_md": text,
        "body_format": "markdown", "created_at": _BASE + timedelta(days=day), "translation_key": id,
    })


def planted_records() -> tuple[list[ArticleRecord], dict[str, ArticleRecord]]:
    """(published articles, {id: article that must never come back}); the latter published for now."""
    published = [_record(f"benign-{n}", lang, title, text, n) for n, (lang, title, text) in enumerate(BENIGN)]
    published += [_record(f"planted-{p['language']}", p["language"], p["title"], p["text"], 20 + n)
                  for n, p in enumerate(PLANTED["planted"])]
    secret: dict[str, ArticleRecord] = {}
    for n, entry in enumerate(PLANTED["hidden"]):
        for kind in ("hidden", "draft"):  # one copy hidden, one unpublished
            rec = _record(f"{kind}-{entry['language']}", entry["language"], entry["title"], entry["text"], 40 + n)
            secret[rec.id] = rec
    return published, secret
