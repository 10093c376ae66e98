-- SPDX-License-Identifier: Apache-2.0
-- wrk script of the HTTP load benchmark's session churn (bench/http/run.sh, targets mcpcore-churn
-- and ts-churn): each unit of work is one session's whole lifecycle, four HTTP requests sent one
-- after the other, each after the previous one's answer:
--   1. initialize               POST, no session; the answer must be a 200 with an Mcp-Session-Id
--                               header and a body that holds the result (protocolVersion
--                               2025-11-25) with the request's id
--   2. notifications/initialized POST on that session; the answer must be a 202
--   3. tools/call echo           POST on that session (echo.lua's call, its own id); the answer
--                               must be a 200 whose body holds the echo result with that id
--   4. DELETE                    on that session; the answer must be a 200 or a 204
-- POSTs carry echo.lua's Content-Type and Accept, and all but initialize MCP-Protocol-Version
-- 2025-11-25 and the Mcp-Session-Id (as run.sh's own session opening does).
--
-- One connection per wrk thread: wrk gives a script no handle on the connection a request() or
-- response() is for, so this script keeps its lifecycle state per thread (each has its own Lua
-- state), and run.sh runs it with as many threads as connections (wrk -tN -cN). On its one
-- keep-alive connection a thread runs lifecycles back to back: wrk reuses the connection, so a new
-- TCP connection is not part of a lifecycle's cost, and "per connection" in this benchmark means
-- per session lifecycle. Should a thread ever have a request() while its previous request is
-- unanswered (more connections than threads, or wrk reconnecting after a socket error), the
-- lifecycle under way is counted incorrect and a new one starts.
--
-- A lifecycle is correct when every step is; a failed step is recorded (the thread's first
-- incorrect answer is printed by done()) and the lifecycle goes on to its DELETE, except after a
-- failed initialize (no session to go on with): then a new one starts. ok counts correct
-- lifecycles, non200 those with an answer of an unexpected status, wrong those with all statuses
-- right but a wrong header, body or id.
--
-- Environment: MCP_PATH (default /mcp).
-- Script argument (after wrk's `--`):
--   1. first id (default 1): ids are first_id + thread_index * 100000000 + n (two per lifecycle).
--
-- done() prints the RESULT line of echo.lua (echo_common.lua) with requests= the lifecycles
-- completed (a lifecycle under way when wrk stops is not counted) and rps= lifecycles per second;
-- its latency percentiles are those of one step (one HTTP request: wrk measures nothing longer),
-- and http_requests= the HTTP requests completed. It exits non-zero (os.exit(3)) when any
-- lifecycle was not correct.

local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "echo_common.lua")

local path = os.getenv("MCP_PATH") or "/mcp"
local json_headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
}
local expected_init = '"protocolVersion":"2025-11-25"'
local expected_echo = '"result":{"content":[{"type":"text","text":"hello"}]}'

-- Per-thread state (globals: done() reads the counters through thread:get).
lifecycles = 0
step = 1             -- the next step to send (1 to 4)
awaiting = false     -- a request was sent and its answer has not come yet
session = nil        -- this lifecycle's Mcp-Session-Id
lifecycle_status = nil  -- nil while correct so far, else "non200" or "wrong"
step_id = 0          -- the id of the request of steps 1 and 3
answered = 0         -- answers this thread has had

local threads = common.threads()

-- The headers of a step on the session (a new table each time: wrk.format adds to the one given).
local function session_headers(with_body)
  local h = {
    ["MCP-Protocol-Version"] = "2025-11-25",
    ["Mcp-Session-Id"] = session,
  }
  if with_body then
    for name, value in pairs(json_headers) do h[name] = value end
  end
  return h
end

local header = common.header

-- Ends the lifecycle under way: counts it, and starts the next one at initialize.
local function finish()
  lifecycles = lifecycles + 1
  if lifecycle_status == nil then
    ok = ok + 1
  elseif lifecycle_status == "non200" then
    non200 = non200 + 1
  else
    wrong = wrong + 1
  end
  step, session, lifecycle_status = 1, nil, nil
end

-- Records a failed step (the first kind of failure of the lifecycle is the one counted).
local function failed(kind, status, body)
  if lifecycle_status == nil then lifecycle_status = kind end
  common.bad(status, body)
end

function request()
  -- wrk builds one request of the first thread before the run, to check the script (it is never
  -- sent): an unanswered initialize before any answer is that one.
  if awaiting and not (answered == 0 and step == 1) then
    -- The previous request got no answer on this thread's connection.
    failed("wrong", 0, "step " .. step .. ": a new request before the answer (reconnected?)")
    finish()
  end
  awaiting = true
  if step == 1 then
    step_id = next_id
    next_id = next_id + 1
    return wrk.format("POST", path, {
      ["Content-Type"] = json_headers["Content-Type"], ["Accept"] = json_headers["Accept"],
    }, '{"jsonrpc":"2.0","id":' .. step_id .. ',"method":"initialize","params":{"protocolVersion":' ..
       '"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpcore-http-bench","version":"1"}}}')
  elseif step == 2 then
    return wrk.format("POST", path, session_headers(true), '{"jsonrpc":"2.0","method":"notifications/initialized"}')
  elseif step == 3 then
    step_id = next_id
    next_id = next_id + 1
    return wrk.format("POST", path, session_headers(true), '{"jsonrpc":"2.0","id":' .. step_id ..
                      ',"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}')
  else
    return wrk.format("DELETE", path, session_headers(false), nil)
  end
end

-- Whether the body holds the text and the answer to the step's id (the first "id": of the body).
local function answers(body, text)
  return body ~= nil and string.find(body, text, 1, true) ~= nil and
         tonumber(string.match(body, '"id":(%d+)')) == step_id
end

function response(status, hdrs, body)
  awaiting = false
  answered = answered + 1
  if step == 1 then
    session = header(hdrs, "mcp-session-id")
    if status ~= 200 then
      failed("non200", status, body)
    elseif session == nil or session == "" or not answers(body, expected_init) then
      failed("wrong", status, body)
    end
    if lifecycle_status ~= nil then finish() else step = 2 end
  elseif step == 2 then
    if status ~= 202 then failed("non200", status, body) end
    step = 3
  elseif step == 3 then
    if status ~= 200 then
      failed("non200", status, body)
    elseif not answers(body, expected_echo) then
      failed("wrong", status, body)
    end
    step = 4
  else
    if status ~= 200 and status ~= 204 then failed("non200", status, body) end
    finish()
  end
end

function init(args)
  common.start(args[1], true)
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + (thread:get("lifecycles") or 0) end
  common.result("churn.lua", summary, latency, total, string.format(" http_requests=%d", summary.requests))
end
