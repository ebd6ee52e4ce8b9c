#!/usr/bin/env python3
"""Coordinator of examples/campaigns/federated-chat.jsonc (no LLM).

Reads inbound JSON lines on stdin. On the bootstrap task it greets every peer
in MOSAIC_PEERS; it then waits for one reply per peer, prints a summary on
stderr and exits 0. Outbound messages go to fd 3 when MOSAIC_OUTBOX_FD is set,
else to stdout prefixed with "@mosaic ".
"""
import json
import os
import sys


def outbox():
    fd = os.environ.get("MOSAIC_OUTBOX_FD")
    if fd:
        return os.fdopen(int(fd), "w", buffering=1)
    return None


def main() -> int:
    me = os.environ.get("MOSAIC_AGENT_NAME", "coordinator")
    peers = [p for p in os.environ.get("MOSAIC_PEERS", "").split(",") if p.strip()]
    greeting = os.environ.get("CHAT_GREETING", "hello")
    out = outbox()

    def send(obj):
        line = json.dumps(obj, separators=(",", ":"))
        if out is not None:
            out.write(line + "\n")
        else:
            sys.stdout.write("@mosaic " + line + "\n")
            sys.stdout.flush()

    replies = {}
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError:
            print(f"{me}: ignoring malformed line {raw[:80]!r}", file=sys.stderr)
            continue
        body = msg.get("body") or {}
        sender = msg.get("from", "?")
        if sender == "mosaic":
            task = body.get("text", "")
            print(f"{me}: task: {task}", file=sys.stderr)
            for peer in peers:
                send({"to": peer, "body": {"kind": "mosaic-text", "text": f"{greeting} (to {peer})"}})
            if not peers:
                print(f"{me}: no peers to greet", file=sys.stderr)
                return 0
            continue
        if msg.get("kind") == "response" and sender in peers:
            replies[sender] = body.get("text", "")
            print(f"{me}: {sender} says: {replies[sender]}", file=sys.stderr)
            if len(replies) == len(peers):
                print(f"{me}: all {len(peers)} peers answered", file=sys.stderr)
                return 0
    missing = sorted(set(peers) - set(replies))
    print(f"{me}: stdin closed before replies from: {', '.join(missing)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
