"""Webhook target checks (SSRF): a URL must be http(s) and resolve only to public addresses.

Checked at submission (a clear 422) and again right before each delivery, since DNS can
change in between. Every address the name resolves to must be public: one private answer
is enough to refuse (a rebinding name may return it on the next lookup). Numeric tricks
(`http://2130706433/`, `http://0x7f.1/`) resolve to the address they encode and are caught
the same way. `settings.webhook_allow_private` turns the address check off (tests, private
networks that deliberately receive webhooks).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeTarget(ValueError):
    """The URL is not an acceptable webhook target; the message says why."""


class UnresolvableTarget(UnsafeTarget):
    """The host name did not resolve (may be temporary: a delivery retries it)."""


def parse_target(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL, or UnsafeTarget."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeTarget(f"not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise UnsafeTarget("only http and https URLs are allowed")
    if not parts.hostname:
        raise UnsafeTarget("the URL has no host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def forbidden_reason(address: IPAddress) -> str | None:
    """Why an address may not receive webhooks, or None when it is a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None:
            return forbidden_reason(embedded)
    checks = (
        ("loopback", address.is_loopback),
        ("private", address.is_private),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("unspecified", address.is_unspecified),
        ("not globally routable", not address.is_global),
    )
    return next((name for name, hit in checks if hit), None)


async def resolve(host: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UnresolvableTarget(f"host {host!r} does not resolve ({exc.strerror})") from exc
    # Strip an IPv6 zone id ("fe80::1%eth0") before parsing.
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos))


async def check_target(url: str, *, allow_private: bool) -> list[IPAddress]:
    """The addresses `url` resolves to, or UnsafeTarget naming the offending address."""
    host, port = parse_target(url)
    return await check_host(host, port, allow_private=allow_private)


async def check_host(host: str, port: int, *, allow_private: bool) -> list[IPAddress]:
    """Resolve `host` once and check every answer; the caller connects only to these addresses
    (infra/webhook_http.py), so a name that answers differently next time changes nothing."""
    addresses = await resolve(host, port)
    if not allow_private:
        for address in addresses:
            reason = forbidden_reason(address)
            if reason is not None:
                raise UnsafeTarget(
                    f"{host} resolves to {address}, a {reason} address; webhooks go to public addresses only "
                    "(TURNOUT_WEBHOOK_ALLOW_PRIVATE=true allows private targets)"
                )
    return addresses
