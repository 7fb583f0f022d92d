"""Pure pieces of the webhook path: Standard Webhooks signatures (checked with two independent
verifiers, and the receiver code in docs/api.md), the SSRF address policy, the pinned transport,
the retry schedule."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook as StandardWebhook
from standardwebhooks.webhooks import WebhookVerificationError as StandardError
from svix.webhooks import Webhook as SvixWebhook
from svix.webhooks import WebhookVerificationError as SvixError

from infra import webhook_signing
from infra.settings import Settings
from infra.ssrf import UnsafeTarget, check_target, forbidden_reason, parse_target
from infra.webhook_http import PinnedTransport, pinned_client
from tests.api.support import stack_settings
from workers.tasks.webhooks import retry_delay

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()  # a Standard Webhooks secret
OTHER = "whsec_" + base64.b64encode(bytes(range(1, 33))).decode()
BODY = b'{"type": "job.succeeded", "timestamp": "2027-01-01T00:00:00Z", "data": {"id": "job_x"}}'


def _both_verify(secret: str, headers: dict[str, str], body: bytes) -> None:
    """Standard Webhooks' own verifier and Svix's, as receivers run them."""
    StandardWebhook(secret).verify(body, headers)
    SvixWebhook(secret).verify(body, headers)


def test_signature_is_standard_webhooks_v1_over_id_timestamp_body() -> None:
    now = int(time.time())
    headers = webhook_signing.sign_headers(SECRET, "17", BODY, now=now)
    assert headers["webhook-id"] == "17" and headers["webhook-timestamp"] == str(now)
    key = base64.b64decode(SECRET.removeprefix("whsec_"))  # the HMAC key is the decoded secret
    expected = base64.b64encode(hmac.new(key, f"17.{now}.".encode() + BODY, hashlib.sha256).digest()).decode()
    assert headers["webhook-signature"] == f"v1,{expected}"
    _both_verify(SECRET, headers, BODY)
    assert webhook_signing.verify(SECRET, headers, BODY) == "17"


@pytest.mark.parametrize(
    "tamper",
    [
        lambda h, b: ({**h, "webhook-id": "18"}, b),  # a replay under a new delivery id
        lambda h, b: ({**h, "webhook-timestamp": str(int(h["webhook-timestamp"]) + 1)}, b),
        lambda h, b: (h, b.replace(b"succeeded", b"failed")),
        lambda h, b: ({k: v for k, v in h.items() if k != "webhook-signature"}, b),
    ],
    ids=["id", "timestamp", "body", "no-signature"],
)
def test_tampering_fails_both_verifiers(tamper: Any) -> None:
    headers, body = tamper(webhook_signing.sign_headers(SECRET, "17", BODY), BODY)
    with pytest.raises(StandardError):
        StandardWebhook(SECRET).verify(body, headers)
    with pytest.raises(SvixError):
        SvixWebhook(SECRET).verify(body, headers)
    with pytest.raises(webhook_signing.SignatureError):
        webhook_signing.verify(SECRET, headers, body)


def test_stale_timestamps_and_other_secrets_fail() -> None:
    stale = webhook_signing.sign_headers(SECRET, "17", BODY, now=time.time() - 301)
    with pytest.raises(webhook_signing.SignatureError, match="too old"):
        webhook_signing.verify(SECRET, stale, BODY)
    with pytest.raises(webhook_signing.SignatureError, match="No matching signature"):
        webhook_signing.verify(OTHER, webhook_signing.sign_headers(SECRET, "17", BODY), BODY)


def test_rotation_sends_two_signatures_each_verifies() -> None:
    headers = webhook_signing.sign_headers([SECRET, OTHER], "17", BODY)
    assert len(headers["webhook-signature"].split(" ")) == 2
    _both_verify(SECRET, headers, BODY)  # a receiver that switched already
    _both_verify(OTHER, headers, BODY)  # a receiver still on the previous secret


def test_new_secrets_are_standard_and_legacy_ones_keep_their_key() -> None:
    secret = webhook_signing.new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert webhook_signing.is_standard(secret) and secret != webhook_signing.new_secret()
    _both_verify(secret, webhook_signing.sign_headers(secret, "1", BODY), BODY)
    # A key issued before Standard Webhooks (token_urlsafe, not base64): its bytes are the HMAC key.
    legacy = "whsec_" + "Ab-_" * 10 + "xyz"
    assert not webhook_signing.is_standard(legacy)
    headers = webhook_signing.sign_headers(legacy, "1", BODY)
    StandardWebhook(legacy.encode()).verify(BODY, headers)
    assert webhook_signing.verify(legacy, headers, BODY) == "1"


def test_the_documented_receiver_verifies_with_standardwebhooks() -> None:
    """docs/api.md's receiver snippet accepts a real delivery and refuses a forged one."""
    block = re.search(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert block is not None, "docs/api.md lost its verification example"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(DOCS), "exec"), namespace)  # our own documentation, run as written
    receive = namespace["receive_turnout_webhook"]
    headers = webhook_signing.sign_headers(SECRET, "17", BODY)
    assert receive(SECRET, headers, BODY)["type"] == "job.succeeded"
    with pytest.raises(StandardError):
        receive(OTHER, headers, BODY)
    with pytest.raises(StandardError):
        receive(SECRET, {**headers, "webhook-id": "18"}, BODY)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.7", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "private"),  # link-local is also in Python's private table
        ("fe80::1", "private"),
        ("fc00::1", "private"),
        ("224.0.0.251", "multicast"),
        ("0.0.0.0", "private"),
        ("100.64.0.1", "not globally routable"),  # carrier-grade NAT
        ("::ffff:10.0.0.1", "private"),  # IPv4-mapped
        ("2002:7f00:1::", "loopback"),  # 6to4 wrapping 127.0.0.1
        ("240.0.0.1", "private"),
    ],
)
def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is None


async def test_check_target_resolves_names_and_honours_the_switch() -> None:
    with pytest.raises(UnsafeTarget, match="localhost resolves to .* loopback"):
        await check_target("http://localhost:9/hook", allow_private=False)
    assert ipaddress.ip_address("127.0.0.1") in await check_target("http://localhost:9/hook", allow_private=True)
    with pytest.raises(UnsafeTarget, match="only http and https"):
        await check_target("gopher://example.com/", allow_private=True)
    with pytest.raises(UnsafeTarget, match="does not resolve"):
        await check_target("http://no-such-host.invalid/", allow_private=True)
    assert parse_target("https://example.com/x") == ("example.com", 443)
    with pytest.raises(UnsafeTarget, match="not a valid URL"):
        parse_target("http://example.com:99999/")


def test_retry_schedule_with_jitter_and_retry_after(settings: Settings) -> None:
    s = stack_settings(settings, webhook_retry_schedule_s=(5.0, 300.0, 1800.0), webhook_retry_jitter=0.1)
    for attempt, step in ((1, 5.0), (2, 300.0), (3, 1800.0)):
        delays = [retry_delay(s, attempt) for _ in range(50)]
        assert all(d is not None and step <= d <= step * 1.1 for d in delays), (attempt, delays)
        assert len(set(delays)) > 1  # jittered: not every delivery retries in lockstep
    assert retry_delay(s, 4) is None  # the schedule is used up: dead-letter
    # Retry-After lengthens a wait, up to the schedule's longest step; it never shortens one.
    assert retry_delay(s, 1, retry_after_s=120.0) == 120.0
    assert retry_delay(s, 1, retry_after_s=99_999.0) == 1800.0
    assert 300.0 <= (retry_delay(s, 2, retry_after_s=1.0) or 0) <= 330.0


def test_the_default_schedule_is_the_standard_webhooks_example() -> None:
    assert Settings().webhook_retry_schedule_s == (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
    assert Settings().webhook_endpoint_disable_after_s == 3 * 86400


async def test_pinned_transport_sends_to_the_checked_address_with_the_original_name() -> None:
    """The request leaves with the IP that was checked as its URL host; Host and the TLS server
    name (sni_hostname) stay the original name; an unsafe name is refused before any send."""
    seen: list[httpx.Request] = []
    transport = PinnedTransport(allow_private=True)
    transport._inner = httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(204))  # type: ignore[assignment,func-returns-value]
    async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
        assert (await client.post("https://localhost:8443/hook?x=1", content=b"{}")).status_code == 204
    [sent] = seen
    assert sent.url.host in ("127.0.0.1", "::1") and sent.url.port == 8443 and sent.url.path == "/hook"
    assert sent.headers["host"] == "localhost:8443" and sent.extensions["sni_hostname"] == "localhost"
    strict = pinned_client(timeout_s=1, allow_private=False)
    async with strict:
        with pytest.raises(UnsafeTarget, match="loopback"):
            await strict.post("http://localhost:9/hook", content=b"{}")
    assert strict._trust_env is False and strict.follow_redirects is False


async def test_pinned_transport_tries_the_next_checked_address_only_when_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two addresses from one lookup: a refused connection to the first goes on to the second;
    other errors (a timeout) are not retried on another address, and the error names the address."""
    from infra import webhook_http

    async def two_addresses(host: str, port: int, *, allow_private: bool) -> list[Any]:
        return [ipaddress.ip_address("2001:db8::1"), ipaddress.ip_address("198.51.100.7")]

    monkeypatch.setattr(webhook_http, "check_host", two_addresses)
    tried: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        tried.append(request.url.host)
        if request.url.host == "2001:db8::1":
            raise httpx.ConnectError("refused", request=request)
        if request.headers.get("x-timeout"):
            raise httpx.ReadTimeout("slow", request=request)
        return httpx.Response(200)

    transport = PinnedTransport(allow_private=False)
    transport._inner = httpx.MockTransport(handler)  # type: ignore[assignment]
    async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
        assert (await client.post("https://hooks.example.com/h", content=b"{}")).status_code == 200
        assert tried == ["2001:db8::1", "198.51.100.7"]
        with pytest.raises(httpx.ReadTimeout, match=r"connecting to 198\.51\.100\.7, the checked address of hooks"):
            await client.post("https://hooks.example.com/h", content=b"{}", headers={"x-timeout": "1"})


def test_retry_after_reads_seconds_and_http_dates() -> None:
    from email.utils import format_datetime

    from infra.transient import parse_retry_after

    assert parse_retry_after("120") == 120.0
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=90), usegmt=True)
    assert 85 <= (parse_retry_after(soon) or 0) <= 90
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
