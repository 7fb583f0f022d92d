"""Markup to plain text, shared by indexing (search) and chunking (RAG)."""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata
from html.parser import HTMLParser

_BLOCK_TAGS = {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "blockquote"}
_SKIP_TAGS = {"script", "style"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS and self._skip:
            self._skip -= 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


_LIQUID = re.compile(r"\{%.*?%\}|\{\{.*?\}\}|\{\{<.*?>\}\}", re.S)
_MD_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M)
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_MD_MARKS = re.compile(r"^\s{0,3}(#{1,6}|>|[-*+]|\d+\.)\s+", re.M)
_MD_EMPH = re.compile(r"(\*\*|__|\*|`{1,3})")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANKS = re.compile(r"\n\s*\n+")


def html_to_text(markup: str) -> str:
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)


def to_plain_text(body: str, body_format: str = "html") -> str:
    """Strip HTML, Markdown and template tags; keep paragraphs as blank-line separated text."""
    text = _LIQUID.sub(" ", body)
    if body_format.startswith("markdown"):
        text = _MD_REF_DEF.sub("", text)
        text = _MD_IMAGE.sub(r"\1", text)
        text = _MD_LINK.sub(r"\1", text)
        text = _MD_MARKS.sub("", text)
        text = _MD_EMPH.sub("", text)
    text = html.unescape(html_to_text(text))
    text = _SPACES.sub(" ", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    return _BLANKS.sub("\n\n", text).strip()


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def squash_controls(text: str) -> str:
    """Control characters (NUL above all, which PostgreSQL text rejects) become spaces, and runs
    of whitespace one space: free text from a user or a model, ready to store and search."""
    return " ".join("".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text).split())
