#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CORS over a real socket with curl (docs/http.md#cors): the conformance fixture started with
# --cors-origin for one page origin; a preflight from it passes the Asio server and is answered 204
# with the CORS headers, actual answers (200, the head check's 401) carry them, and what CORS must
# not change stays: an unlisted origin's preflight gets no CORS header, its POST is 403 -32008, a
# listed origin with a rebinding Host is 403. Loopback only.
#
# Usage: cors_curl.sh <mcpcore-conformance-server>
set -uo pipefail
fixture="$1"
work="$(mktemp -d /tmp/mcpcore-cors-curl-XXXXXX)"
pid=
cleanup() {
  if [[ -n "$pid" ]]; then
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
page="http://127.0.0.1:6274"
stranger="http://127.0.0.1:6275"
token="cors-curl-$RANDOM$RANDOM"
printf 'sha256:%s  page-user  -  engine\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" >"$work/tokens"
chmod 600 "$work/tokens"

"$fixture" --port 0 --port-file "$work/port" --token-file "$work/tokens" --cors-origin "$page" >/dev/null 2>"$work/stderr" &
pid=$!
for _ in $(seq 1 800); do
  [[ -s "$work/port" ]] && break
  sleep 0.025
done
if [[ ! -s "$work/port" ]]; then
  echo "not ok - the fixture did not start: $(head -c 400 "$work/stderr")"
  exit 1
fi
url="http://127.0.0.1:$(tr -d '\n' <"$work/port")/mcp"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'

# send <name> <curl args...>: the response head and body in $work/<name>.
send() {
  local name="$1"
  shift
  curl -sS -i --max-time 10 "$@" "$url" >"$work/$name" 2>"$work/$name.err" || true
}
# expect <name> <what> <command...>: one check.
expect() {
  local name="$1" what="$2"
  shift 2
  if "$@"; then
    echo "ok - $name: $what"
    passed=$((passed + 1))
  else
    echo "not ok - $name: $what; the answer was: $(tr -d '\r' <"$work/$name" | head -c 600) $(cat "$work/$name.err")"
    failed=$((failed + 1))
  fi
}
status_is() { head -n1 "$work/$1" | grep -q " $2 "; }
has() { tr -d '\r' <"$work/$1" | grep -qi -- "^$2"; }
lacks() { ! tr -d '\r' <"$work/$1" | grep -qi -- "^$2"; }

send preflight -X OPTIONS -H "Origin: $page" -H "Access-Control-Request-Method: POST" \
  -H "Access-Control-Request-Headers: content-type,authorization,mcp-session-id,mcp-protocol-version,x-other"
expect preflight "204" status_is preflight 204
expect preflight "Access-Control-Allow-Origin is the page's origin" has preflight "Access-Control-Allow-Origin: $page\$"
expect preflight "the methods" has preflight "Access-Control-Allow-Methods: GET, POST, DELETE\$"
expect preflight "the allowed requested headers only" \
  has preflight "Access-Control-Allow-Headers: content-type, authorization, mcp-session-id, mcp-protocol-version\$"
expect preflight "the max age" has preflight "Access-Control-Max-Age: 600\$"
expect preflight "Vary names Origin" has preflight "Vary: Origin"

send stranger_preflight -X OPTIONS -H "Origin: $stranger" -H "Access-Control-Request-Method: POST"
expect stranger_preflight "an unlisted origin's preflight is 405" status_is stranger_preflight 405
expect stranger_preflight "and carries no CORS header" lacks stranger_preflight "Access-Control-Allow-"

send actual -X POST -H "Origin: $page" -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
  -H "Accept: application/json, text/event-stream" --data "$init"
expect actual "initialize from the page answers 200" status_is actual 200
expect actual "with Access-Control-Allow-Origin" has actual "Access-Control-Allow-Origin: $page\$"
expect actual "exposing Mcp-Session-Id" has actual "Access-Control-Expose-Headers: Mcp-Session-Id"
expect actual "and the session id" has actual "Mcp-Session-Id: "

send unauthenticated -X POST -H "Origin: $page" -H "Authorization: Bearer wrong" -H "Content-Type: application/json" \
  --data "$init"
expect unauthenticated "a bad credential is 401 (the head check's answer)" status_is unauthenticated 401
expect unauthenticated "with Access-Control-Allow-Origin" has unauthenticated "Access-Control-Allow-Origin: $page\$"
expect unauthenticated "and its challenge" has unauthenticated "WWW-Authenticate: Bearer"

send stranger_post -X POST -H "Origin: $stranger" -H "Authorization: Bearer $token" \
  -H "Content-Type: application/json" --data "$init"
expect stranger_post "an unlisted origin's POST is still 403" status_is stranger_post 403
expect stranger_post "-32008" grep -q -- '-32008' "$work/stranger_post"
expect stranger_post "without a CORS header" lacks stranger_post "Access-Control-Allow-Origin"

send rebound -X POST -H "Origin: $page" -H "Host: attacker.example" -H "Authorization: Bearer $token" \
  -H "Content-Type: application/json" --data "$init"
expect rebound "a listed origin with a rebinding Host is 403" status_is rebound 403

echo "# $passed passed, $failed failed"
[[ $failed -eq 0 ]]
