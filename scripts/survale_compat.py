#!/usr/bin/env python3
"""Drives `convoy serve --app survale` with the official Supabase Python client
(supabase-py), unchanged, through Survale's flows: users provisioned with the
service key, an operation created, joined by invite and started over RPC, its
private Realtime channel (private=True) with presence (track) and broadcast
(send_broadcast, ack), a stranger refused the channel, and a photo uploaded to
Storage under the operation's folder and read back. Prints one JSON line of
results; exits 1 on the first failure.

    scripts/.venv/bin/python3 scripts/survale_compat.py URL ANON_KEY SERVICE_KEY
"""
import asyncio
import json
import sys
import uuid

import httpx
import supabase
from supabase import AsyncClientOptions, acreate_client

TIMEOUT = 60


def options() -> AsyncClientOptions:
    return AsyncClientOptions(httpx_client=httpx.AsyncClient(timeout=TIMEOUT), postgrest_client_timeout=TIMEOUT)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def subscribed(channel, expect_error=False):
    """Subscribes `channel`; its status (SUBSCRIBED, or the error when `expect_error`)."""
    done = asyncio.get_running_loop().create_future()

    def on_status(status, err=None):
        if done.done():
            return
        if str(status).endswith("SUBSCRIBED"):
            done.set_result(("SUBSCRIBED", None))
        elif err is not None or str(status).endswith(("CHANNEL_ERROR", "TIMED_OUT", "CLOSED")):
            done.set_result((str(status), err))

    await channel.subscribe(on_status)
    status, err = await asyncio.wait_for(done, TIMEOUT)
    if not expect_error:
        check(status == "SUBSCRIBED", f"subscribe: {status} {err}")
    return status, err


async def main(url: str, anon: str, service: str) -> dict:
    results = {"supabase_py": supabase.__version__}
    tag = uuid.uuid4().hex[:8]
    admin = await acreate_client(url, service, options=options())
    ca, member, stranger = [await acreate_client(url, anon, options=options()) for _ in range(3)]
    users = {}
    for name, client in [("ca", ca), ("member", member), ("stranger", stranger)]:
        r = await client.auth.sign_up({"email": f"{name}-{tag}@example.com", "password": "secret123"})
        users[name] = r.user.id

    # The agency provisions its people (the service role).
    agency = (await admin.table("agencies").insert({"name": f"Agency {tag}"}).execute()).data[0]["id"]
    team = (await admin.table("teams").insert({"name": "A1", "agency_id": agency}).execute()).data[0]["id"]
    other_agency = (await admin.table("agencies").insert({"name": f"Other {tag}"}).execute()).data[0]["id"]
    other_team = (await admin.table("teams").insert({"name": "B1", "agency_id": other_agency}).execute()).data[0]["id"]
    await admin.table("users").insert([
        {"id": users["ca"], "team_id": team, "agency_id": agency, "callsign": "CA-1"},
        {"id": users["member"], "team_id": team, "agency_id": agency, "callsign": "M-1"},
        {"id": users["stranger"], "team_id": other_team, "agency_id": other_agency, "callsign": "B-1"},
    ]).execute()
    results["provision"] = "ok"

    # The operation: created, the member invited and accepting, started.
    op = (await ca.rpc("create_operation", {"name": "Harbor", "incident_number": "24-17"}).execute()).data["id"]
    invite = (await ca.table("operation_invites").insert(
        {"operation_id": op, "invitee_id": users["member"], "invited_by": users["ca"]}).execute()).data[0]["id"]
    accepted = (await member.rpc("respond_to_invite", {"invite_id": invite, "accept": True}).execute()).data
    check(accepted["status"] == "accepted", f"respond_to_invite: {accepted}")
    started = (await ca.rpc("start_operation", {"operation_id": op}).execute()).data
    check(started["status"] == "active", f"start_operation: {started}")
    results["lifecycle"] = "ok"

    # Realtime Authorization: the member and the case agent on the private channel, presence and broadcast.
    topic = f"op_{op}_locations"
    got = asyncio.get_running_loop().create_future()
    seen = asyncio.get_running_loop().create_future()
    listen = member.channel(topic, {"config": {"private": True, "broadcast": {"ack": False, "self": False},
                                               "presence": {"key": users["member"]}}})

    def on_position(payload):
        if not got.done():
            got.set_result(payload)

    def on_sync():
        if users["ca"] in listen.presence_state() and not seen.done():
            seen.set_result(True)

    listen.on_broadcast("position", on_position).on_presence_sync(on_sync)
    await subscribed(listen)
    send = ca.channel(topic, {"config": {"private": True, "broadcast": {"ack": True, "self": False},
                                         "presence": {"key": users["ca"]}}})
    await subscribed(send)
    await send.track({"callsign": "CA-1", "vehicle": "suv"})
    await asyncio.wait_for(seen, TIMEOUT)
    results["presence"] = "ok"
    await send.send_broadcast("position", {"user_id": users["ca"], "lat": 51.5, "lon": -0.12})
    payload = await asyncio.wait_for(got, TIMEOUT)
    body = payload.get("payload", payload)
    check(body.get("user_id") == users["ca"] and body.get("lat") == 51.5, f"broadcast: {payload}")
    results["broadcast"] = "ok"
    status, _ = await subscribed(stranger.channel(topic, {"config": {"private": True}}), expect_error=True)
    check(status != "SUBSCRIBED", "another agency's user joined the operation's private channel")
    results["private"] = "ok"

    # Storage: a photo in the operation's folder, read back by the case agent, refused to the stranger.
    photo = bytes(range(256)) * 4096
    path = f"{op}/photo-{tag}.jpg"
    await member.storage.from_("op-media").upload(path, photo, {"content-type": "image/jpeg"})
    check(await ca.storage.from_("op-media").download(path) == photo, "the case agent reads the member's photo")
    try:
        await stranger.storage.from_("op-media").download(path)
        check(False, "a stranger downloaded the operation's photo")
    except AssertionError:
        raise
    except Exception:
        pass
    try:
        await stranger.storage.from_("op-media").upload(f"{op}/intruder.jpg", photo, {"content-type": "image/jpeg"})
        check(False, "a stranger uploaded into the operation's folder")
    except AssertionError:
        raise
    except Exception:
        pass
    results["storage"] = "ok"

    for client in (ca, member, stranger):
        await client.remove_all_channels()
    return results


if __name__ == "__main__":
    try:
        print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))))
    except Exception as e:  # noqa: BLE001 — the test shows what failed
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.exit(1)
