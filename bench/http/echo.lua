-- SPDX-License-Identifier: Apache-2.0
-- wrk script of the HTTP load benchmark (bench/http/run.sh): every request is a POST of
-- `tools/call echo {"text":"hello"}` with its own integer id, on the MCP session named by the
-- environment, with the headers an MCP client sends:
--   Content-Type: application/json
--   Accept: application/json, text/event-stream
--   MCP-Protocol-Version: 2025-11-25
--   Mcp-Session-Id: $MCP_SESSION_ID        (omitted when the variable is empty)
--
-- Environment: MCP_PATH (default /mcp), MCP_SESSION_ID: one session id, or several separated by
-- spaces; with several, the requests rotate over them (each wrk thread sends its n-th request on
-- the n-th session, modulo their number), so that a balancer in front of several servers sends
-- each session's requests to the server that holds it (run.sh's targets behind HAProxy).
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
--          connect_errors=N read_errors=N write_errors=N timeouts=N p90_us=N p999_us=N
-- (latency percentiles of wrk's histogram, in µs; p999 is the 99.9th)
-- and exits non-zero (os.exit(3)) when any response was not a correct 200.

-- echo_common.lua (beside this script, wherever wrk is started from) defines wrk's setup(),
-- request(), response() and done() from what this script sends and expects.
local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "echo_common.lua")

local path = os.getenv("MCP_PATH") or "/mcp"
local sessions = {}
for id in string.gmatch(os.getenv("MCP_SESSION_ID") or "", "%S+") do table.insert(sessions, id) end
-- The request after its id, and what a correct body holds.
local after_id = ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
local expected = { '"result":{"content":[{"type":"text","text":"hello"}]}' }

local headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2025-11-25",
}
if #sessions == 1 then headers["Mcp-Session-Id"] = sessions[1] end

if #sessions > 1 then
  -- One header table per session, taken in turn.
  local per_session = {}
  for k, id in ipairs(sessions) do
    local h = { ["Mcp-Session-Id"] = id }
    for name, value in pairs(headers) do h[name] = value end
    per_session[k] = h
  end
  local turn = 0
  common.define("echo.lua", path, function()
    turn = turn % #per_session + 1
    return per_session[turn]
  end, after_id, expected)
else
  common.define("echo.lua", path, headers, after_id, expected)
end

function init(args)
  common.start(args[2], args[1] ~= "fixed")
end
