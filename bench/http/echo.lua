-- SPDX-License-Identifier: Apache-2.0
-- wrk script of the HTTP load benchmark (bench/http/run.sh): every request is a POST of
-- `tools/call echo {"text":"hello"}` with its own integer id, on the MCP session named by the
-- environment, with the headers an MCP client sends:
--   Content-Type: application/json
--   Accept: application/json, text/event-stream
--   MCP-Protocol-Version: 2025-11-25
--   Mcp-Session-Id: $MCP_SESSION_ID        (omitted when the variable is empty)
--
-- Environment: MCP_PATH (default /mcp), MCP_SESSION_ID.
-- Script arguments (after wrk's `--`):
--   1. check mode: "id" (default) — a response is correct when it is a 200 whose body holds the
--      echo result and the id of a request this thread sent and has not had answered yet (a
--      server that mis-routes responses under concurrency fails it); "fixed" — the same without
--      the id check, for a server that answers one fixed body (the nginx ceiling).
--   2. first id (default 1): ids are first_id + thread_index * 100000000 + n, so that
--      successive wrk runs against one session never reuse an id.
--
-- done() prints one line that run.sh parses:
--   RESULT requests=N duration_us=N rps=X p50_us=N p99_us=N ok=N non200=N wrong=N
--          connect_errors=N read_errors=N write_errors=N timeouts=N
-- and exits non-zero (os.exit(3)) when any response was not a correct 200.

local path = os.getenv("MCP_PATH") or "/mcp"
local session = os.getenv("MCP_SESSION_ID") or ""
local expected = '"result":{"content":[{"type":"text","text":"hello"}]}'

local headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2025-11-25",
}
if session ~= "" then headers["Mcp-Session-Id"] = session end

-- Per-thread state (each wrk thread has its own Lua state; done() reads them through setup()).
check_ids = true
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
  if args[1] == "fixed" then check_ids = false end
  local first = tonumber(args[2] or "1") or 1
  next_id = first + (thread_index or 0) * 100000000
end

function request()
  local id = next_id
  next_id = next_id + 1
  outstanding[id] = true
  local body = '{"jsonrpc":"2.0","id":' .. id ..
               ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
  return wrk.format("POST", path, headers, body)
end

function response(status, hdrs, body)
  if status ~= 200 then
    non200 = non200 + 1
    return
  end
  if body == nil or not string.find(body, expected, 1, true) then
    wrong = wrong + 1
    return
  end
  if check_ids then
    local id = tonumber(string.match(body, '"id":(%d+)'))
    if id == nil or not outstanding[id] then
      wrong = wrong + 1
      return
    end
    outstanding[id] = nil
  end
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
    io.write(string.format("echo.lua: %d non-200 responses and %d wrong bodies\n", t_non200, t_wrong))
    os.exit(3)
  end
end
