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
--          connect_errors=N read_errors=N write_errors=N timeouts=N
-- and exits non-zero (os.exit(3)) when any response was not a correct 200.

local path = os.getenv("MCP_PATH") or "/mcp"
local expected_content = '"content":[{"type":"text","text":"hello"}]'
local expected_type = '"resultType":"complete"'

local headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2026-07-28",
  ["Mcp-Method"] = "tools/call",
  ["Mcp-Name"] = "echo",
}

-- Per-thread state (each wrk thread has its own Lua state; done() reads them through setup()).
next_id = 1
outstanding = {}
ok = 0
non200 = 0
wrong = 0

local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  local first = tonumber(args[1] or "1") or 1
  next_id = first + (thread_index or 0) * 100000000
end

function request()
  local id = next_id
  next_id = next_id + 1
  outstanding[id] = true
  local body = '{"jsonrpc":"2.0","id":' .. id ..
               ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},' ..
               '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",' ..
               '"io.modelcontextprotocol/clientCapabilities":{}}}}'
  return wrk.format("POST", path, headers, body)
end

function response(status, hdrs, body)
  if status ~= 200 then
    non200 = non200 + 1
    return
  end
  if body == nil or not string.find(body, expected_content, 1, true) or
     not string.find(body, expected_type, 1, true) then
    wrong = wrong + 1
    return
  end
  -- The first "id": of either answer is the response's own: mcpcore writes it before the result,
  -- the TypeScript SDK after it, and neither result holds an "id" member.
  local id = tonumber(string.match(body, '"id":(%d+)'))
  if id == nil or not outstanding[id] then
    wrong = wrong + 1
    return
  end
  outstanding[id] = nil
  ok = ok + 1
end

function done(summary, latency, requests)
  local t_ok, t_non200, t_wrong = 0, 0, 0
  for _, thread in ipairs(threads) do
    t_ok = t_ok + (thread:get("ok") or 0)
    t_non200 = t_non200 + (thread:get("non200") or 0)
    t_wrong = t_wrong + (thread:get("wrong") or 0)
  end
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d ok=%d non200=%d wrong=%d " ..
    "connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
    summary.requests, summary.duration, summary.requests / seconds,
    latency:percentile(50.0), latency:percentile(99.0), t_ok, t_non200, t_wrong,
    e.connect, e.read, e.write, e.timeout))
  if t_non200 > 0 or t_wrong > 0 then
    io.write(string.format("echo2026.lua: %d non-200 responses and %d wrong bodies\n", t_non200, t_wrong))
    os.exit(3)
  end
end
