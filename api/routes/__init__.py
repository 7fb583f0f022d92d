"""Every route module, in the order they appear in the OpenAPI document."""

from fastapi import APIRouter

ROUTERS: list[APIRouter] = []
