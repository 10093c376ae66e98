#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs mcpcore-custom-plugins on an ephemeral loopback port: a call without the API key is 401, a
# call with it is answered by the tool with the authenticator's principal, and the audit sink wrote
# that call's row to the JSON-lines file.
# Usage: check_custom_plugins.sh <mcpcore-custom-plugins>
set -uo pipefail
exe="$1"
source "$(dirname "$0")/../common/http_post.sh"
work="$(mktemp -d /tmp/mcpcore-custom-plugins-XXXXXX)"
server=""
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "not ok - $*"; exit 1; }

mkfifo "$work/stdin"
MCPCORE_EXAMPLE_API_KEY=s3cret-example-key "$exe" "$work/audit.jsonl" 0 <"$work/stdin" >"$work/out" 2>"$work/err" &
server=$!
exec {hold}>"$work/stdin"  # keeps the example's stdin open; closing it ends the example
for _ in $(seq 200); do grep -q '^listening on' "$work/out" 2>/dev/null && break; sleep 0.05; done
port="$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/out")"
[[ -n "$port" ]] || fail "the example did not start: $(head -c 400 "$work/err")"

call='{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}'
reply="$(mcp_post "$port" "$call")"
[[ "$reply" == "HTTP/1.1 401"* ]] || fail "a call without a key was not 401: ${reply:0:300}"
reply="$(mcp_post "$port" "$call" "X-Api-Key: wrong-key-of-the-same-len")"
[[ "$reply" == "HTTP/1.1 401"* ]] || fail "a call with a wrong key was not 401: ${reply:0:300}"
reply="$(mcp_post "$port" "$call" "X-Api-Key: s3cret-example-key")"
[[ "$reply" == "HTTP/1.1 200"* ]] || fail "the authenticated call was not 200: ${reply:0:300}"
[[ "$reply" == *'"id":7,"result":{"content":[{"type":"text","text":"you are api-client"}]}'* ]] \
  || fail "the tool did not see the authenticator's principal: ${reply:0:600}"

exec {hold}>&-  # stdin ends: the example stops its server and exits
for _ in $(seq 200); do kill -0 "$server" 2>/dev/null || break; sleep 0.05; done
kill -0 "$server" 2>/dev/null && fail "the example did not exit when its stdin ended"
wait "$server"; rc=$?
server=""
[[ $rc -eq 0 ]] || fail "the example exited with $rc"
grep -q '"principal":"api-client"' "$work/audit.jsonl" && grep -q 'whoami' "$work/audit.jsonl" \
  || fail "no audit row for the call: $(head -c 600 "$work/audit.jsonl")"
echo "ok - 401 without the key, the call answered with the principal, the audit row written"
