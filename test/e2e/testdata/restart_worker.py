#!/usr/bin/env python3
"""Worker of the exchange-restart e2e test (stdlib only): answers each request
"msg I" with "re: I" and exits 0 after RESTART_N distinct ones (1 on a
duplicate or stdin closing first)."""
import json
import os
import sys

N = int(os.environ.get("RESTART_N", "25"))
me = os.environ.get("MOSAIC_AGENT_NAME", "worker")
out = os.fdopen(int(os.environ.get("MOSAIC_OUTBOX_FD", "3")), "w", buffering=1)
seen = set()
for raw in sys.stdin:
    raw = raw.strip()
    if not raw:
        continue
    msg = json.loads(raw)
    if msg.get("kind") != "request":
        continue
    text = (msg.get("body") or {}).get("text", "")
    if not text.startswith("msg "):
        continue
    n = int(text[4:])
    if n in seen:
        print(f"{me}: duplicate message {n}", file=sys.stderr, flush=True)
        sys.exit(1)
    seen.add(n)
    out.write(json.dumps({"to": msg["from"], "reply_to": msg["tag"], "body": {"kind": "mosaic-text", "text": f"re: {n}"}}) + "\n")
    if len(seen) == N:
        print(f"{me}: answered {N} messages", file=sys.stderr, flush=True)
        sys.exit(0)
print(f"{me}: stdin closed after {len(seen)} of {N}", file=sys.stderr, flush=True)
sys.exit(1)
