"""The answer check's language rule on real text: how often it calls a text of the asked language
wrong, and how often it lets a text of another language through.

Snippets of 1-3 consecutive sentences (markup, links and code left out) from the shared corpus's
articles, one an article, stand for replies: each is checked against its own language and
against the two others with ``retrieval.answer_check.in_language``. Then the answer eval's judge
(`retrieval.answer_eval.answer_language`, names left out) beside lingua over all the words, on three
draws of snippets: how many each reads as another language.

``.venv/bin/python -m bench.language_check [--corpus PATH]`` (~20 s, no services).
"""

from __future__ import annotations

import argparse
import random
import re
from collections import Counter
from pathlib import Path

from infra.corpus import ArticleRecord, read_corpus
from infra.results import LANGUAGES
from infra.text_language import detect
from retrieval.answer_check import in_language
from retrieval.answer_eval import answer_language
from retrieval.chunking import split_sentences

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "articles.jsonl"
_MARKUP = re.compile(r"\[[^\]]*\]\([^)]*\)|\[\d+\]:.*|https?://\S+|`[^`]*`|\{%[^%]*%\}|\{\{[^}]*\}\}")


def snippets(corpus: Path, seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for record in read_corpus(corpus):
        if not isinstance(record, ArticleRecord):
            continue
        body = " ".join(_MARKUP.sub(" ", record.body_html_or_md).split())
        sentences = [s for s in split_sentences(body) if len(s) > 20]
        if len(sentences) >= 3:
            start = rng.randrange(len(sentences) - 2)
            out.append((record.language, " ".join(sentences[start:start + rng.choice((1, 2, 3))])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    wrong_own: Counter[str] = Counter()
    passed_other: Counter[tuple[str, str]] = Counter()
    count: Counter[str] = Counter()
    for language, text in snippets(args.corpus):
        count[language] += 1
        wrong_own[language] += not in_language(text, language)
        for asked in LANGUAGES:
            if asked != language:
                passed_other[(language, asked)] += in_language(text, asked)
    print("| snippets in | n | called not in their own language | passed as " + " | passed as ".join(LANGUAGES) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in LANGUAGES) + " |")
    for language in LANGUAGES:
        n = count[language]
        cells = ["–" if asked == language else f"{passed_other[(language, asked)]} ({passed_other[(language, asked)] / n:.1%})"
                 for asked in LANGUAGES]
        print(f"| {language} | {n} | {wrong_own[language]} ({wrong_own[language] / n:.1%}) | " + " | ".join(cells) + " |")
    print()
    print("| draw (seed) | misread by lingua over all words (ru / en / de) | by the judge, names left out |")
    print("| ---: | ---: | ---: |")
    for seed in (7, 8, 9):
        drawn = snippets(args.corpus, seed)
        misread = {reader.__name__: Counter(language for language, text in drawn if reader(text) != language)
                   for reader in (detect, answer_language)}
        cells = [" / ".join(str(m[language]) for language in LANGUAGES) + f" ({sum(m.values())})"
                 for m in misread.values()]
        print(f"| {seed} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
