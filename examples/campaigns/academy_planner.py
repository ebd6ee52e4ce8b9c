#!/usr/bin/env python3
"""A Python agent speaking the Academy exchange protocol, standard library only.

It stands in for a real Academy agent (academy-agents/academy v0.5, e.g. a
ChemGraph planner) and does what its runtime does on the wire: register its
mailbox under its deterministic uid, read it over server-sent events
(GET /mailbox/listen), answer ping-request with success-response, stop on
shutdown-request, and run its @action methods on action-request. Its encodings
are Academy's own, so that a Mosaic that drifts from them fails the tests:
with JSON serialization pargs/kargs are JSON texts, a result travels as
["__serialized__", json.dumps(value)] (academy/message.py ActionResponse), an
exception as the JSON *string* json.dumps({"__exception__": true,
"exception_str": traceback}) (academy/message.py UserErrorResponse,
academy/serialize.py json_exception_serializer), and Academy's error codes by
number (academy/message.py ErrorCode). Like Academy's runtime it terminates its
own mailbox when it stops (unless a shutdown request said terminate: false).

Its one action, receive_message(task), is the campaign's bootstrap action: it
calls `add` and `echo` on the Mosaic-wrapped agent named in MOSAIC_PEER_UIDS,
checks an undeclared action is refused, answers the bootstrap with a summary,
asks the calculator to shut down and exits.

Environment (set by `mosaic agent run` for a "protocol": "academy" agent):
MOSAIC_EXCHANGE_URL, MOSAIC_EXCHANGE_TOKEN (its own token), MOSAIC_AGENT_NAME,
MOSAIC_AGENT_UID, MOSAIC_PEER_UIDS (name=uid,...).
"""

import json
import os
import sys
import time
import traceback
import urllib.error
import urllib.request
import uuid

URL = os.environ["MOSAIC_EXCHANGE_URL"].rstrip("/")
TOKEN = os.environ["MOSAIC_EXCHANGE_TOKEN"]
NAME = os.environ["MOSAIC_AGENT_NAME"]
ME = {"uid": os.environ["MOSAIC_AGENT_UID"], "name": NAME, "role": "agent"}
PEERS = dict(p.split("=", 1) for p in os.environ.get("MOSAIC_PEER_UIDS", "").split(",") if p)
DEADLINE = time.monotonic() + float(os.environ.get("PLANNER_DEADLINE_S", "600"))


def log(*args):
    print(f"{NAME}:", *args, file=sys.stderr, flush=True)


def http(method, path, body, timeout=30):
    """One exchange call: every route takes a JSON body, GET included."""
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(), method=method,
                                 headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=timeout)


def mailbox(ident):
    return json.dumps(ident)  # ids are double-encoded in control requests


def send(header, body):
    header = dict(header, protocol_version="1")
    with http("PUT", "/message", {"message": json.dumps({"header": header, "body": body})}) as r:
        r.read()


def request(dest, body):
    tag = str(uuid.uuid4())
    send({"src": ME, "dest": dest, "tag": tag, "label": None, "kind": "request"}, body)
    return tag


def respond(req, body):
    h = req["header"]
    try:
        send({"src": h["dest"], "dest": h["src"], "tag": h["tag"], "label": h.get("label"), "kind": "response"}, body)
    except urllib.error.HTTPError as e:  # the requester's mailbox is gone (419): Academy logs and goes on
        log("could not answer", h["src"].get("name"), e.code)


class AcademyRemoteError(Exception):
    """What academy/serialize.py json_exception_deserializer makes of a remote exception."""


def _exception_hook(dct):  # academy/serialize.py json_exception_deserializer
    if "__exception__" in dct:
        return AcademyRemoteError(dct["exception_str"])
    return dct


def _exception_default(obj):  # academy/serialize.py json_exception_serializer
    if isinstance(obj, BaseException):
        return {"__exception__": True,
                "exception_str": "".join(traceback.format_exception(type(obj), obj, obj.__traceback__))}
    raise TypeError(f"Cannot serialize object of {type(obj)}")


def serialize(obj):  # academy/serialize.py JsonSerializer.serialize
    return json.dumps(obj, default=_exception_default)


def deserialize(text):  # academy/serialize.py JsonSerializer.deserialize
    return json.loads(text, object_hook=_exception_hook)


def get_result(body):  # academy/message.py ActionResponse.get_result
    r = body["result"]
    if isinstance(r, list) and len(r) == 2 and r[0] == "__serialized__":
        return deserialize(r[1])
    return r


def get_exception(body):  # academy/message.py UserErrorResponse.get_exception
    e = body["exception"]
    if isinstance(e, str):
        e = deserialize(e)
    if not isinstance(e, BaseException):
        raise TypeError(f"user-error-response exception is {type(e).__name__}, not an exception: {e!r}")
    return e


# academy/message.py ErrorCode
ERROR_CODES = {0: "MailboxTerminatedError", 1: "PingCancelledError", 2: "ActionInvalidStateError",
               3: "ActionCancelledError", 4: "TypeError (cannot fulfill requests)", 5: "IncompatibleNetworkProtocolError"}


def events():
    """Messages of my mailbox, one SSE stream after another, until the deadline."""
    while time.monotonic() < DEADLINE:
        try:
            resp = http("GET", "/mailbox/listen", {"mailbox": mailbox(ME), "timeout": 10}, timeout=60)
        except urllib.error.HTTPError as e:
            if e.code == 419:
                return  # mailbox terminated
            raise
        data = []
        with resp:
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if data:
                        yield json.loads("\n".join(data))
                        data = []
                    continue
                if line.startswith(":"):
                    continue  # ": ping"
                field, _, value = line.partition(":")
                if field == "data":
                    data.append(value[1:] if value.startswith(" ") else value)
    raise TimeoutError("deadline passed")


class Planner:
    actions = ("receive_message",)

    def __init__(self, stream):
        self.stream = stream

    def call(self, peer, action, *args, **kwargs):
        """Call an action of another agent and wait for its answer, serving pings meanwhile."""
        tag = request({"uid": PEERS[peer], "name": peer, "role": "agent"}, {
            "kind": "action-request", "action": action, "serialization": "json",
            "result_serialization": None, "exception_serialization": None,
            "pargs": json.dumps(list(args)), "kargs": json.dumps(kwargs)})
        for m in self.stream:
            if m["header"]["kind"] == "response" and m["header"]["tag"] == tag:
                b = m["body"]
                if b["kind"] == "action-response":
                    return get_result(b)
                if b["kind"] == "user-error-response":
                    raise get_exception(b)
                if b["kind"] == "academy-error-response":
                    raise RuntimeError(f"{peer} answered {ERROR_CODES.get(b['error_code'], b['error_code'])}")
                raise RuntimeError(f"{peer} answered {b['kind']}: {b}")
            handle(self, m)
        raise TimeoutError(f"no answer from {peer}")

    def receive_message(self, task):
        log("task:", task)
        total = self.call("calculator", "add", 2, 3)
        if total != 5:
            raise AssertionError(f"add(2, 3) = {total!r}")
        log("calculator says 2 + 3 =", total)
        echoed = self.call("calculator", "echo", "hello", n=1)
        if echoed != {"args": ["hello"], "kwargs": {"n": 1}}:
            raise AssertionError(f"echo answered {echoed!r}")
        try:
            self.call("calculator", "mul", 2, 3)
            raise AssertionError("an undeclared action was not refused")
        except AcademyRemoteError as e:
            log("mul refused:", e)
        return {"task": task, "sum": total, "echo": echoed}


DONE = False
TERMINATE = True  # Academy's default: the mailbox closes when the agent stops


def handle(agent, m):
    global DONE, TERMINATE
    h, b = m["header"], m["body"]
    if h["kind"] != "request":
        log("unexpected response", b.get("kind"))
        return
    kind = b.get("kind")
    if kind == "ping-request":
        respond(m, {"kind": "success-response"})
    elif kind == "shutdown-request":
        DONE = True
        if b.get("terminate") is False:
            TERMINATE = False
    elif kind == "action-request":
        try:
            if b.get("serialization") != "json":
                raise ValueError("this agent reads JSON only")
            if b["action"] not in agent.actions:
                raise AttributeError(f'{NAME} does not have an action named "{b["action"]}".')
            result = getattr(agent, b["action"])(*json.loads(b["pargs"]), **json.loads(b["kargs"]))
        except Exception as e:  # noqa: BLE001 — every failure is the caller's answer
            respond(m, {"kind": "user-error-response", "serialization": "json", "exception": serialize(e)})
            return
        respond(m, {"kind": "action-response", "serialization": "json", "result": ["__serialized__", serialize(result)]})
        if b["action"] == "receive_message":
            # The campaign's work is done: stop the calculator, then ourselves.
            request({"uid": PEERS["calculator"], "name": "calculator", "role": "agent"},
                    {"kind": "shutdown-request", "terminate": True})
            log("done; asked calculator to shut down")
            DONE = True
    else:
        log("ignored", kind)


def main():
    with http("POST", "/mailbox", {"mailbox": mailbox(ME), "agent": "academy_planner.Planner"}) as r:
        r.read()
    log("registered", ME["uid"])
    stream = events()
    agent = Planner(stream)
    for m in stream:
        handle(agent, m)
        if DONE:
            if TERMINATE:
                with http("DELETE", "/mailbox", {"mailbox": mailbox(ME)}) as r:
                    r.read()
                log("mailbox terminated")
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
