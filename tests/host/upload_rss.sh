#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 60 unauthenticated 4 MiB uploads against mcpcore-host: each connection sends a POST head
# declaring `Content-Length: 4194304`, then streams the 4 MiB body. Every one must be answered 401
# (the head is checked before the body is read, docs/http.md#head-checks), and the server's peak
# resident memory (VmHWM) may grow by less than 64 MiB over its resident size before the uploads
# (docs/transport.md#body-buffering). Loopback only; the run is bounded in time.
#
# Usage: upload_rss.sh <mcpcore-host> [connections] [bound-KiB]
set -uo pipefail
host="$1"
conns="${2:-60}"
bound_kib="${3:-65536}"
body_bytes=4194304
work="$(mktemp -d /tmp/mcpcore-host-upload-rss-XXXXXX)"
server=""
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/data"
chmod 700 "$work/data"
"$host" --data-dir "$work/data" --port 0 --port-file "$work/port" --no-journal >"$work/out" 2>"$work/err" </dev/null &
server=$!
for _ in $(seq 400); do [[ -s "$work/port" ]] && break; sleep 0.05; done
if [[ ! -s "$work/port" ]]; then
  echo "not ok - mcpcore-host did not start: $(head -c 400 "$work/err")"
  exit 1
fi
port="$(cat "$work/port")"

kib_of() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$server/status"; }

# One request first, so that the baseline includes a served connection.
exec {probe}<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$port" >&"$probe"
timeout 10 cat <&"$probe" >/dev/null
exec {probe}>&-
sleep 0.5
before="$(kib_of VmRSS)"

fds=()
for _ in $(seq "$conns"); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || {
    echo "not ok - could not connect"
    exit 1
  }
  fds+=("$fd")
  printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %s\r\n\r\n' \
    "$port" "$body_bytes" >&"$fd"
done
writers=()
for fd in "${fds[@]}"; do
  (head -c "$body_bytes" /dev/zero >&"$fd") 2>/dev/null &
  writers+=($!)
done
statuses=()
for fd in "${fds[@]}"; do
  line=""
  IFS= read -r -t 60 line <&"$fd" || true
  statuses+=("${line%$'\r'}")
done
for w in "${writers[@]}"; do
  timeout 60 tail --pid="$w" -f /dev/null 2>/dev/null || kill "$w" 2>/dev/null
done
sleep 0.5
after="$(kib_of VmRSS)"
peak="$(kib_of VmHWM)"
for fd in "${fds[@]}"; do exec {fd}>&-; done

# The checks, by name (docs/security.md's catalogue quotes them).
name_401="each unauthenticated 4 MiB upload is answered 401 on its head"
name_rss="60 unauthenticated 4 MiB uploads grow the peak RSS by less than 64 MiB"
passed=0
failed=0
unauthorized=0
for s in "${statuses[@]}"; do [[ "$s" == "HTTP/1.1 401 "* ]] && unauthorized=$((unauthorized + 1)); done
if [[ $unauthorized -eq $conns ]]; then
  echo "ok - $name_401 ($conns of $conns)"
  passed=$((passed + 1))
else
  echo "not ok - $name_401: $unauthorized of $conns (first: '${statuses[0]:-}')"
  failed=$((failed + 1))
fi
growth=$((peak - before))
echo "# VmRSS before: ${before} KiB, after: ${after} KiB, peak (VmHWM): ${peak} KiB, growth: ${growth} KiB"
if [[ $growth -lt $bound_kib ]]; then
  echo "ok - $name_rss: ${growth} KiB (< ${bound_kib} KiB)"
  passed=$((passed + 1))
else
  echo "not ok - $name_rss: ${growth} KiB (bound ${bound_kib} KiB)"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
