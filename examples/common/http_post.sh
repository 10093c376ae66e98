# SPDX-License-Identifier: Apache-2.0
# Sourced by the examples' HTTP checks: mcp_post <port> <body> [header...] writes the whole
# HTTP/1.1 response of one POST /mcp to stdout (bash's /dev/tcp, loopback only, 10 s bound).
mcp_post() {
  local port="$1" body="$2"
  shift 2
  local fd
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  {
    printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n' "$port"
    printf 'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n'
    local h
    for h in "$@"; do printf '%s\r\n' "$h"; done
    printf 'Content-Length: %s\r\n\r\n%s' "${#body}" "$body"
  } >&"$fd"
  timeout 10 cat <&"$fd"
  exec {fd}>&-
}
