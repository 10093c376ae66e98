-- SPDX-License-Identifier: Apache-2.0
-- wrk script of the HTTP load benchmark's streamed call (bench/http/run.sh, targets mcpcore-stream
-- and ts-stream): every request is a POST of `tools/call progress10 {"text":"hello"}` with its own
-- integer id N and the progress token "pN" in params._meta, on the MCP sessions named by the
-- environment in turn (each wrk thread sends its n-th request on the n-th session, modulo their
-- number), with the headers of echo.lua:
--   Content-Type: application/json
--   Accept: application/json, text/event-stream
--   MCP-Protocol-Version: 2025-11-25
--   Mcp-Session-Id: <the session>
--   Authorization: Bearer <the session's token>      (when MCP_BEARER names one)
-- run.sh opens one session per connection, each as its own principal (its own token): mcpcore
-- holds at most 4 streamed POSTs of one principal, and of one session, open at once
-- (docs/sessions.md#the-stream-budget), as several clients would each hold theirs.
-- progress10 (echo_server.cpp, ts_echo_server.mjs) sends 10 notifications/progress for that token
-- before its result, so both servers answer with an SSE stream that ends with the result.
--
-- A response is correct when it is a 200 with Content-Type text/event-stream whose events' data
-- hold, in this order, exactly PROGRESS_STEPS notifications/progress carrying the request's token
-- with strictly increasing progress, then the echo result with the id of a request this thread sent
-- and has not had answered yet, and nothing after it. Events without data (a priming event) are
-- skipped; any other message fails the response, as does an event whose data spans several lines
-- (neither server writes one).
--
-- Environment: MCP_PATH (default /mcp), MCP_SESSION_ID (session ids separated by spaces),
-- MCP_BEARER (the bearer token each of those sessions was opened with, in the same order; empty
-- for none).
-- Script argument (after wrk's `--`):
--   1. first id (default 1): ids are first_id + thread_index * 100000000 + n, so that successive
--      wrk runs against one session never reuse an id.
--
-- done() prints the RESULT line of echo.lua (echo_common.lua) and exits non-zero (os.exit(3))
-- when any response was not correct.

local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "echo_common.lua")

-- Progress notifications that a correct answer holds (progress10's count).
local PROGRESS_STEPS = 10

local path = os.getenv("MCP_PATH") or "/mcp"
local sessions, tokens = {}, {}
for id in string.gmatch(os.getenv("MCP_SESSION_ID") or "", "%S+") do table.insert(sessions, id) end
for token in string.gmatch(os.getenv("MCP_BEARER") or "", "%S+") do table.insert(tokens, token) end
if #sessions == 0 then error("stream.lua: MCP_SESSION_ID names no session") end
if #tokens > 0 and #tokens ~= #sessions then error("stream.lua: MCP_BEARER must name one token per session") end
-- One header table per session, taken in turn.
local per_session = {}
for k, id in ipairs(sessions) do
  per_session[k] = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "2025-11-25",
    ["Mcp-Session-Id"] = id,
    ["Authorization"] = tokens[k] and ("Bearer " .. tokens[k]) or nil,
  }
end
local turn = 0
local function headers()
  turn = turn % #per_session + 1
  return per_session[turn]
end
-- The request after its id: the token repeats the id, so that the check ties each notification to
-- the request it answers.
local function after_id(id)
  return ',"method":"tools/call","params":{"name":"progress10","arguments":{"text":"hello"},' ..
         '"_meta":{"progressToken":"p' .. id .. '"}}}'
end
local result_text = '"result":{"content":[{"type":"text","text":"hello"}]}'

local header = common.header

-- Whether the SSE body holds the progress notifications, then the result (the id itself is
-- checked against the outstanding ones by echo_common.lua).
local function check(hdrs, body)
  local content_type = header(hdrs, "content-type") or ""
  if string.sub(content_type, 1, 17) ~= "text/event-stream" then return false end
  local count, last, token, result_id = 0, nil, nil, nil
  for line in string.gmatch(body, "[^\r\n]+") do
    local data = string.match(line, "^data: ?(.*)$")
    if data ~= nil and data ~= "" then
      if result_id ~= nil then return false end  -- a message after the result
      if string.find(data, '"method":"notifications/progress"', 1, true) then
        local t = string.match(data, '"progressToken":"([^"]*)"')
        local p = tonumber(string.match(data, '"progress":([-%d.eE+]+)'))
        if t == nil or p == nil or (last ~= nil and p <= last) or (token ~= nil and t ~= token) then return false end
        token, last, count = t, p, count + 1
      elseif string.find(data, result_text, 1, true) then
        result_id = string.match(data, '"id":(%d+)')
        if result_id == nil then return false end
      else
        return false
      end
    end
  end
  return result_id ~= nil and count == PROGRESS_STEPS and token == "p" .. result_id
end

common.define("stream.lua", path, headers, after_id, check)

function init(args)
  common.start(args[1], true)
end
