"""The model's reply tidied before it is checked (retrieval/answer_tidy.py)."""

from __future__ import annotations

from retrieval.answer_tidy import tidy_answer


def test_a_sentence_said_again_goes_whatever_its_list_number_or_citation() -> None:
    looped = ("Port 80 must stay open for the HTTP-01 challenge [1].\n"
              "1. Port 80 is not used for TLS.\n2. Port 80 is not used for TLS [1].\n3. port 80 is not used for TLS!")
    assert tidy_answer(looped, cut=False) == "Port 80 must stay open for the HTTP-01 challenge [1].\n1. Port 80 is not used for TLS."
    inline = "YJIT is a JIT compiler [1]. It was built by Shopify [1]. YJIT is a JIT compiler [2]."
    assert tidy_answer(inline, cut=False) == "YJIT is a JIT compiler [1]. It was built by Shopify [1]."


def test_a_reply_the_cap_stopped_is_marked_where_it_was_cut_and_keeps_what_it_said() -> None:
    cut = "Affected: resolv 0.2.2 and earlier for Ruby 3.2 [1]. Ruby 3.3: resolv 0.3.0 and ear"
    assert tidy_answer(cut, cut=True) == cut + "…"
    begun = "Steps:\n1. Use the staging endpoint acme-staging-v02 [1].\n2. Pass --test-cert to certbot [1].\n3."
    assert tidy_answer(begun, cut=True) == "Steps:\n1. Use the staging endpoint acme-staging-v02 [1].\n" \
                                           "2. Pass --test-cert to certbot [1]."
    finished = "Both IPv4 and IPv6 addresses are supported [1]."
    assert tidy_answer(finished, cut=True) == finished


def test_a_reply_that_ended_by_itself_is_left_as_written() -> None:
    plain = "Es gibt drei Challenge-Typen: HTTP-01, DNS-01 und TLS-ALPN-01 [1]\n\n- HTTP-01 braucht Port 80"
    assert tidy_answer(plain, cut=False) == plain


def test_a_line_nothing_was_dropped_from_keeps_its_spacing() -> None:
    code = "Run it like this [1]:\n\n    certbot certonly  --test-cert\n    certbot renew"
    assert tidy_answer(code, cut=False) == code


def test_a_reply_that_writes_the_fence_ends_before_it() -> None:
    # The model answered, then wrote the material's closing line and copied the prompt back.
    copied = ("Нет, на shared-хостинге GoDaddy это пока не рекомендуется [1]. <<<END MATERIAL 95821d6e428b>>>\n\n"
              "[1] Сертификаты Let's Encrypt на хостинге GoDaddy (ru)\nНас часто спрашивают …")
    assert tidy_answer(copied, cut=False) == "Нет, на shared-хостинге GoDaddy это пока не рекомендуется [1]."
    assert tidy_answer("<<<MATERIAL 1a2b>>>\n[1] Title (en)\nPassage text.", cut=True) == ""
    # The cap stopped the copy, not the answer before the fence: that is not marked as cut.
    unfinished = "Es gibt drei Challenge-Typen: HTTP-01, DNS-01 und TLS-ALPN-01 [1]"
    assert tidy_answer(unfinished + "\n<<<END MATERIAL 1a2b>>>\n[1] Let's Encrypt (de)\nDie Chall", cut=True) == unfinished
