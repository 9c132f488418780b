#!/bin/sh
# A language-free MCP agent: plain POSIX sh speaking JSON-RPC over its own stdin/stdout
# (run with --agentbench-agent-transport stdio). It lists the tools, calls the first
# one named in $AGENT_TOOL with $AGENT_ARGS, and submits $AGENT_ANSWER.
set -eu
send() { printf '%s\n' "$1"; }
receive() { IFS= read -r line; printf '%s\n' "$line" >&2; }
send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh-agent","version":"1"}}}'
receive
send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
send '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
receive
send "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"${AGENT_TOOL}\",\"arguments\":${AGENT_ARGS}}}"
receive
send "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"submit_answer\",\"arguments\":${AGENT_ANSWER}}}"
receive
