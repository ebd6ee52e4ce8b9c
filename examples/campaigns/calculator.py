#!/usr/bin/env python3
"""A Mosaic-wrapped agent serving Academy actions over the fd 3 contract.

It declares its actions with one {"serve": [...]} line on fd 3; the wrapper
(`mosaic agent run`) then hands it each action request for them as a stdin
line with decoded "action", "args" and "kwargs", and sends its
{"reply_to": TAG, "result": VALUE} or {"reply_to": TAG, "error": "text"} lines
back as action-response / user-error-response. Pings, shutdown requests,
undeclared actions and pickled arguments are the wrapper's business: they never
reach this script. It runs until the wrapper stops it (a shutdown request).
"""

import json
import os
import sys

out = os.fdopen(int(os.environ.get("MOSAIC_OUTBOX_FD", "3")), "w", buffering=1)
name = os.environ.get("MOSAIC_AGENT_NAME", "calculator")


def send(line):
    out.write(json.dumps(line) + "\n")


send({"serve": ["add", "echo"]})
for raw in sys.stdin:
    m = json.loads(raw)
    if m["kind"] != "request" or "action" not in m:
        continue
    if m["action"] == "add":
        try:
            send({"reply_to": m["tag"], "result": sum(m["args"])})
        except TypeError as e:
            send({"reply_to": m["tag"], "error": f"add takes numbers: {e}"})
    elif m["action"] == "echo":
        send({"reply_to": m["tag"], "result": {"args": m["args"], "kwargs": m["kwargs"]}})
    print(f"{name}: answered {m['action']} from {m['from']}", file=sys.stderr, flush=True)
