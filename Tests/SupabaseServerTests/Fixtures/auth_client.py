"""Drives /auth/v1 with the OFFICIAL supabase Python client (supabase / supabase_auth packages).

Usage: auth_client.py BASE_URL
Environment: SUPABASE_ANON_KEY, SUPABASE_SERVICE_KEY.
Signs up, signs in, writes a message as the signed-in user (the client sends the session's token), refreshes the
session and signs out. Asserts as it goes; on failure prints a clear message to stderr and exits 1. On success
prints one JSON summary line.
"""

import json
import os
import sys
import uuid

from supabase import ClientOptions, create_client
from supabase_auth.errors import AuthApiError

from fixture_checks import check, fail


def main():
    if len(sys.argv) != 2:
        fail("usage: auth_client.py BASE_URL")
    base_url = sys.argv[1]
    try:
        anon_key = os.environ["SUPABASE_ANON_KEY"]
        service_key = os.environ["SUPABASE_SERVICE_KEY"]
    except KeyError as missing:
        fail(f"environment variable {missing} is not set")
    options = ClientOptions(auto_refresh_token=False, persist_session=False)
    client = create_client(base_url, anon_key, options=options)
    admin = create_client(base_url, service_key, options=options)
    email = f"py-{uuid.uuid4().hex[:8]}@example.com"

    signed_up = client.auth.sign_up({"email": email, "password": "py-password", "options": {"data": {"name": "Py"}}})
    check(signed_up.session is not None and signed_up.user.email == email, f"sign_up returned {signed_up!r}")
    check(signed_up.user.user_metadata == {"name": "Py"}, f"metadata {signed_up.user.user_metadata!r}")
    try:
        client.auth.sign_in_with_password({"email": email, "password": "wrong-password"})
        fail("a wrong password signed in")
    except AuthApiError as error:
        check(error.code == "invalid_credentials", f"wrong password gave {error.code!r}")

    session = client.auth.sign_in_with_password({"email": email, "password": "py-password"}).session
    user_id = session.user.id
    check(client.auth.get_user().user.id == user_id, "get_user names another user")

    # Writes through REST carry the session's token: RLS sees the new user.
    conversation = admin.table("conversations").insert({"title": "auth"}).execute().data[0]["id"]
    admin.table("members").insert({"conversation_id": conversation, "user_id": user_id}).execute()
    client.table("messages").insert({"conversation_id": conversation, "sender_id": user_id, "body": "signed in"}).execute()
    mine = client.table("messages").select("body,sender_id").eq("conversation_id", conversation).execute().data
    check(mine == [{"body": "signed in", "sender_id": user_id}], f"messages as the user {mine!r}")

    refreshed = client.auth.refresh_session()
    check(refreshed.session.refresh_token != session.refresh_token, "the refresh token did not rotate")
    updated = client.auth.update_user({"data": {"theme": "dark"}})
    check(updated.user.user_metadata.get("theme") == "dark", f"update_user returned {updated.user.user_metadata!r}")
    client.auth.sign_out()
    check(client.auth.get_session() is None, "a session is left after sign_out")
    try:
        client.auth.refresh_session(refreshed.session.refresh_token)
        fail("a signed-out session refreshed")
    except AuthApiError as error:
        check(error.code == "refresh_token_not_found", f"refresh after sign_out gave {error.code!r}")
    print(json.dumps({"ok": True, "user": user_id}))


if __name__ == "__main__":
    main()
