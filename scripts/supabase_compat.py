#!/usr/bin/env python3
"""Drives `convoy serve` with the official Supabase Python client (supabase-py),
unchanged, through Green Box's flows: sign-up, sign-in, refresh, insert and
select with filters, RPC, and a Realtime INSERT subscription filtered on
recipient_id; and, given the service key, Storage as Survale uses it: a bucket,
uploads, signed upload and download URLs, download, list and remove. Prints one
JSON line of results; exits 1 on the first failure.

    scripts/.venv/bin/python3 scripts/supabase_compat.py URL ANON_KEY [SERVICE_KEY]
"""
import asyncio
import json
import os
import sys
import uuid

import httpx
import supabase
from supabase import AsyncClientOptions, acreate_client

# The library's own HTTP client, only with a longer timeout: the test suite runs
# many servers at once on a 2-core CI machine, where a request can wait seconds.
TIMEOUT = 60


def options() -> AsyncClientOptions:
    return AsyncClientOptions(httpx_client=httpx.AsyncClient(timeout=TIMEOUT), postgrest_client_timeout=TIMEOUT)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def main(url: str, key: str, service_key: str | None = None) -> dict:
    results = {"supabase_py": supabase.__version__}
    tag = uuid.uuid4().hex[:8]
    alice = await acreate_client(url, key, options=options())
    bob = await acreate_client(url, key, options=options())

    # Auth: sign-up, sign-in, refresh.
    a = await alice.auth.sign_up({"email": f"alice-{tag}@example.com", "password": "secret123"})
    check(a.session is not None and a.user is not None, "sign_up returns a session")
    await bob.auth.sign_up({"email": f"bob-{tag}@example.com", "password": "secret123"})
    b = await bob.auth.sign_in_with_password({"email": f"bob-{tag}@example.com", "password": "secret123"})
    check(b.session is not None, "sign_in_with_password returns a session")
    refreshed = await bob.auth.refresh_session()
    check(refreshed.session.refresh_token != b.session.refresh_token, "refresh rotates the refresh token")
    me = await bob.auth.get_user()
    check(me.user.id == b.user.id, "get_user returns the signed-in user")
    results["auth"] = "ok"

    # REST: insert own profile rows, select with filters.
    await alice.table("users").insert({"id": a.user.id, "public_key": "pk-alice"}).execute()
    await bob.table("users").insert({"id": b.user.id, "public_key": "pk-bob"}).execute()
    rows = (await alice.table("users").select("id,public_key").eq("id", b.user.id).execute()).data
    check(rows == [{"id": b.user.id, "public_key": "pk-bob"}], f"select with eq filter: {rows}")
    both = (await alice.table("users").select("id").in_("id", [a.user.id, b.user.id]).order("id").execute()).data
    check(len(both) == 2, "select with in_ filter")
    results["rest"] = "ok"

    # RPC: the invite flow.
    invite = (await alice.rpc("create_invite", {"preference": "precise"}).execute()).data
    check(isinstance(invite, dict) and len(invite.get("code", "")) == 8, f"create_invite: {invite}")
    friendship = (await bob.rpc("accept_invite", {"code": invite["code"], "preference": "general"}).execute()).data
    check(friendship.get("status") == "active", f"accept_invite: {friendship}")
    results["rpc"] = "ok"

    # Realtime: Bob subscribes to INSERTs addressed to him; Alice posts one.
    received = asyncio.get_running_loop().create_future()
    subscribed = asyncio.get_running_loop().create_future()

    def on_insert(payload):
        if not received.done():
            received.set_result(payload)

    def on_status(status, err=None):
        if str(status).endswith("SUBSCRIBED") and not subscribed.done():
            subscribed.set_result(True)
        elif err is not None and not subscribed.done():
            subscribed.set_exception(RuntimeError(f"{status}: {err}"))

    channel = bob.channel(f"locations-{tag}")
    channel.on_postgres_changes("INSERT", schema="public", table="encrypted_locations",
                                filter=f"recipient_id=eq.{b.user.id}", callback=on_insert)
    await channel.subscribe(on_status)
    await asyncio.wait_for(subscribed, TIMEOUT)
    # A sender may not read back what it posts (only the recipient may), so as on a
    # real Supabase project with this schema, it posts with returning="minimal".
    await alice.table("encrypted_locations").insert(
        {"sender_id": a.user.id, "recipient_id": b.user.id, "payload": "c2VhbGVk"}, returning="minimal").execute()
    payload = await asyncio.wait_for(received, TIMEOUT)
    record = payload["data"]["record"]
    check(record["payload"] == "c2VhbGVk" and record["sender_id"] == a.user.id, f"realtime record: {record}")
    results["realtime"] = "ok"

    # RLS as seen by the client: Alice cannot read Bob's rows, nor post as Bob.
    mine = (await alice.table("encrypted_locations").select("*").execute()).data
    check(mine == [], "a sender cannot read rows addressed to others")
    try:
        await alice.table("encrypted_locations").insert(
            {"sender_id": b.user.id, "recipient_id": a.user.id, "payload": "forged"}, returning="minimal").execute()
        check(False, "a spoofed sender_id was accepted")
    except Exception as e:  # postgrest.APIError
        check("42501" in str(e), f"spoofed insert fails with 42501: {e}")
    try:  # the client's default, return=representation, needs the SELECT policy
        await alice.table("encrypted_locations").insert(
            {"sender_id": a.user.id, "recipient_id": b.user.id, "payload": "x"}).execute()
        check(False, "a sender read back a row addressed to someone else")
    except Exception as e:
        check("42501" in str(e), f"insert with return=representation fails with 42501: {e}")
    results["rls"] = "ok"

    await bob.remove_all_channels()
    if service_key:
        await storage(url, service_key, alice, tag)
        results["storage"] = "ok"
    await alice.auth.sign_out()
    return results


async def storage(url: str, service_key: str, user, tag: str) -> None:
    """Storage through storage3 as supabase-py ships it: the service role makes
    the bucket and the objects; a signed-in user without a policy is refused."""
    admin = await acreate_client(url, service_key, options=options())
    bucket = f"media-{tag}"
    made = await admin.storage.create_bucket(
        bucket, options={"public": False, "file_size_limit": 5_000_000, "allowed_mime_types": ["image/*", "video/*"]})
    check(made == {"name": bucket}, f"create_bucket: {made}")
    got = await admin.storage.get_bucket(bucket)
    check(got.id == bucket and got.file_size_limit == 5_000_000 and got.public is False, f"get_bucket: {got}")
    check(bucket in [b.id for b in await admin.storage.list_buckets()], "list_buckets")

    files = admin.storage.from_(bucket)
    photo, video = os.urandom(2_500_000), os.urandom(700_000)
    up = await files.upload("op-1/photo 1.jpg", photo, {"content-type": "image/jpeg"})
    check(up.full_path == f"{bucket}/op-1/photo 1.jpg", f"upload: {up.full_path}")
    signed_upload = await files.create_signed_upload_url("op-1/clip.mp4")
    check(signed_upload["signed_url"].startswith(f"{url}/storage/v1/object/upload/sign/{bucket}/op-1/clip.mp4?token="),
          f"create_signed_upload_url: {signed_upload['signed_url']}")
    put = await files.upload_to_signed_url(signed_upload["path"], signed_upload["token"], video, {"content-type": "video/mp4"})
    check(put.full_path == f"{bucket}/op-1/clip.mp4", f"upload_to_signed_url: {put.full_path}")
    signed = await files.create_signed_url("op-1/photo 1.jpg", 60)
    async with httpx.AsyncClient(timeout=TIMEOUT) as plain:  # no key, no session: the URL is the permission
        fetched = await plain.get(signed["signedURL"])
    check(fetched.status_code == 200 and fetched.content == photo, f"signed URL: {fetched.status_code}")
    check(await files.download("op-1/clip.mp4") == video, "download")
    listed = await files.list("op-1")
    check(sorted(f["name"] for f in listed) == ["clip.mp4", "photo 1.jpg"], f"list: {listed}")
    check(any(f["metadata"]["size"] == len(photo) for f in listed), "list: sizes")

    try:
        await user.storage.from_(bucket).upload("mine.jpg", b"x", {"content-type": "image/jpeg"})
        check(False, "a user uploaded without a policy")
    except Exception as e:  # storage3.exceptions.StorageApiError
        check(getattr(e, "status", None) == "403" and "row-level security" in str(e), f"RLS refusal: {e!r}")

    removed = await files.remove(["op-1/photo 1.jpg", "op-1/clip.mp4"])
    check(sorted(r["name"] for r in removed) == ["op-1/clip.mp4", "op-1/photo 1.jpg"], f"remove: {removed}")
    try:
        await files.download("op-1/clip.mp4")
        check(False, "a removed object downloaded")
    except Exception as e:
        check(getattr(e, "status", None) == "404" and getattr(e, "code", None) == "not_found", f"after remove: {e!r}")


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))))
    except Exception as e:
        import traceback
        traceback.print_exc()
        print(json.dumps({"error": f"{type(e).__name__}: {e!r} (cause: {e.__cause__!r})"}))
        sys.exit(1)
