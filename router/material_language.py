"""The seed's language rule: which language's articles a question is about.

The answer language and the material language "by default coincide", and a user may ask in
Russian for German articles (seed 000). So, in order:
1. the languages the question names for the articles ("German articles", "на немецком",
   "auf Englisch"; several: a list) -- a request for the *answer's* language ("answer in
   English", "fass sie auf Deutsch zusammen") is not one;
2. "in any / all (three) languages" -> no language filter (None); a language left out ("anything but
   German", "кроме английских") -> the other languages;
3. the client's `language` (a UI locale passed at submission);
4. the language the question is written in.
The cues (which languages the question names, and in which role) are read by the question
reader (`router.reader`); this module holds the rule that turns them into the search's filter.
The same rule runs after a model's call (the gateway) and in the fallback router, so a model
that omits `language` and one that (rightly) sends the question's language run the same search.
"""

from __future__ import annotations

from infra.results import LANGUAGES, Language, LanguageFilter
from router.reader import LanguageCues, language_cues

__all__ = ["LanguageCues", "language_cues", "material_language"]


def material_language(
    cues: LanguageCues, *, written_in: Language, client: Language | None = None, proposed: Language | None = None
) -> LanguageFilter | None:
    """The articles' language to search (None: every language; several named: the list), by the seed's rule.

    ``proposed`` is what a model sent: kept only when it differs from the default it would be
    replaced by and the question names no language itself (the model may have read a naming
    the patterns miss, e.g. a language given by country)."""
    if cues.named is not None:
        return cues.named
    if len(cues.several) >= 2:  # "the Russian and the German announcements": both, as one filter
        return sorted(cues.several)
    left_out = cues.excluded if len(cues.excluded) < len(LANGUAGES) else ()  # all three left out: none is
    if cues.all_languages and not left_out:
        return None
    if left_out:  # "anything but German": the other languages
        others = [language for language in LANGUAGES if language not in left_out]
        return others[0] if len(others) == 1 else sorted(others)
    if proposed is not None and proposed != written_in:
        return proposed
    return client or written_in
