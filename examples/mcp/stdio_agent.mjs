// A language-free MCP agent: Node.js with no package, speaking JSON-RPC 2.0 over its own
// stdin/stdout (run it with --agentbench-agent-transport stdio). It lists the case's tools,
// calls the first read-only one it can fill from the task's prompt, and submits what it read.
import { createInterface } from "node:readline";

const task = JSON.parse(process.env.AGENTBENCH_TASK);
const lines = createInterface({ input: process.stdin });
const waiting = new Map();
lines.on("line", (line) => {
  const message = JSON.parse(line);
  const resolve = waiting.get(message.id);
  if (resolve) { waiting.delete(message.id); resolve(message); }
});
let next = 0;
function request(method, params) {
  const id = ++next;
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return new Promise((resolve) => waiting.set(id, resolve));
}
function notify(method) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method }) + "\n");
}

// Fill a tool's required string arguments with identifiers found in the prompt.
function argumentsFor(tool, prompt) {
  const ids = prompt.match(/[A-Z]{2,}-\d+/g) || [];
  const args = {};
  for (const name of tool.inputSchema.required || []) {
    const type = (tool.inputSchema.properties[name] || {}).type;
    if (type !== "string" || ids.length === 0) return null;
    args[name] = ids.shift();
  }
  return args;
}

await request("initialize", {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "node-stdio-agent", version: "1" },
});
notify("notifications/initialized");
const { result: listed } = await request("tools/list", {});
const prompt = String(task.prompt ?? task.question ?? "");
let answer = "unknown";
for (const tool of listed.tools) {
  if (tool.name === "submit_answer" || !tool.annotations?.readOnlyHint) continue;
  const args = argumentsFor(tool, prompt);
  if (args === null || Object.keys(args).length === 0) continue;
  const { result } = await request("tools/call", { name: tool.name, arguments: args });
  if (!result.isError) { answer = result.content[0].text; break; }
}
await request("tools/call", { name: "submit_answer", arguments: { answer, citations: [] } });
lines.close();
