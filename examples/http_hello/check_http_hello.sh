#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs mcpcore-http-hello (the README's embedding program: port 8765 on 127.0.0.1, a token file
# named `tokens` in its working directory) and calls its tool with a bearer token. Skipped (77)
# when something else already listens on 8765.
# Usage: check_http_hello.sh <mcpcore-http-hello>
set -uo pipefail
exe="$1"
source "$(dirname "$0")/../common/http_post.sh"
port=8765
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "skipped - 127.0.0.1:$port is in use"
  exit 77
fi
work="$(mktemp -d /tmp/mcpcore-http-hello-XXXXXX)"
server=""
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "not ok - $*"; exit 1; }

token="hello-example-token"
printf 'sha256:%s  example-client  operator  service\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" \
  >"$work/tokens"
chmod 600 "$work/tokens"
(cd "$work" && exec "$exe") >"$work/out" 2>"$work/err" </dev/null &
server=$!
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
kill -0 "$server" 2>/dev/null || fail "the example did not start: $(head -c 400 "$work/err")"

call='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
reply="$(mcp_post "$port" "$call")"
[[ "$reply" == "HTTP/1.1 401"* ]] || fail "a call without a token was not 401: ${reply:0:300}"
reply="$(mcp_post "$port" "$call" "Authorization: Bearer $token")"
[[ "$reply" == "HTTP/1.1 200"* ]] || fail "the call was not 200: ${reply:0:300}"
[[ "$reply" == *'"id":1,"result":{"content":[{"type":"text","text":"hi"}]}'* ]] \
  || fail "echo did not answer hi: ${reply:0:600}"
echo "ok - 401 without a token, echo answered with one"
