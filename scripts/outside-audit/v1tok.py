"""Version-1 tokens (AES-256-GCM, from the engine before round integrity), sealed from the
layout documented in src/service/token.rs, for the migration-window probes. Needs the ring key
(the auditor runs the server with a ring it chose)."""

import hashlib
import hmac

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESGCMSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives import hashes


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fld(tag, wire, payload):
    key = varint((tag << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def commitment_v1(seed: bytes, expires_ms: int) -> bytes:
    return fld(1, 2, seed) + fld(2, 0, expires_ms & (2**64 - 1))


def commitment_bound(seed, expires_ms, round_id, nonce, table_id, decks):
    out = fld(1, 2, seed) + fld(2, 0, expires_ms & (2**64 - 1))
    if round_id:
        out += fld(3, 2, round_id.encode())
    if nonce:
        out += fld(4, 0, nonce)
    if table_id:
        out += fld(5, 2, table_id.encode())
    if decks:
        out += fld(6, 0, decks)
    return out


def round_v1(seed, client_seed, nonce, decks, round_id, complete, cards, bets, decisions, paytable):
    out = fld(1, 2, seed) + (fld(2, 2, client_seed.encode()) if client_seed else b"")
    if nonce:
        out += fld(3, 0, nonce)
    out += fld(4, 0, decks)
    if round_id:
        out += fld(5, 2, round_id.encode())
    if complete:
        out += fld(6, 0, 1)
    out += fld(7, 2, bytes(cards))
    out += fld(8, 2, b"".join(varint(b) for b in bets))
    out += fld(9, 2, bytes(decisions))
    out += fld(10, 2, b"".join(varint(o) for o in paytable))
    return out


def seal_v1(ring_key: bytes, key_id: str, kind: bytes, payload: bytes) -> bytes:
    head = bytes([1]) + kind + bytes([len(key_id)]) + key_id.encode()
    nk = hmac.new(ring_key, b"reddog/token-nonce/v1", hashlib.sha256).digest()
    nonce = hmac.new(nk, head + payload, hashlib.sha256).digest()[:12]
    return head + nonce + AESGCM(ring_key).encrypt(nonce, payload, head)


def seal_v2(ring_key: bytes, key_id: str, kind: bytes, payload: bytes) -> bytes:
    def sub(info):
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"reddog/token/v2", info=info).derive(ring_key)
    head = bytes([2]) + kind + bytes([len(key_id)]) + key_id.encode()
    nonce = hmac.new(sub(b"reddog/token/v2/nonce"), head + payload, hashlib.sha256).digest()[:12]
    return head + nonce + AESGCMSIV(sub(b"reddog/token/v2/aead")).encrypt(nonce, payload, head)


def open_v2(ring_key: bytes, token: bytes) -> bytes:
    def sub(info):
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"reddog/token/v2", info=info).derive(ring_key)
    n = token[2]
    head = token[:3 + n]
    nonce = token[3 + n:15 + n]
    return AESGCMSIV(sub(b"reddog/token/v2/aead")).decrypt(nonce, token[15 + n:], head)
