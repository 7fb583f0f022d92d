"""Naming what is wrong in a pydantic ValidationError, the same way everywhere."""

from __future__ import annotations

from pydantic import ValidationError
from pydantic_core import ErrorDetails


def first_error(exc: ValidationError, default_field: str) -> tuple[str, ErrorDetails]:
    """The first error and its field path ("a.b"), or ``default_field`` when it has no location."""
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]) or default_field, first
