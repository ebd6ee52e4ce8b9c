#!/usr/bin/env python3
"""Coordinator of the exchange-restart e2e test (stdlib only).

On the bootstrap task it sends RESTART_N numbered requests ("msg 1" ...) to the
first peer of MOSAIC_PEERS, one every RESTART_INTERVAL seconds, while it reads
the replies ("re: 1" ...) on stdin. It exits 0 once every number was answered
exactly once, 1 on a duplicate, an unexpected reply, stdin closing first, or
RESTART_DEADLINE seconds passing. Outbound lines go to fd 3 (MOSAIC_OUTBOX_FD).
"""
import json
import os
import sys
import threading
import time

N = int(os.environ.get("RESTART_N", "25"))
INTERVAL = float(os.environ.get("RESTART_INTERVAL", "0.2"))
DEADLINE = float(os.environ.get("RESTART_DEADLINE", "120"))
me = os.environ.get("MOSAIC_AGENT_NAME", "coordinator")
peers = [p for p in os.environ.get("MOSAIC_PEERS", "").split(",") if p.strip()]
out = os.fdopen(int(os.environ.get("MOSAIC_OUTBOX_FD", "3")), "w", buffering=1)
lock = threading.Lock()


def log(text):
    print(f"{me}: {text}", file=sys.stderr, flush=True)


def send(obj):
    with lock:
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")


def sender(peer):
    for i in range(1, N + 1):
        send({"to": peer, "body": {"kind": "mosaic-text", "text": f"msg {i}"}})
        time.sleep(INTERVAL)
    log(f"sent {N} messages to {peer}")


def main():
    if not peers:
        log("no peer")
        return 1
    threading.Timer(DEADLINE, lambda: (log(f"deadline {DEADLINE}s passed"), os._exit(1))).start()
    got = set()
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        msg = json.loads(raw)
        body = msg.get("body") or {}
        if msg.get("from") == "mosaic":
            log("task received; sending")
            threading.Thread(target=sender, args=(peers[0],), daemon=True).start()
            continue
        if msg.get("kind") != "response":
            log(f"unexpected message: {raw[:120]}")
            return 1
        text = body.get("text", "")
        if not text.startswith("re: "):
            log(f"unexpected reply: {text!r}")
            return 1
        n = int(text[4:])
        if n in got:
            log(f"duplicate reply {n}")
            return 1
        got.add(n)
        if len(got) == N:
            log(f"all {N} replies arrived")
            os._exit(0)
    log(f"stdin closed with {len(got)} of {N} replies; missing {sorted(set(range(1, N + 1)) - got)[:10]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
