#!/bin/sh
# Worker of examples/campaigns/federated-chat.jsonc (no LLM, POSIX sh only).
# Waits for one greeting on stdin (a JSON line), answers it once and exits.
# Outbound goes to fd 3 when MOSAIC_OUTBOX_FD=3, else to stdout with "@mosaic ".
me=${MOSAIC_AGENT_NAME:-worker}
site=${MOSAIC_SITE:-somewhere}

emit() {
	if [ "${MOSAIC_OUTBOX_FD:-}" = "3" ]; then
		printf '%s\n' "$1" >&3
	else
		printf '@mosaic %s\n' "$1"
	fi
}

# Extract a top-level string field from a one-line JSON object (names and
# uuids only: no escaped quotes in the values we read).
field() {
	printf '%s' "$1" | sed -n "s/.*\"$2\":\"\\([^\"]*\\)\".*/\\1/p"
}

while IFS= read -r line; do
	[ -z "$line" ] && continue
	head=${line%%\"body\":*} # envelope fields only; the body has its own "kind"
	from=$(field "$head" from)
	tag=$(field "$head" tag)
	kind=$(field "$head" kind)
	if [ -z "$from" ] || [ "$kind" != "request" ]; then
		echo "$me: ignoring: $line" >&2
		continue
	fi
	echo "$me: greeted by $from" >&2
	emit "{\"to\":\"$from\",\"reply_to\":\"$tag\",\"body\":{\"kind\":\"mosaic-text\",\"text\":\"hello back from $me at $site\"}}"
	exit 0
done
echo "$me: stdin closed without a greeting" >&2
exit 1
