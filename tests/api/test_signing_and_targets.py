"""Pure pieces of the webhook path: the signature (and the verification code in docs/api.md),
the SSRF address policy, the back-off schedule."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest

from infra import webhook_signing
from infra.settings import Settings
from infra.ssrf import UnsafeTarget, check_target, forbidden_reason, parse_target
from tests.api.support import stack_settings
from workers.tasks.webhooks import retry_delay

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SECRET = "whsec_test-secret"
BODY = b'{"id": "job_x", "status": "succeeded"}'


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    headers = webhook_signing.sign_headers(SECRET, BODY, now=1_800_000_000)
    assert headers["Turnout-Timestamp"] == "1800000000"
    expected = hmac.new(SECRET.encode(), b"1800000000." + BODY, hashlib.sha256).hexdigest()
    assert headers["Turnout-Signature"] == f"v1={expected}"
    assert webhook_signing.verify(SECRET, headers, BODY, now=1_800_000_100) == 1_800_000_000


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda h, b: (h, b + b" "), "does not match"),
        (lambda h, b: ({**h, "Turnout-Timestamp": "1800000001"}, b), "does not match"),
        (lambda h, b: ({k: v for k, v in h.items() if k != "Turnout-Signature"}, b), "missing"),
        (lambda h, b: ({**h, "Turnout-Timestamp": "soon"}, b), "not an integer"),
    ],
)
def test_tampering_is_detected(mutate: Any, message: str) -> None:
    headers, body = mutate(webhook_signing.sign_headers(SECRET, BODY, now=1_800_000_000), BODY)
    with pytest.raises(webhook_signing.SignatureError, match=message):
        webhook_signing.verify(SECRET, headers, body, now=1_800_000_000)


def test_stale_timestamps_and_rotated_secrets() -> None:
    headers = webhook_signing.sign_headers(SECRET, BODY, now=1_800_000_000)
    with pytest.raises(webhook_signing.SignatureError, match="tolerance"):
        webhook_signing.verify(SECRET, headers, BODY, now=1_800_000_000 + 301)
    old = webhook_signing.sign_headers("whsec_old", BODY, now=1_800_000_000)["Turnout-Signature"]
    rotated = {**headers, "turnout-signature": f"{old}, {headers['Turnout-Signature']}"}
    rotated.pop("Turnout-Signature")
    assert webhook_signing.verify(SECRET, rotated, BODY, now=1_800_000_000) == 1_800_000_000


def test_the_documented_verification_code_works() -> None:
    """docs/api.md's standalone receiver snippet accepts a real delivery and refuses a forged one."""
    block = re.search(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert block is not None, "docs/api.md lost its verification example"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(DOCS), "exec"), namespace)  # our own documentation, run as written
    verify = namespace["verify_turnout_webhook"]
    headers = webhook_signing.sign_headers(SECRET, BODY)
    verify(SECRET, headers, BODY)
    with pytest.raises(ValueError, match="bad signature"):
        verify("whsec_other", headers, BODY)
    with pytest.raises(ValueError, match="bad signature"):
        verify(SECRET, headers, BODY.replace(b"succeeded", b"failed"))


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


def test_backoff_grows_with_jitter_up_to_the_cap(settings: Settings) -> None:
    s = stack_settings(settings, webhook_retry_base_s=30.0, webhook_retry_max_s=3600.0)
    for attempt in (1, 2, 3, 4, 5, 6):
        lower = 30.0 * 2 ** (attempt - 1)
        delays = [retry_delay(s, attempt) for _ in range(50)]
        assert all(lower <= d <= min(lower + 30.0, 3600.0) for d in delays), (attempt, delays)
        assert len(set(delays)) > 1  # jittered: not every delivery retries in lockstep
    assert {retry_delay(s, 12) for _ in range(20)} == {3600.0}
