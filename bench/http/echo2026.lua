-- SPDX-License-Identifier: Apache-2.0
-- wrk script of the HTTP load benchmark's per-request era (bench/http/run.sh, targets mcpcore2026
-- and ts2026): every request is a POST of `tools/call echo {"text":"hello"}` at MCP revision
-- 2026-07-28, with its own integer id. That era has no initialize and no session: each request
-- carries its protocol version and client capabilities in params._meta, and the headers that
-- must repeat them (SEP-2243):
--   Content-Type: application/json
--   Accept: application/json, text/event-stream
--   MCP-Protocol-Version: 2026-07-28
--   Mcp-Method: tools/call
--   Mcp-Name: echo
-- The same call as echo.lua's otherwise, and like it with no authentication header: echo_server
-- authenticates every request as one fixed principal, the TypeScript server checks none.
--
-- Environment: MCP_PATH (default /mcp).
-- Script argument (after wrk's `--`):
--   1. first id (default 1): ids are first_id + thread_index * 100000000 + n, so that
--      successive wrk runs against one server never reuse an id.
--
-- A response is correct when it is a 200 whose body holds the echo content, the result type
-- "complete" (which every 2026-07-28 result carries) and the id of a request this thread sent and
-- has not had answered yet (a server that mis-routes responses under concurrency fails it). Both
-- servers answer a single application/json body (the call sends nothing before its result); an
-- SSE body carrying the same JSON would pass the same check.
--
-- done() prints one line that run.sh parses, the same as echo.lua's:
--   RESULT requests=N duration_us=N rps=X p50_us=N p99_us=N ok=N non200=N wrong=N
--          connect_errors=N read_errors=N write_errors=N timeouts=N p90_us=N p999_us=N
-- (latency percentiles of wrk's histogram, in µs; p999 is the 99.9th)
-- and exits non-zero (os.exit(3)) when any response was not a correct 200.

-- echo_common.lua (beside this script, wherever wrk is started from) defines wrk's setup(),
-- request(), response() and done() from what this script sends and expects.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "echo_common.lua")

local path = os.getenv("MCP_PATH") or "/mcp"
-- The request after its id, and what a correct body holds.
local after_id = ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},' ..
                 '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
                 '"io.modelcontextprotocol/clientCapabilities":{}}}}'
local expected = { '"content":[{"type":"text","text":"hello"}]', '"resultType":"complete"' }

local headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2026-07-28",
  ["Mcp-Method"] = "tools/call",
  ["Mcp-Name"] = "echo",
}

common.define("echo2026.lua", path, headers, after_id, expected)

-- Every response must carry its id (no target of this era answers a fixed body). The first "id":
-- of either answer is the response's own, which is the one echo_common.lua checks: mcpcore writes
-- it before the result, the TypeScript SDK after it, and neither result holds an "id" member.
function init(args)
  common.start(args[1], true)
end
