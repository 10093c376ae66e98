-- SPDX-License-Identifier: Apache-2.0
-- What the wrk scripts of the HTTP load benchmark (echo.lua, echo2026.lua, stream.lua, churn.lua;
-- bench/http/run.sh) share. For the one-request-per-call scripts (all but churn.lua): wrk's
-- setup(), request(), response() and done(), that is the per-thread id bookkeeping, the counting
-- of correct and incorrect responses and the RESULT line. Each script keeps its own request
-- (headers, and the body after the id), what a correct body of its era holds and its arguments
-- (its init()), and loads this file with dofile from its own directory, so that wrk may be started
-- from any working directory:
--   local common = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "echo_common.lua")
--   common.define("echo.lua", path, headers, after_id, expected)
--   function init(args) common.start(first_id, check_ids) end
-- churn.lua, whose unit is a session's whole lifecycle, has its own request() and response() and
-- takes setup() and the RESULT line from here (common.threads, common.result).
--
-- Per-thread state: each wrk thread has its own Lua state (it loads the script, and so this file,
-- again), and done() reads the counters of each through the thread objects setup() kept. Those
-- counters must therefore be globals: thread:get reads a thread's globals only.
next_id = 1
outstanding = {}
ok = 0
non200 = 0
wrong = 0
first_bad = ""
local check_ids = true

local common = {}
local threads = {}

-- threads(): defines wrk's setup(), which numbers the threads (thread_index, so that their ids
-- never meet) and keeps them for done(); returns the list.
function common.threads()
  function setup(thread)
    thread:set("thread_index", #threads)
    table.insert(threads, thread)
  end
  return threads
end

-- result(script, summary, latency, count): prints the one line run.sh parses, counting `count`
-- units (the requests, or churn.lua's lifecycles) and the per-thread counters ok, non200 and
-- wrong; exits non-zero (os.exit(3)) when any unit was not correct, after the first incorrect
-- response of each thread (first_bad: its status and the start of its body). The percentiles are
-- wrk's, of one HTTP request each (its latency histogram), in µs. extra: more " name=value" text.
function common.result(script, summary, latency, count, extra)
  local t_ok, t_non200, t_wrong = 0, 0, 0
  for _, thread in ipairs(threads) do
    t_ok = t_ok + (thread:get("ok") or 0)
    t_non200 = t_non200 + (thread:get("non200") or 0)
    t_wrong = t_wrong + (thread:get("wrong") or 0)
  end
  count = count or summary.requests
  local seconds = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d ok=%d non200=%d wrong=%d " ..
    "connect_errors=%d read_errors=%d write_errors=%d timeouts=%d p90_us=%d p999_us=%d%s\n",
    count, summary.duration, count / seconds,
    latency:percentile(50.0), latency:percentile(99.0), t_ok, t_non200, t_wrong,
    e.connect, e.read, e.write, e.timeout, latency:percentile(90.0), latency:percentile(99.9), extra or ""))
  if t_non200 > 0 or t_wrong > 0 then
    io.write(string.format("%s: %d non-200 and %d wrong\n", script, t_non200, t_wrong))
    for _, thread in ipairs(threads) do
      local first = thread:get("first_bad") or ""
      if first ~= "" then io.write(string.format("%s: the first of a thread: %s\n", script, first)) end
    end
    os.exit(3)
  end
end

-- bad(status, body): records the thread's first incorrect response, for result()'s report.
function common.bad(status, body)
  if first_bad == "" then
    first_bad = string.format("HTTP %d %s", status, string.sub(string.gsub(body or "", "%s+", " "), 1, 300))
  end
end

-- start(first, ids): for the script's init(). Ids are first + thread_index * 100000000 + n (first
-- defaults to 1), so that successive wrk runs against one server or session never reuse an id;
-- with ids false, responses need not carry them (a server that answers one fixed body).
function common.start(first, ids)
  next_id = (tonumber(first or "1") or 1) + (thread_index or 0) * 100000000
  check_ids = ids
end

-- define(script, path, headers, after_id, expected): defines wrk's functions for that script.
--   request()  a POST to path with the headers (a table, or a function that returns the table of
--              each request: echo.lua's rotation over several sessions) and the JSON-RPC request
--              {"jsonrpc":"2.0","id":<a new id> followed by after_id (the method and params; a
--              string, or a function of the id that returns it: stream.lua's progress token
--              repeats the id); the id is awaited until a response carries it
--   response() counts one response: it is correct when it is a 200 whose body holds every string
--              of `expected` (a list of strings; or a function(headers, body) that says whether
--              the response is correct: stream.lua's check of the SSE events) and (see start) the
--              id of a request this thread sent and has not had answered yet (a server that
--              mis-routes responses under concurrency fails it); the first "id": of the body is
--              taken as the response's own, as no result these scripts expect holds an "id"
--              member, and no message before it (stream.lua's progress notifications) either
--   done()     result() above, over every request wrk completed:
--                RESULT requests=N duration_us=N rps=X p50_us=N p99_us=N ok=N non200=N wrong=N
--                       connect_errors=N read_errors=N write_errors=N timeouts=N p90_us=N p999_us=N
function common.define(script, path, headers, after_id, expected)
  common.threads()

  function request()
    local id = next_id
    next_id = next_id + 1
    outstanding[id] = true
    local h = headers
    if type(h) == "function" then h = h() end
    local rest = after_id
    if type(rest) == "function" then rest = rest(id) end
    return wrk.format("POST", path, h, '{"jsonrpc":"2.0","id":' .. id .. rest)
  end

  local bad = common.bad

  function response(status, hdrs, body)
    if status ~= 200 then
      non200 = non200 + 1
      bad(status, body)
      return
    end
    if body == nil then
      wrong = wrong + 1
      bad(status, body)
      return
    end
    if type(expected) == "function" then
      if not expected(hdrs, body) then
        wrong = wrong + 1
        bad(status, body)
        return
      end
    else
      for _, e in ipairs(expected) do
        if not string.find(body, e, 1, true) then
          wrong = wrong + 1
          bad(status, body)
          return
        end
      end
    end
    if check_ids then
      local id = tonumber(string.match(body, '"id":(%d+)'))
      if id == nil or not outstanding[id] then
        wrong = wrong + 1
        bad(status, body)
        return
      end
      outstanding[id] = nil
    end
    ok = ok + 1
  end

  function done(summary, latency, requests)
    common.result(script, summary, latency)
  end
end

-- The value of header `name` (lower case) in wrk's response headers, whatever the case the server
-- gave it (the servers differ); nil when absent.
function common.header(hdrs, name)
  for k, v in pairs(hdrs) do
    if string.lower(k) == name then return v end
  end
  return nil
end

return common
