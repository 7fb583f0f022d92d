"""The collection's capitals put back into a message typed all in lower case (router/casing.py)."""

from __future__ import annotations

from router.casing import Casing

TEXTS = [
    "Renewals use ARI now. The ARI endpoint tells clients when to renew.",
    "Die Laufzeit der Zertifikate sinkt. Eine kurze Laufzeit hilft.",
    "We ran Certbot twice. Then certbot said nothing.",  # a lower-case use: no form of its own
    "Use the staging environment first. Staging has its own roots.",  # capitalised only at a sentence start
    "Once only: the Orbit tool.",
]


def test_a_word_takes_the_form_the_collection_nearly_always_writes() -> None:
    casing = Casing.learned(TEXTS)
    assert casing.restored("how does ari work and why is laufzeit shorter") == \
        "how does ARI work and why is Laufzeit shorter"
    # written both ways, capitalised only where a sentence starts, or seen once: kept as typed
    assert casing.restored("is certbot on staging with orbit") == "is certbot on staging with orbit"


def test_a_message_that_uses_case_is_left_as_typed() -> None:
    assert Casing.learned(TEXTS).restored("How does ari work") == "How does ari work"
