"""Drives the Supabase-like storage with the OFFICIAL supabase / storage3 client.

Usage: storage_client.py BASE_URL   (env SUPABASE_SERVICE_KEY, SUPABASE_USER_KEY)
Prints "storage3 ok" on success; any failure raises (non-zero exit).
"""
import sys
import os

import httpx
from supabase import create_client
from storage3.exceptions import StorageApiError


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def main():
    base_url = sys.argv[1]
    service_key = os.environ["SUPABASE_SERVICE_KEY"]
    user_key = os.environ["SUPABASE_USER_KEY"]

    admin = create_client(base_url, service_key)
    admin.storage.create_bucket("py-bucket", options={"public": False, "file_size_limit": "1MB"})
    buckets = [b.id for b in admin.storage.list_buckets()]
    expect("py-bucket" in buckets, f"bucket missing from {buckets}")
    expect(admin.storage.get_bucket("py-bucket").file_size_limit == 1 << 20, "file_size_limit not kept")

    # An authenticated user (the client sends the key as apikey and bearer).
    user = create_client(base_url, user_key)
    bucket = user.storage.from_("py-bucket")

    response = bucket.upload("folder/hello.txt", b"hello from storage3",
                             {"content-type": "text/plain", "cache-control": "120"})
    expect(response.path == "folder/hello.txt", f"upload path {response.path}")
    expect(response.full_path == "py-bucket/folder/hello.txt", f"upload key {response.full_path}")
    expect(bucket.download("folder/hello.txt") == b"hello from storage3", "download mismatch")

    try:
        bucket.upload("folder/hello.txt", b"again")
        raise AssertionError("duplicate upload was accepted")
    except StorageApiError as error:
        expect(str(error.status) == "409", f"duplicate status {error.status}")
    bucket.upload("folder/hello.txt", b"replaced", {"upsert": "true", "content-type": "text/plain"})
    expect(bucket.download("folder/hello.txt") == b"replaced", "upsert did not replace")

    info = bucket.info("folder/hello.txt")
    expect(info["size"] == len(b"replaced"), f"info {info}")
    expect(bucket.exists("folder/hello.txt"), "exists() false for a stored object")
    expect(not bucket.exists("folder/missing.txt"), "exists() true for a missing object")

    # Signed upload: the PUT carries no Authorization header at all.
    signed = bucket.create_signed_upload_url("folder/signed.bin")
    expect(signed["token"] and "token=" in signed["signed_url"], f"signed upload {signed}")
    anonymous = create_client(base_url, service_key).storage.from_("py-bucket")
    result = anonymous.upload_to_signed_url("folder/signed.bin", signed["token"], b"\x00\x01binary\xff",
                                            {"content-type": "application/octet-stream"})
    expect(result.full_path == "py-bucket/folder/signed.bin", f"signed upload key {result.full_path}")
    raw = httpx.put(signed["signed_url"], content=b"again", headers={"content-type": "text/plain"})
    expect(raw.status_code == 400 and raw.json()["statusCode"] == "409", f"signed re-upload {raw.status_code} {raw.text}")

    # Signed download, fetched with no credentials.
    url = bucket.create_signed_url("folder/signed.bin", 60)["signedURL"]
    fetched = httpx.get(url)
    expect(fetched.status_code == 200 and fetched.content == b"\x00\x01binary\xff", f"signed download {fetched.status_code}")

    names = sorted(entry["name"] for entry in bucket.list("folder"))
    expect(names == ["hello.txt", "signed.bin"], f"list {names}")
    top = bucket.list()
    expect([entry["name"] for entry in top] == ["folder"] and top[0]["id"] is None, f"top-level list {top}")

    bucket.move("folder/hello.txt", "moved/hello.txt")
    bucket.copy("moved/hello.txt", "copied/hello.txt")
    expect(bucket.download("copied/hello.txt") == b"replaced", "copy mismatch")

    removed = bucket.remove(["moved/hello.txt", "copied/hello.txt", "folder/signed.bin"])
    expect(len(removed) == 3, f"remove returned {removed}")
    expect(bucket.list() == [], "bucket not empty after remove")

    try:
        bucket.upload("big.bin", b"x" * ((1 << 20) + 1))
        raise AssertionError("oversized upload was accepted")
    except StorageApiError as error:
        expect(str(error.status) == "413", f"oversized status {error.status}")

    admin.storage.empty_bucket("py-bucket")
    admin.storage.delete_bucket("py-bucket")
    print("storage3 ok")


if __name__ == "__main__":
    main()
