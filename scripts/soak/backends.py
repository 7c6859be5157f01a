"""Talking to the reference servers from the soak scripts, with the standard library (and `cryptography` for the
XMTP-like group cipher): HS256 tokens, Supabase-like REST, the XMTP-like node's JSON API, the group envelope.

The XMTP-like wire follows Adapters/XMTP/Codec/XMTPGroupEnvelope.swift: an envelope is protobuf
``{1: group_id, 2: nonce, 3: AES-256-GCM(secret, sealed, aad=group_id)}``; the sealed message is
``{1: sender_inbox_id, 2: PlaintextEnvelope{1: V1{1: EncodedContent, 2: idempotency_key}}}``; text content is
``EncodedContent{1: ContentTypeId{xmtp.org, text, 1}, 2: {encoding: UTF-8}, 4: utf8}``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import time
import zlib

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


class HTTPFailure(Exception):
    """A request that got no answer, or an answer with an unexpected status."""

    def __init__(self, text: str, status: int | None = None, retryable: bool = True):
        super().__init__(text)
        self.status = status
        self.retryable = retryable


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
            timeout: float = 15.0) -> tuple[int, bytes]:
    """One HTTP/1.1 request to 127.0.0.1:port on a fresh connection; (status, body). Raises HTTPFailure when
    the connection fails."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException) as error:
        raise HTTPFailure(f"{method} {path.split('?')[0]}: {error.__class__.__name__}: {error}") from None
    finally:
        connection.close()


def expect(status: int, body: bytes, ok: tuple[int, ...], what: str) -> bytes:
    """`body` when `status` is one of `ok`; HTTPFailure otherwise (retryable for 5xx, 429 and 503)."""
    if status in ok:
        return body
    retryable = status >= 500 or status in (408, 429)
    raise HTTPFailure(f"{what}: HTTP {status}: {body[:300].decode('utf-8', 'replace')}", status, retryable)


# MARK: Supabase-like


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(secret: str, role: str, sub: str | None = None, lifetime: int = 86_400 * 30) -> str:
    """An HS256 token as `switchboard supabase token` signs it."""
    now = int(time.time())
    claims = {"exp": now + lifetime, "iat": now, "role": role}
    if sub is not None:
        claims["sub"] = sub
    signing = b64url(b'{"alg":"HS256","typ":"JWT"}') + "." + b64url(json.dumps(claims, sort_keys=True,
                                                                                 separators=(",", ":")).encode())
    signature = hmac.new(secret.encode(), signing.encode(), hashlib.sha256).digest()
    return signing + "." + b64url(signature)


class Supabase:
    """The Supabase-like server's REST API as the soak uses it."""

    def __init__(self, port: int, secret: str):
        self.port = port
        self.secret = secret
        self.anon = jwt(secret, "anon")
        self.service = jwt(secret, "service_role")

    def headers(self, token: str, prefer: str | None = None) -> dict:
        headers = {"apikey": self.anon, "Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        if prefer:
            headers["Prefer"] = prefer
        return headers

    def create_conversation(self, title: str, members: list[str]) -> str:
        body = json.dumps({"title": title, "is_group": len(members) > 2}).encode()
        status, answer = request(self.port, "POST", "/rest/v1/conversations", body,
                                 self.headers(self.service, "return=representation"))
        conversation = json.loads(expect(status, answer, (200, 201), "creating a conversation"))[0]["id"]
        rows = json.dumps([{"conversation_id": conversation, "user_id": member} for member in members]).encode()
        status, answer = request(self.port, "POST", "/rest/v1/members?on_conflict=conversation_id,user_id", rows,
                                 self.headers(self.service, "resolution=ignore-duplicates,return=minimal"))
        expect(status, answer, (200, 201), "adding members")
        return conversation

    def insert_message(self, token: str, message_id: str, conversation: str, sender: str, text: str) -> None:
        """Inserts a message as its sender; a repeat of the same ID is ignored (idempotent)."""
        body = json.dumps({"id": message_id, "conversation_id": conversation, "sender_id": sender,
                           "body": text}).encode()
        status, answer = request(self.port, "POST", "/rest/v1/messages?on_conflict=id", body,
                                 self.headers(token, "resolution=ignore-duplicates,return=minimal"))
        expect(status, answer, (200, 201), "inserting a message")

    def messages_after(self, conversation: str, version: int, limit: int = 1000) -> list[dict]:
        """Rows of `conversation` whose version is above `version`, in version order (service role)."""
        path = (f"/rest/v1/messages?select=id,body,sender_id,version&conversation_id=eq.{conversation}"
                f"&version=gt.{version}&order=version.asc&limit={limit}")
        status, answer = request(self.port, "GET", path, None, self.headers(self.service))
        return json.loads(expect(status, answer, (200,), "reading messages"))


# MARK: XMTP-like


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def parse_fields(data: bytes) -> dict[int, list]:
    """Protobuf fields by number (varints as ints, length-delimited as bytes); raises ValueError when malformed."""
    fields: dict[int, list] = {}
    index = 0

    def read_varint() -> int:
        nonlocal index
        shift = result = 0
        while True:
            if index >= len(data) or shift > 63:
                raise ValueError("truncated varint")
            byte = data[index]
            index += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    while index < len(data):
        key = read_varint()
        number, kind = key >> 3, key & 7
        if kind == 0:
            value = read_varint()
        elif kind == 2:
            length = read_varint()
            if index + length > len(data):
                raise ValueError("truncated field")
            value = data[index:index + length]
            index += length
        elif kind == 1:
            value, index = data[index:index + 8], index + 8
        elif kind == 5:
            value, index = data[index:index + 4], index + 4
        else:
            raise ValueError(f"wire type {kind}")
        fields.setdefault(number, []).append(value)
    return fields


def text_content(text: str) -> bytes:
    """`EncodedContent` of `xmtp.org/text:1.0`, as XMTPText.encoded() writes it."""
    content_type = field(1, b"xmtp.org") + field(2, b"text") + varint(3 << 3) + varint(1)
    parameter = field(1, b"encoding") + field(2, b"UTF-8")
    return field(1, content_type) + field(2, parameter) + field(4, text.encode())


def seal(group: bytes, secret: bytes, sender: str, key: str, content: bytes) -> bytes:
    """A group envelope carrying `content` from `sender` under idempotency key `key`."""
    v1 = field(1, content) + field(2, key.encode())
    sealed = field(1, sender.encode()) + field(2, field(1, v1))
    nonce = os.urandom(12)
    return field(1, group) + field(2, nonce) + field(3, AESGCM(secret).encrypt(nonce, sealed, group))


def open_envelope(data: bytes, group: bytes, secret: bytes) -> tuple[str, str, bytes, str | None] | None:
    """(sender, key, content bytes, text or None) of an envelope, or None when it does not open."""
    try:
        outer = parse_fields(data)
        if outer.get(1, [b""])[0] != group:
            return None
        sealed = parse_fields(AESGCM(secret).decrypt(outer[2][0], outer[3][0], group))
        sender = sealed[1][0].decode()
        v1 = parse_fields(parse_fields(sealed[2][0])[1][0])
        content = v1.get(1, [b""])[0]
        key = v1.get(2, [b""])[0].decode()
        encoded = parse_fields(content)
        content_type = parse_fields(encoded.get(1, [b""])[0])
        text = None
        if content_type.get(2, [b""])[0] == b"text":
            raw = encoded.get(4, [b""])[0]
            if 5 in encoded:  # compressed: 0 deflate (zlib-wrapped or raw), 1 gzip
                raw = zlib.decompress(raw, 31 if encoded[5][0] == 1 else (15 if raw[:1] == b"\x78" else -15))
            text = raw.decode()
        return sender, key, content, text
    except Exception:  # noqa: BLE001 - anything unreadable is "does not open"
        return None


class XMTPNode:
    """The XMTP-like node's JSON API as the soak uses it."""

    def __init__(self, port: int):
        self.port = port

    def post(self, path: str, body: dict, token: str | None = None, timeout: float = 15.0) -> dict:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        status, answer = request(self.port, "POST", path, json.dumps(body).encode(), headers, timeout)
        return json.loads(expect(status, answer, (200,), f"POST {path}") or b"{}")

    def register(self, inbox: str) -> str:
        return self.post("/identity/v1/register", {"inbox_id": inbox})["token"]

    def create_group(self, token: str, group: bytes, members: list[str]) -> None:
        self.post("/mls/v1/create-group", {"group_id": base64.b64encode(group).decode(), "members": members}, token)

    def send(self, token: str, envelope: bytes) -> None:
        self.post("/mls/v1/send-group-messages",
                  {"messages": [{"v1": {"data": base64.b64encode(envelope).decode(), "sender_hmac": "",
                                        "should_push": True}}]}, token)

    def envelopes_after(self, token: str, group: bytes, cursor: int) -> list[tuple[int, bytes]]:
        """(sequence, envelope bytes) of one page after `cursor`, ascending."""
        answer = self.post("/mls/v1/query-group-messages",
                           {"group_id": base64.b64encode(group).decode(),
                            "paging_info": {"direction": "DIRECTION_ASCENDING", "limit": 100,
                                            "id_cursor": str(cursor)}}, token)
        return [(int(item["v1"]["id"]), base64.b64decode(item["v1"]["data"])) for item in answer.get("messages", [])]
