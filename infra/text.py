"""Markup to plain text, shared by indexing (search) and chunking (RAG)."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from html.parser import HTMLParser

from markdown_it import MarkdownIt

# Tags that end a block: each becomes a paragraph break, so the chunker can cut there.
_BLOCK_TAGS = {
    "p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "blockquote", "table",
    "section", "article", "header", "footer", "hr", "dl", "dt", "dd", "figure", "figcaption",
}
_CELL_TAGS = {"td", "th"}
_SKIP_TAGS = {"script", "style", "template", "noscript"}


class _TextExtractor(HTMLParser):
    """Text of an HTML document: blocks become paragraphs, image alt text is kept, scripts and
    styles are dropped, character references are decoded by the parser."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP_TAGS:
            self._skip += 1
        elif self._skip:
            return
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n\n")
        elif tag in _CELL_TAGS:
            self.parts.append(" ")
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt:
                self.parts.append(f" {alt} ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in _SKIP_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif not self._skip and tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


# Liquid/Hugo template tags are not Markdown or HTML: no parser of either knows them.
_LIQUID = re.compile(r"\{%.*?%\}|\{\{<.*?>\}\}|\{\{.*?\}\}", re.S)
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANKS = re.compile(r"\n\s*\n+")
# CommonMark with tables and strikethrough; raw HTML inside Markdown passes to the HTML parser.
_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def html_to_text(markup: str) -> str:
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    return "".join(parser.parts)


def markdown_to_html(markup: str) -> str:
    return _MARKDOWN.render(markup)


def to_plain_text(body: str, body_format: str = "html") -> str:
    """Plain text of a body: Markdown is rendered by markdown-it-py, HTML read by an HTML parser
    (links keep their text, reference definitions and markup vanish, code keeps its text);
    template tags are dropped; paragraphs come out separated by a blank line."""
    text = _LIQUID.sub("", body)  # no space: a tag inside a link target must not break the link
    if body_format.startswith("markdown"):
        text = markdown_to_html(text)
    text = html_to_text(text)
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
