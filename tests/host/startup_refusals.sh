#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mcpcore-host refuses to start, with a clear message and exit status 1, on each bad input of its
# issue: a token file with bad permissions or syntax, an allow-list entry that does not exist (and
# an allow-list that is not JSON), a data directory on a read-only filesystem or that is not a
# directory, a port already in use, half a TLS configuration, task flags that cannot work together
# (docs/host-server.md#flags), --events-channel without --events-db, an --events-db that cannot be
# reached, a --server-id that is not 1-128 printable ASCII characters, and --oauth-* flags that cannot
# work (docs/host-server.md#with-an-authorization-server). Loopback only. Also: --help states the defaults truly and lists the
# task flags.
#
# Usage: startup_refusals.sh <mcpcore-host>
set -uo pipefail
host="$1"
work="$(mktemp -d /tmp/mcpcore-host-refusals-XXXXXX)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# expect_refusal <name> <text the message must contain> <args...>
expect_refusal() {
  local name="$1" want="$2"
  shift 2
  local err="$work/stderr" code=0 port=(--port 0)
  [[ " $* " == *" --port "* ]] && port=()
  timeout 20 "$host" "${port[@]}" --no-journal "$@" >/dev/null 2>"$err" </dev/null || code=$?
  if [[ $code -eq 1 ]] && grep -qF -- "$want" "$err"; then
    echo "ok - $name"
    passed=$((passed + 1))
  else
    echo "not ok - $name: exit status $code (want 1), message: $(head -c 400 "$err")"
    failed=$((failed + 1))
  fi
}

# A data directory that a first run created (it holds the token file and the databases).
fresh_dir() {
  local d="$work/$1"
  mkdir -p "$d"
  chmod 700 "$d"
  echo "$d"
}

d=$(fresh_dir perms)
printf 'sha256:%064d alice operator service\n' 0 >"$d/tokens"
chmod 644 "$d/tokens"
expect_refusal "a token file readable by others" "accessible by group or others (mode 0644)" --data-dir "$d"

d=$(fresh_dir syntax)
printf '# tokens\nsha256:nothex alice operator service\n' >"$d/tokens"
chmod 600 "$d/tokens"
expect_refusal "a token file with a syntax error names the line" "tokens:2: the digest" --data-dir "$d"

d=$(fresh_dir tier)
printf 'sha256:%064d alice root service\n' 0 >"$d/tokens"
chmod 600 "$d/tokens"
expect_refusal "a token file with an unknown tier" "tokens:1: unknown tier" --data-dir "$d"

d=$(fresh_dir allowlist)
printf '{"commands":[{"name":"gone","description":"d","program":"/nonexistent/program"}]}\n' >"$work/allow.json"
expect_refusal "an allow-list entry that does not exist" '"/nonexistent/program" does not exist' \
  --data-dir "$d" --allowlist "$work/allow.json"

printf '{"commands":[' >"$work/broken.json"
expect_refusal "an allow-list that is not JSON" "allow-list $work/broken.json" --data-dir "$d" --allowlist "$work/broken.json"

expect_refusal "a missing allow-list" "allow-list $work/missing.json" --data-dir "$d" --allowlist "$work/missing.json"

touch "$work/plain-file"
expect_refusal "a data directory that is a file" "is not a directory" --data-dir "$work/plain-file"

expect_refusal "half a TLS configuration" "--tls-cert and --tls-key go together" --data-dir "$d" --tls-cert "$work/plain-file"

# Events across hosts (docs/host-server.md#several-hosts-on-postgresql): a channel without a
# database; a database that cannot be reached (or, in a build without PostgreSQL support, any
# --events-db: both messages name the flag).
expect_refusal "--events-channel without --events-db" "--events-channel needs --events-db" --data-dir "$d" \
  --events-channel mcp_events
expect_refusal "an --events-db that cannot be reached" "--events-db" --data-dir "$(fresh_dir events)" \
  --events-db "host=$work/no-such-socket-dir dbname=none connect_timeout=2"

# A port already taken: a first server holds it.
d2=$(fresh_dir busy)
"$host" --data-dir "$d2" --port 0 --port-file "$work/port" --no-journal >/dev/null 2>&1 </dev/null &
first=$!
for _ in $(seq 200); do [[ -s "$work/port" ]] && break; sleep 0.05; done
if [[ -s "$work/port" ]]; then
  expect_refusal "a port already in use" "cannot listen on 127.0.0.1:$(cat "$work/port")" --data-dir "$d" \
    --port "$(cat "$work/port")"
else
  echo "not ok - a port already in use: the first server did not start"
  failed=$((failed + 1))
fi
kill "$first" 2>/dev/null
wait "$first" 2>/dev/null

# A read-only filesystem: a tmpfs mounted read-only in a private mount namespace (unshare -rm
# needs user namespaces; where the machine has none, the case says so and is skipped).
if unshare -rm true 2>/dev/null; then
  mkdir -p "$work/ro"
  err="$work/ro-stderr"
  code=0
  unshare -rm sh -c "mount -t tmpfs -o ro,size=1m tmpfs '$work/ro' && exec timeout 20 '$host' --port 0 --no-journal --data-dir '$work/ro'" \
    >/dev/null 2>"$err" </dev/null || code=$?
  if [[ $code -eq 1 ]] && grep -qF "read-only filesystem" "$err"; then
    echo "ok - a data directory on a read-only filesystem"
    passed=$((passed + 1))
  else
    echo "not ok - a data directory on a read-only filesystem: exit status $code, message: $(head -c 400 "$err")"
    failed=$((failed + 1))
  fi
else
  echo "ok - a data directory on a read-only filesystem # SKIP no user namespaces on this machine"
fi

# Task flags (docs/host-server.md#flags): a zero cap is refused by the option's own range check
# (CLI11's usage error, a non-zero status naming the flag); ttls that cannot work together are
# refused by the host (status 1).
d=$(fresh_dir taskflags)
for flag in --max-tasks-per-principal --max-tasks; do
  err="$work/flag-stderr"
  code=0
  timeout 20 "$host" --port 0 --no-journal --data-dir "$d" "$flag" 0 >/dev/null 2>"$err" </dev/null || code=$?
  if [[ $code -ne 0 ]] && grep -qF -- "$flag" "$err"; then
    echo "ok - $flag 0 is refused"
    passed=$((passed + 1))
  else
    echo "not ok - $flag 0 is refused: exit status $code, message: $(head -c 400 "$err")"
    failed=$((failed + 1))
  fi
done
expect_refusal "--task-ttl-ms above --max-task-ttl-ms" \
  "--task-ttl-ms (7200000) must lie between 1000 and --max-task-ttl-ms (3600000)" \
  --data-dir "$d" --task-ttl-ms 7200000 --max-task-ttl-ms 3600000
expect_refusal "--max-task-ttl-ms below the shortest ttl" "--max-task-ttl-ms (500) must be at least 1000" \
  --data-dir "$d" --max-task-ttl-ms 500 --task-ttl-ms 500

# --server-id (docs/host-server.md#flags): at most 128 printable ASCII characters, no blanks; the
# option's own check refuses anything else (CLI11's usage error, naming the flag), before the
# approval service would (approval_options::server_id, docs/approvals.md#several-servers).
d=$(fresh_dir serverid)
for bad in "$(printf 'caf\xc3\xa9')" "$(printf 'ctl\001x')" "$(printf 'x%.0s' $(seq 129))" "two words"; do
  err="$work/serverid-stderr"
  code=0
  timeout 20 "$host" --port 0 --no-journal --data-dir "$d" --server-id "$bad" >/dev/null 2>"$err" </dev/null || code=$?
  if [[ $code -ne 0 && $code -ne 124 ]] && grep -qF -- "--server-id" "$err" && grep -qF -- "printable ASCII" "$err"; then
    echo "ok - --server-id ${bad:0:12}... is refused"
    passed=$((passed + 1))
  else
    echo "not ok - --server-id ${bad:0:12}... is refused: exit status $code, message: $(head -c 400 "$err")"
    failed=$((failed + 1))
  fi
done

# An authorization server instead of the token file (docs/host-server.md#with-an-authorization-server):
# the flags that need --oauth-issuer, --stdio, a missing audience, a bad scope flag, plain HTTP to a
# host that is not loopback, and an issuer whose metadata cannot be read (nothing listens on port 1
# of loopback). A build without mcpcore::oauth refuses --oauth-issuer itself, saying so.
d=$(fresh_dir oauth)
aud=http://127.0.0.1:8765/mcp
expect_refusal "--oauth-audience without --oauth-issuer" "--oauth-audience needs --oauth-issuer" --data-dir "$d" \
  --oauth-audience "$aud"
expect_refusal "--oauth-issuer with --stdio" "do not apply to --stdio" --data-dir "$d" --stdio \
  --oauth-issuer https://as.example.com --oauth-audience "$aud"
expect_refusal "--oauth-issuer without --oauth-audience" "--oauth-issuer needs --oauth-audience" --data-dir "$d" \
  --oauth-issuer https://as.example.com
probe="$(timeout 20 "$host" --data-dir "$d" --port 0 --no-journal --oauth-issuer https://as.example.com \
  --oauth-audience "$aud" --oauth-scope bad 2>&1 </dev/null)"
if grep -qF "built without OAuth support" <<<"$probe"; then
  echo "ok - the --oauth-issuer start-up refusals # SKIP a build without mcpcore::oauth (it refuses --oauth-issuer)"
else
  expect_refusal "a bad --oauth-scope" '--oauth-scope "mcp:read=root": the tier is none of' --data-dir "$d" \
    --oauth-issuer https://as.example.com --oauth-audience "$aud" --oauth-scope mcp:read=root
  expect_refusal "a plain-http issuer without --oauth-allow-http" "allowed only with --oauth-allow-http" \
    --data-dir "$d" --oauth-issuer http://127.0.0.1:1 --oauth-audience "$aud"
  expect_refusal "--oauth-allow-http for a host that is not loopback" "is plain http:// to a host that is not loopback" \
    --data-dir "$d" --oauth-issuer http://as.example.com --oauth-audience "$aud" --oauth-allow-http
  expect_refusal "an issuer whose metadata cannot be read" \
    "cannot discover the metadata of --oauth-issuer http://127.0.0.1:1: http://127.0.0.1:1/.well-known/oauth-authorization-server:" \
    --data-dir "$d" --oauth-issuer http://127.0.0.1:1 --oauth-audience "$aud" --oauth-allow-http
fi

# The help states each default as it is: the journal is offered unless --no-journal is given.
help="$("$host" --help 2>&1)"
if grep -q -- '--journal .*(default: on)' <<<"$help" && ! grep -q -- 'journal{false}' <<<"$help"; then
  echo "ok - --help shows the journal on by default"
  passed=$((passed + 1))
else
  echo "not ok - --help shows the journal on by default: $(grep -i -- '--.*journal' <<<"$help" | head -3)"
  failed=$((failed + 1))
fi

# ... and lists the task flags with their defaults.
if grep -qE -- '--max-tasks-per-principal.*32' <<<"$help" && grep -qE -- '--max-tasks .*1024' <<<"$help" &&
  grep -qE -- '--task-ttl-ms.*3600000' <<<"$help" && grep -qE -- '--max-task-ttl-ms.*86400000' <<<"$help"; then
  echo "ok - --help lists the task flags with their defaults"
  passed=$((passed + 1))
else
  echo "not ok - --help lists the task flags with their defaults: $(grep -i -- 'task' <<<"$help" | head -5)"
  failed=$((failed + 1))
fi

echo "# $passed passed, $failed failed"
[[ $failed -eq 0 ]]
