// End-to-end check of `mosaic mcp` with the official TypeScript MCP SDK: a real MCP
// client from another ecosystem spawns the binary over stdio, lists the tools, drafts
// an envelope, submits a task on the demo federation, waits for it (with progress
// notifications) and reads its events and output.
//
// Usage: MOSAIC_BINARY=/path/to/mosaic node client.mjs
// The environment must point at a running core (MOSAIC_URL plus XDG_CONFIG_HOME or
// MOSAIC_TOKEN), exactly as for the mosaic CLI. Exit status 0 means every check passed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const binary = process.env.MOSAIC_BINARY;
if (!binary) {
  console.error("set MOSAIC_BINARY to the mosaic binary to test");
  process.exit(2);
}

const expectedTools = [
  "list_resources", "find_idle", "draft_envelope", "submit_task", "get_task", "list_tasks",
  "wait_task", "cancel_task", "replan_task", "recent_events", "task_logs", "system_env",
];

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

// call invokes a tool and returns its structured content; a tool error throws.
async function call(client, name, args, options) {
  const res = await client.callTool({ name, arguments: args }, undefined, options);
  const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
  check(!res.isError, `${name}: tool error: ${text}`);
  check(res.structuredContent && typeof res.structuredContent === "object", `${name}: no structured content`);
  // The text content carries the same JSON for clients without structured output.
  JSON.parse(text);
  return res.structuredContent;
}

const env = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
const transport = new StdioClientTransport({ command: binary, args: ["mcp"], env, stderr: "inherit" });
const client = new Client({ name: "mosaic-node-e2e", version: "1.0.0" });

try {
  await client.connect(transport);
  const info = client.getServerVersion();
  check(info?.name === "mosaic", `server name: ${JSON.stringify(info)}`);
  check((client.getInstructions() ?? "").includes("submit_task"), "server instructions lack the workflow");

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of expectedTools) check(names.includes(want), `tool ${want} missing from ${names}`);
  for (const t of tools) {
    check(t.inputSchema?.type === "object", `${t.name}: input schema is not an object schema`);
    check(t.outputSchema?.type === "object", `${t.name}: no output schema`);
  }
  console.log(`tools: ${names.join(", ")}`);

  const pool = await call(client, "list_resources", {});
  check(pool.systems.length === 6, `want 6 demo systems, got ${pool.systems.length}`);

  // A bad argument is a tool error, not a protocol failure.
  const bad = await client.callTool({ name: "get_task", arguments: { id: "" } });
  check(bad.isError === true, "get_task with an empty id must be a tool error");

  const draft = await call(client, "draft_envelope", {
    name: "hello",
    description: "a tiny CPU-only job that prints a greeting and exits within a minute",
  });
  check(draft.envelope && draft.drafter, `draft: ${JSON.stringify(draft)}`);
  console.log(`drafted by ${draft.drafter}: ${JSON.stringify(draft.envelope)}`);

  const sub = await call(client, "submit_task", {
    name: "hello-from-node",
    command: "sleep 0.5; echo hello from node", // 30 s on the demo clock (60×): within the minute the description drafts
    envelope: draft.envelope,
  });
  check(sub.task?.id && sub.trace?.chosen, `submit: ${JSON.stringify(sub)}`);
  const id = sub.task.id;
  console.log(`submitted ${id} to ${sub.trace.chosen} (${sub.trace.mode}, ${sub.trace.ranker})`);

  const progress = [];
  const waited = await call(client, "wait_task", { id, timeout_seconds: 90 }, {
    onprogress: (p) => progress.push(p.message),
    resetTimeoutOnProgress: true,
    timeout: 120000,
  });
  check(waited.reached && waited.task.state === "succeeded",
    `wait_task: reached=${waited.reached} state=${waited.task.state} reason=${waited.task.reason}`);
  check(progress.length > 0, "wait_task sent no progress notifications");
  console.log(`progress: ${progress.join(" | ")}`);

  const events = await call(client, "recent_events", { task: id });
  const kinds = new Set(events.events.map((e) => e.kind));
  check(kinds.has("decision"), `events lack the decision: ${[...kinds]}`);
  console.log(`events: ${events.events.map((e) => `${e.kind}: ${e.message}`).join(" | ")}`);

  const logs = await call(client, "task_logs", { id });
  check(logs.stdout.includes("hello from node"), `stdout: ${JSON.stringify(logs.stdout)}`);

  console.log("OK");
} catch (err) {
  console.error(`FAIL: ${err.message}`);
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
}
