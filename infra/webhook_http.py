"""The webhook HTTP client: connects only to the address that was checked (no DNS rebinding).

`PinnedTransport` resolves the request's host once (`infra.ssrf.check_host`: every answer must
be public unless private targets are allowed), then sends the request to one of those IPs (the
next one only when a connection to the previous is refused) with the
original `Host` header and, for https, the original name as TLS server name (httpcore's
`sni_hostname` extension), so the certificate is still checked against the name. httpx never
resolves the name itself. The client follows no redirects and takes no proxy from the
environment (a proxy would resolve the name again, out of our sight).
"""

from __future__ import annotations

import httpx

from infra.ssrf import IPAddress, check_host

__all__ = ["PinnedTransport", "pinned_client"]


class PinnedTransport(httpx.AsyncBaseTransport):
    def __init__(self, *, allow_private: bool) -> None:
        self._allow_private = allow_private
        # No keep-alive: the pool is keyed by IP, and a kept TLS connection verified for one name
        # must not carry a request for another name on the same address.
        self._inner = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_keepalive_connections=0), trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        # UnsafeTarget / UnresolvableTarget propagate: the caller records why nothing was sent.
        addresses = await check_host(host, port, allow_private=self._allow_private)
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            extensions["sni_hostname"] = host
        for n, address in enumerate(addresses, start=1):
            pinned = httpx.Request(
                request.method, request.url.copy_with(host=str(address)), headers=request.headers,  # keeps Host
                stream=request.stream, extensions=extensions,
            )
            try:
                return await self._inner.handle_async_request(pinned)
            except httpx.ConnectError as exc:
                if n < len(addresses):
                    continue  # another checked address of the same lookup (e.g. IPv6, then IPv4)
                raise _naming(exc, address, host, request) from exc
            except httpx.TransportError as exc:
                raise _naming(exc, address, host, request) from exc
        raise AssertionError("check_host returns at least one address")  # pragma: no cover

    async def aclose(self) -> None:
        await self._inner.aclose()


def _naming(exc: httpx.TransportError, address: IPAddress, host: str, request: httpx.Request) -> httpx.TransportError:
    """The same error, saying where the connection went (the attempt log shows it)."""
    return type(exc)(f"{exc} (connecting to {address}, the checked address of {host})", request=request)


def pinned_client(*, timeout_s: float, allow_private: bool) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=PinnedTransport(allow_private=allow_private), timeout=timeout_s,
        follow_redirects=False, trust_env=False,
    )
