#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The HTTP load benchmark (docs/performance.md, "HTTP load (wrk, loopback)"): one invocation
# measures, on 127.0.0.1 only,
#   load   wrk (same Lua script echo.lua, same threads, connections and duration) against
#          mcpcore   bench/http/echo_server.cpp: http_endpoint + transport::asio_http_server
#          ts        bench/http/ts_echo_server.mjs: the official TypeScript SDK, stateful, SSE
#                    responses, the SDK's InMemoryEventStore
#          nginx     bench/http/nginx.conf: Debian's nginx answering a fixed body (the ceiling)
#          asio      echo_server --transport-only: mcpcore's Asio server alone, answering the same
#                    fixed body from a plain handler (no MCP), to split mcpcore's cost
#          inline    (only when listed in --targets) echo_server --inline-dispatch: mcpcore with
#                    dispatch on the I/O thread, to measure the handler-pool hand-off
#          and, only when listed in --targets, the same call at MCP revision 2026-07-28 (the
#          per-request era: no initialize, no session), with echo2026.lua, against
#          mcpcore2026  the same echo_server as mcpcore (its http_endpoint serves both eras)
#          ts2026       bench/http/ts2026_echo_server.mjs: the official TypeScript SDK v2
#                       (@modelcontextprotocol/server), createMcpHandler, a new McpServer per
#                       request, JSON responses (its default)
#          and, only when listed in --targets (or with --only stream, --only churn), two more
#          workloads, each against mcpcore and the TypeScript server:
#          mcpcore-stream, ts-stream
#                       the streamed call (stream.lua): tools/call of `progress10` with a progress
#                       token on an open 2025 session; the server sends 10 progress notifications
#                       and then the echo result, as one SSE response. The call rotates over
#                       --connections sessions, each opened as its own principal (a bearer token:
#                       mcpcore holds at most 4 streamed POSTs of one principal open at once,
#                       docs/sessions.md#the-stream-budget); mcpcore's server runs with the
#                       bridge's record cap and maintenance tick raised (echo_server
#                       --bridge-records, --tick-ms: with the defaults it refuses streamed calls
#                       beyond about 256 per 3 s)
#          mcpcore-churn, ts-churn
#                       session churn (churn.lua): each unit is one session's lifecycle,
#                       initialize, notifications/initialized, one echo tools/call and DELETE, one
#                       step after the other on a keep-alive connection; wrk runs one connection
#                       per thread (-tN -cN with N = --connections) and reuses it, so a
#                       lifecycle's cost holds no TCP handshake. requests/s and CPU per request
#                       are then per lifecycle, latency per step (one HTTP request). mcpcore's
#                       server runs with its session caps raised above the sessions a run can
#                       leave open (echo_server --max-sessions)
#          and, with --only haproxy (which has its own default targets), the cost of a balancer
#          in front of mcpcore (docs/performance.md, "Behind HAProxy"): HAProxy (Debian haproxy)
#          started by this script with bench/http/haproxy.cfg, the configuration of
#          docs/scale-out.md that scale.haproxy_sessions tests (a stick table on the
#          Mcp-Session-Id learned from the response, round robin otherwise, /readyz checks, no
#          compression), over echo servers with the default or given threads:
#          direct         one echo_server, no balancer; echo.lua rotating over --sessions sessions
#          haproxy1       HAProxy in front of that same echo_server, the sessions opened through it
#          haproxy3       HAProxy round robin over three echo_servers (that one and two more): the
#                         sessions opened through it land one per server in turn and stick there
#          direct-2026, haproxy1-2026, haproxy3-2026
#                         the same three with echo2026.lua (2026-07-28, no session: each request
#                         goes to the next server in turn)
#          nginx-haproxy  the same HAProxy configuration in front of the nginx ceiling: the
#                         balancer's own cost apart from mcpcore's (to compare with nginx)
#          the CPU time of a balanced target is that of HAProxy and every server behind it, and
#          HAProxy's alone is reported beside it; after each run through a balancer, the requests
#          each server received (HAProxy's stats socket);
#          after a warm-up run of each, in rounds that alternate them (the order rotates each
#          round); requests/s, p50, p90, p99 and p99.9 latency, the server's RSS after each run
#          and its CPU time per request; with --out, also as a table and as figures (below);
#   idle   memory of idle sessions and of idle open SSE GET streams (idle_streams.cpp), on fresh
#          servers: mcpcore and, as the reference, the TypeScript SDK server.
# Every server is started by this script, checked (its first echo answer must be right) before it
# is loaded, and killed by PID on exit. Above 16 connections mcpcore's echo servers run with the
# endpoint's per-principal dispatch cap raised to --connections (echo_server --max-dispatch):
# every request is the one principal. Every wrk run is bounded (-d); the defaults take about
# 5 minutes on a quiet 2-core machine. Result lines go to stdout (progress to stderr).
#
# Usage: bench/http/run.sh [options]
#   --rounds N            load rounds (default 3)
#   --duration S          seconds of each measured wrk run (default 10)
#   --warmup S            seconds of the warm-up run of each server (default 3)
#   --connections N       wrk -c (default 16)
#   --threads N           wrk -t (default 1)
#   --io-threads N        mcpcore I/O threads (default: the transport's default)
#   --handler-threads N   mcpcore handler threads (default: the transport's default)
#   --idle-streams N      idle GET streams (one session each) on mcpcore (default 10000)
#   --idle-sessions N     idle sessions on mcpcore (default 10000)
#   --ts-idle N           idle sessions, then idle streams, on the TypeScript server (default 1000)
#   --only load|idle|haproxy|stream|churn
#                         run one part only; haproxy is the load part with the balancer's
#                         targets (default: "direct haproxy1 haproxy3 direct-2026 haproxy1-2026
#                         haproxy3-2026 nginx nginx-haproxy"), stream and churn the load part with
#                         "mcpcore-stream ts-stream" and "mcpcore-churn ts-churn"
#   --targets "LIST"      servers to measure, among mcpcore ts nginx asio inline mcpcore2026
#                         ts2026 direct haproxy1 haproxy3 direct-2026 haproxy1-2026 haproxy3-2026
#                         nginx-haproxy mcpcore-stream ts-stream mcpcore-churn ts-churn (default:
#                         "mcpcore ts nginx asio"); idle measures mcpcore and ts
#   --sessions N          sessions that the 2025 request of direct, haproxy1 and haproxy3 rotates
#                         over (default 3: one per server behind haproxy3)
#   --build-dir DIR       where to build mcpcore in Release (default: build/release-bench, the
#                         release-bench preset's directory)
#   --bin-dir DIR         use mcpcore_bench_http_echo_server and mcpcore_bench_http_idle_streams
#                         from DIR instead of building
#   --smoke               a short self-check of the mcpcore side only (no wrk, nginx or Node):
#                         start, first echo, one streamed call (10 progress notifications, then
#                         the result), one session lifecycle (initialize, initialized, echo,
#                         DELETE, then 404 on the deleted session), 20 idle streams; what ctest
#                         runs (with curl). With --only
#                         haproxy, the balancer's instead (no wrk, nginx or Node; HAProxy is
#                         needed): three echo servers behind HAProxy with haproxy.cfg, all UP,
#                         three sessions opened through it land on three different servers and
#                         their calls stick there, three 2026 calls go to the three in turn
#   --out FILE            also write the result lines to FILE; after a load run FILE.tsv, one row
#                         per target: the median requests/s and each round's, the median server
#                         CPU µs per request and each round's, the medians of p50, p90, p99 and
#                         p99.9 latency (µs) and of RSS (KiB), and behind a balancer the ratios to
#                         the same call without it; after an idle run FILE.idle.tsv, one row per
#                         server: bytes per idle session and per session with an open GET stream.
#                         Both start with "# key: value" lines (the machine, the wrk settings) and
#                         a header line naming the columns. gnuplot then draws them with
#                         bench/http/plot.gp as FILE.rps.svg (throughput), FILE.cpu.svg (CPU per
#                         request), FILE.latency.svg (percentiles) and FILE.idle.svg (memory)
# Missing tools are installed once with apt-get (wrk, nginx, curl, haproxy, and gnuplot-nox with
# --out) and npm ci (tests/interop).
# shellcheck disable=SC2034,SC2154 # each server's <name>_pid, _port and _sid are set by printf -v and read as ${!var}; set -u still stops on an unset one
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

rounds=3 duration=10 warmup=3 connections=16 wrk_threads=1
io_threads="" handler_threads=""
idle_streams=10000 idle_sessions=10000 ts_idle=1000
only="" targets_arg="" build_dir="$root/build/release-bench" bin_dir="" smoke=0 out="" sessions=3
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --threads) wrk_threads="$2"; shift 2 ;;
    --io-threads) io_threads="$2"; shift 2 ;;
    --handler-threads) handler_threads="$2"; shift 2 ;;
    --idle-streams) idle_streams="$2"; shift 2 ;;
    --idle-sessions) idle_sessions="$2"; shift 2 ;;
    --ts-idle) ts_idle="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --sessions) sessions="$2"; shift 2 ;;
    --targets) targets_arg="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e '/^# shellcheck /d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$rounds" "$duration" "$warmup" "$connections" "$wrk_threads" "${io_threads:-1}" "${handler_threads:-1}" \
         "$idle_streams" "$idle_sessions" "$ts_idle" "$sessions"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: counts and durations must be positive integers" >&2; exit 2; }
done
# The --out file's folder is made here, so that a run's results are never lost at the end; the
# previous run's tables and figures under that name go, so that none is taken for this run's.
if [[ -n "$out" ]]; then
  mkdir -p "$(dirname "$out")"
  rm -f "$out.tsv" "$out.idle.tsv" "$out.rps.svg" "$out.cpu.svg" "$out.latency.svg" "$out.idle.svg"
fi
# mcpcore-stream's server: the progress bridge's record cap and the maintenance tick (echo_server
# --bridge-records, --tick-ms). A finished streamed call's record counts until the tick's sweep
# reaps it: at this load (thousands of calls per second) some hundreds per 100 ms tick, well
# within the cap.
stream_bridge_records=65536 stream_tick_ms=100
# mcpcore-churn's server: sessions allowed beyond those the runs may leave open (its default
# global cap).
churn_session_margin=1024
run_load=1 run_idle=1 default_targets="mcpcore ts nginx asio"
case "$only" in
  "") ;;
  load) run_idle=0 ;;
  idle) run_load=0 ;;
  haproxy) run_idle=0 default_targets="direct haproxy1 haproxy3 direct-2026 haproxy1-2026 haproxy3-2026 nginx nginx-haproxy" ;;
  stream) run_idle=0 default_targets="mcpcore-stream ts-stream" ;;
  churn) run_idle=0 default_targets="mcpcore-churn ts-churn" ;;
  *) echo "run.sh: --only takes load, idle, haproxy, stream or churn" >&2; exit 2 ;;
esac
read -r -a targets <<<"${targets_arg:-$default_targets}"
has() { [[ " ${targets[*]} " == *" $1 "* ]]; }
known_targets=" mcpcore ts nginx asio inline mcpcore2026 ts2026 direct haproxy1 haproxy3 direct-2026 haproxy1-2026"
known_targets+=" haproxy3-2026 nginx-haproxy mcpcore-stream ts-stream mcpcore-churn ts-churn "
for t in "${targets[@]}"; do
  [[ "$known_targets" == *" $t "* ]] ||
    { echo "run.sh: unknown target $t" >&2; exit 2; }
done
# The smoke checks mcpcore alone, or with --only haproxy the balancer in front of three servers.
smoke_haproxy=0
if ((smoke)); then
  if [[ "$only" == haproxy ]]; then smoke_haproxy=1 targets=(haproxy3); else targets=(mcpcore); fi
fi
# A target's shell variables (<var>_pid, _port, _sid) are named after it, "-" written "_".
var() { printf '%s' "${1//-/_}"; }
# The targets that go through a balancer, and those that need the echo servers behind it.
balanced() { has haproxy1 || has haproxy3 || has haproxy1-2026 || has haproxy3-2026 || has nginx-haproxy; }
# The targets served by the TypeScript SDK v1 server (ts_echo_server.mjs).
has_ts() { has ts || has ts-stream || has ts-churn; }

log() { printf '%s\n' "$*" >&2; }
die() { log "run.sh: $*"; exit 1; }
result() {  # a result line: to stdout and to $work/results (copied to --out on exit)
  printf '%s\n' "$*"
  printf '%s\n' "$*" >>"$work/results"
}
field() {  # field <line> <name>: the number after "name=" in the line, or 0
  local v
  v=$(sed -n "s/.*[ ]$2=\([0-9.]*\).*/\1/p" <<<"$1")
  echo "${v:-0}"
}

# ---- tools ---------------------------------------------------------------------------------------
ensure_apt() {  # ensure_apt <command> <package>...: installs the packages when the command is missing
  local cmd="$1"; shift
  command -v "$cmd" >/dev/null 2>&1 || [[ -x "/usr/sbin/$cmd" ]] && return 0
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "need root or sudo to install $*"
    sudo=(sudo)
  fi
  log "run.sh: installing $* (Debian packages)"
  # Debian's nginx package starts no service where policy-rc.d forbids it (containers); this
  # script never uses a system nginx, only its own on a private configuration.
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
ensure_apt curl curl
nginx_bin="" haproxy_bin=""
if ((run_load)) && balanced; then
  ensure_apt haproxy haproxy
  haproxy_bin="$(command -v haproxy || echo /usr/sbin/haproxy)"
fi
if ((smoke == 0)); then
  if ((run_load)); then
    ensure_apt wrk wrk
  fi
  if ((run_load)) && { has nginx || has nginx-haproxy; }; then
    ensure_apt nginx nginx
    nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
  fi
  if [[ -n "$out" ]]; then
    ensure_apt gnuplot gnuplot-nox  # draws the figures (plot.gp)
  fi
  if has_ts || has ts2026; then
    command -v node >/dev/null || die "node is needed for the TypeScript SDK servers (scripts/install-deps installs it)"
  fi
  if { has_ts && [[ ! -d "$root/tests/interop/node_modules/@modelcontextprotocol/sdk" ]]; } ||
     { has ts2026 && [[ ! -d "$root/tests/interop/node_modules/@modelcontextprotocol/server" ]]; }; then
    log "run.sh: npm ci in tests/interop (the pinned TypeScript SDKs)"
    npm ci --prefix "$root/tests/interop" --no-audit --no-fund --loglevel=error
  fi
fi
# The TypeScript servers run on the Node that tests/interop pins (the npm package node@22) when it
# is installed there, else on the node on PATH; the version goes into the result header.
node_bin="$root/tests/interop/node_modules/.bin/node"
[[ -x "$node_bin" ]] || node_bin="node"

# ---- mcpcore, built in Release -------------------------------------------------------------------
if [[ -z "$bin_dir" ]]; then  # (the idle client is built with it; the TypeScript runs need it too)
  log "run.sh: building the mcpcore echo server (Release) in $build_dir"
  # An existing build directory (e.g. the release-bench preset's) is used as configured; a new
  # one gets that preset's settings, without -Werror (a warning must not stop a measurement).
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
          -DMCPCORE_WERROR=OFF -DMCPCORE_BUILD_BENCH=ON -DMCPCORE_BUILD_TESTS=OFF -DMCPCORE_BUILD_EXAMPLES=OFF \
          -DMCPCORE_HEADER_CHECKS=OFF -DMCPCORE_TRANSPORT=ON >/dev/null
  fi
  grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build_dir/CMakeCache.txt" ||
    log "run.sh: warning: $build_dir is not a Release build: its figures are not representative"
  cmake --build "$build_dir" --target mcpcore_bench_http_echo_server mcpcore_bench_http_idle_streams >/dev/null
  bin_dir="$build_dir/bench"
fi
echo_server="$bin_dir/mcpcore_bench_http_echo_server"
idle_client="$bin_dir/mcpcore_bench_http_idle_streams"
for t in mcpcore asio inline mcpcore2026 direct haproxy1 haproxy3 direct-2026 haproxy1-2026 haproxy3-2026 \
         mcpcore-stream mcpcore-churn; do
  if has "$t" && [[ ! -x "$echo_server" ]]; then die "missing $echo_server"; fi
done
if ((run_idle)) && [[ ! -x "$idle_client" ]]; then die "missing $idle_client"; fi

# ---- file descriptors for the idle streams (the client and each server hold one per stream) -------
want_fds=$(( (idle_streams > idle_sessions ? idle_streams : idle_sessions) + 1024 ))
if (( $(ulimit -n) < want_fds )); then
  if (( $(ulimit -Hn) < want_fds )); then ulimit -Hn "$want_fds" 2>/dev/null || true; fi
  ulimit -n "$want_fds" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
fi

# ---- servers -------------------------------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/mcpcore-http-bench.XXXXXX")"
pids=()
cleanup() {
  local p
  if [[ -n "$out" && -s "$work/results" ]]; then cp "$work/results" "$out"; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_port <file> <pid> <name>: waits (30 s at most) for the server to write its port file.
wait_port() {
  local file="$1" pid="$2" name="$3" i
  for ((i = 0; i < 300; ++i)); do
    if [[ -s "$file" ]]; then cat "$file"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { log "run.sh: $name exited early:"; cat "$work/$name.log" >&2 || true; return 1; }
    sleep 0.1
  done
  log "run.sh: $name did not start within 30 s"; return 1
}

# start_<kind> <name> [extra args]: starts a server; sets ${name}_pid and ${name}_port.
thread_args=()
[[ -n "$io_threads" ]] && thread_args+=(--io-threads "$io_threads")
[[ -n "$handler_threads" ]] && thread_args+=(--handler-threads "$handler_threads")
# Every request is the one principal, so with more connections than the endpoint's
# per-principal dispatch cap (16) wrk would keep more calls in flight than the cap allows and get
# 429s by design: the cap is then raised to the connections. Up to 16 connections the default
# holds (a request's slot is free once its answer is delivered; docs/sessions.md#fair-dispatch).
(( connections > 16 )) && thread_args+=(--max-dispatch "$connections")
# named <name> <pid> <port>: sets ${name}_pid and ${name}_port.
named() {
  printf -v "${1}_pid" '%s' "$2"
  printf -v "${1}_port" '%s' "$3"
}
# recorded <name> <pid> <port>: a process that listens: killed on exit, and named.
recorded() {
  pids+=("$2")
  named "$@"
}
# started <name> <pid>: a server just started in the background that writes its port to
# $work/<name>.port: killed on exit (already while its port is awaited), named once it is there.
started() {
  local name="$1" pid="$2"
  pids+=("$pid")
  named "$name" "$pid" "$(wait_port "$work/$name.port" "$pid" "$name")"
}
start_mcpcore() {
  local name="$1"; shift
  "$echo_server" --port 0 --port-file "$work/$name.port" "${thread_args[@]}" "$@" 2>"$work/$name.log" &
  started "$name" $!
}
# start_node <script> <name>: one of the TypeScript SDK servers (ts_echo_server.mjs for ts,
# ts2026_echo_server.mjs for ts2026); both take the same command line (server_cli.mjs).
start_node() {
  local script="$1" name="$2"
  "$node_bin" "$here/$script" --port 0 --port-file "$work/$name.port" \
       --modules "$root/tests/interop/node_modules" 2>"$work/$name.log" &
  started "$name" $!
}
start_ts() { start_node ts_echo_server.mjs "$1"; }
start_ts2026() { start_node ts2026_echo_server.mjs "$1"; }
# The body nginx serves: mcpcore's echo response to a request with id 1, byte for byte.
fixed_body='{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}'
start_nginx() {
  local name="$1" dir="$work/nginx" port="" attempt pid
  mkdir -p "$dir"
  for attempt in 1 2 3 4 5 6 7 8; do  # nginx cannot bind port 0: try free-looking ports
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
    sed -e "s|@USER@|$(id -un) $(id -gn)|" -e "s|@PREFIX@|$dir|g" -e "s|@PORT@|$port|" \
        -e "s|@BODY@|$fixed_body|" "$here/nginx.conf" >"$dir/nginx.conf"
    "$nginx_bin" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -g 'daemon off;' 2>"$work/$name.log" &
    pid=$!
    local i up=0
    for ((i = 0; i < 50; ++i)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if ((up)); then recorded "$name" "$pid" "$port"; return 0; fi
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  done
  log "run.sh: nginx did not start:"; cat "$dir/error.log" "$work/$name.log" >&2 || true
  return 1
}
# start_haproxy <name> <server port>...: HAProxy with bench/http/haproxy.cfg in front of the servers
# (s1, s2, ... in that order), its stats socket at $work/<name>.sock; sets ${name}_pid and
# ${name}_port, and returns once HAProxy listens and its health checks have every server UP.
start_haproxy() {
  local name="$1" attempt port pid i up
  shift
  for attempt in 1 2 3 4 5 6 7 8; do  # a port is chosen here, as for nginx
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
    awk -v port="$port" -v sock="$work/$name.sock" -v list="$*" '
      BEGIN { n = split(list, servers, " ") }
      /^[ \t]*#/ { next }
      /@NAME@/ {  # the server line, once per server
        for (k = 1; k <= n; k++) { line = $0; sub(/@NAME@/, "s" k, line); sub(/@SERVER_PORT@/, servers[k], line); print line }
        next
      }
      { sub(/@PORT@/, port); sub(/@SOCKET@/, sock); print }' "$here/haproxy.cfg" >"$work/$name.cfg"
    "$haproxy_bin" -db -f "$work/$name.cfg" 2>"$work/$name.log" &
    pid=$!
    up=0
    for ((i = 0; i < 100; ++i)); do  # 10 s at most: listening, and every server UP
      kill -0 "$pid" 2>/dev/null || break
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
         [[ "$(haproxy_stat "$name" status | awk '$2 == "UP" { k++ } END { print k + 0 }')" == "$#" ]]; then
        up=1; break
      fi
      sleep 0.1
    done
    if ((up)); then recorded "$name" "$pid" "$port"; return 0; fi
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    if grep -q "cannot bind\|Address already in use" "$work/$name.log"; then continue; fi
    break
  done
  log "run.sh: haproxy $name did not start with every server UP:"; cat "$work/$name.log" >&2 || true
  haproxy_stat "$name" status >&2 || true
  return 1
}
# haproxy_stat <name> <column>: one line per server of the backend: its name and that column of
# `show stat` on the balancer's stats socket (status: UP, DOWN, ...; stot: requests sent to it).
haproxy_stat() {
  perl -MIO::Socket::UNIX -e '
    my ($sock, $column) = @ARGV;
    my $s = IO::Socket::UNIX->new(Peer => $sock) or exit 1;
    print $s "show stat\n";
    my @names;
    while (my $line = <$s>) {
      chomp $line;
      if ($line =~ s/^# //) { @names = split /,/, $line; next; }
      my %row; @row{@names} = split /,/, $line, -1;
      next unless ($row{pxname} // "") eq "mcp" && $row{svname} !~ /^(FRONTEND|BACKEND)$/;
      print "$row{svname} $row{$column}\n";
    }' "$work/$1.sock" "$2" 2>/dev/null
}
# served_by <head file>: the server HAProxy named in an answer (X-Served-By), or "-".
served_by() {
  local s
  s=$(awk 'tolower($1) == "x-served-by:" {print $2}' "$1" | tr -d '\r')
  echo "${s:--}"
}
stop_server() {  # stop_server <name>: kill by PID and wait
  local pid_var="${1}_pid"
  kill "${!pid_var}" 2>/dev/null || true
  wait "${!pid_var}" 2>/dev/null || true
}

# rss_kb <pid>: resident set of the process and its children (nginx's workers), in KiB.
rss_kb() {
  local total=0 p v
  for p in "$1" $(pgrep -P "$1" 2>/dev/null || true); do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)
    total=$(( total + ${v:-0} ))
  done
  echo "$total"
}

# cpu_ticks <pid>: user + system CPU time of the process and its children (all threads), in ticks.
cpu_ticks() {
  local total=0 p v
  for p in "$1" $(pgrep -P "$1" 2>/dev/null || true); do
    v=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}' || echo 0)
    total=$(( total + ${v:-0} ))
  done
  echo "$total"
}
clk_tck=$(getconf CLK_TCK)

mcp_headers=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
# open_session <port> [token]: initialize + notifications/initialized (with `Authorization: Bearer
# <token>` when given: the principal of echo_server --principal-per-token); prints the
# Mcp-Session-Id.
open_session() {
  local port="$1" sid status auth=()
  [[ -z "${2:-}" ]] || auth=(-H "Authorization: Bearer $2")
  curl -sS --max-time 10 -D "$work/init.head" -o "$work/init.body" -X POST "http://127.0.0.1:$port/mcp" \
       "${mcp_headers[@]}" "${auth[@]}" \
       -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpcore-http-bench","version":"1"}}}'
  sid=$(awk 'tolower($1) == "mcp-session-id:" {print $2}' "$work/init.head" | tr -d '\r')
  [[ -n "$sid" ]] || { log "run.sh: initialize on port $port gave no Mcp-Session-Id:"; cat "$work/init.head" "$work/init.body" >&2; return 1; }
  status=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" \
           "${mcp_headers[@]}" "${auth[@]}" -H 'MCP-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $sid" \
           -d '{"jsonrpc":"2.0","method":"notifications/initialized"}')
  [[ "$status" == 202 ]] || { log "run.sh: notifications/initialized on port $port answered $status"; return 1; }
  echo "$sid"
}

# check_first_echo <name> <port> <session> <mode>: the first tools/call must be answered 200 with
# the echo result (and, for modes "id" and "2026", with its own id). Mode "2026" sends the call of
# echo2026.lua (revision 2026-07-28, no session) and expects what that script expects. Prints the
# answer.
check_first_echo() {
  local name="$1" port="$2" sid="$3" mode="$4" status body request
  local hdr=("${mcp_headers[@]}") expected=('"result":{"content":[{"type":"text","text":"hello"}]}')
  if [[ "$mode" == 2026 ]]; then
    hdr+=(-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo')
    request='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
    expected=('"content":[{"type":"text","text":"hello"}]' '"resultType":"complete"')
  else
    hdr+=(-H 'MCP-Protocol-Version: 2025-11-25')
    request='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
  fi
  [[ -n "$sid" ]] && hdr+=(-H "Mcp-Session-Id: $sid")
  status=$(curl -sS --max-time 10 -D "$work/$name.first.head" -o "$work/$name.first.body" -w '%{http_code}' \
           -X POST "http://127.0.0.1:$port/mcp" "${hdr[@]}" -d "$request")
  body=$(cat "$work/$name.first.body")
  local ok=1 e
  [[ "$status" == 200 ]] || ok=0
  for e in "${expected[@]}"; do [[ "$body" == *"$e"* ]] || ok=0; done
  [[ "$mode" == fixed || "$body" == *'"id":1}'* || "$body" == *'"id":1,'* ]] || ok=0
  if ((ok == 0)); then
    log "run.sh: $name: wrong first echo answer (HTTP $status):"; cat "$work/$name.first.head" >&2; log "$body"
    return 1
  fi
  local type
  type=$(awk 'tolower($1) == "content-type:" {print $2}' "$work/$name.first.head" | tr -d '\r;')
  log "run.sh: $name: first echo answer OK ($type, $(printf '%s' "$body" | wc -c) bytes)"
}

# Progress notifications of one streamed call (progress10 in echo_server.cpp and ts_echo_server.mjs;
# stream.lua checks the same count).
progress_steps=10
# stream_answer_ok <head file> <body file> <id> <token>: whether the answer is what stream.lua
# accepts: text/event-stream, whose events' data hold exactly $progress_steps progress notifications
# for the token with strictly increasing progress, then the echo result with the id, nothing after.
stream_answer_ok() {
  grep -qi '^content-type: *text/event-stream' "$1" || return 1
  awk -v id="$3" -v token="$4" -v steps="$progress_steps" '
    /^data:/ {
      d = $0; sub(/^data: ?/, "", d); sub(/\r$/, "", d)
      if (d == "") next
      if (result) { bad = 1; next }
      if (index(d, "\"method\":\"notifications/progress\"")) {
        if (!index(d, "\"progressToken\":\"" token "\"") || !match(d, /"progress":[0-9.]+/)) { bad = 1; next }
        p = substr(d, RSTART + 11, RLENGTH - 11) + 0
        if (n > 0 && p <= last) bad = 1
        last = p; n++
      } else if (index(d, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}") &&
                 (index(d, "\"id\":" id ",") || index(d, "\"id\":" id "}"))) {
        result = 1
      } else {
        bad = 1
      }
    }
    END { exit !(result && !bad && n == steps) }' "$2"
}
# check_first_stream <name> <port> <session> [token]: one streamed call (stream.lua's, id 1, token
# "p1") on the session must be answered as stream_answer_ok says.
check_first_stream() {
  local name="$1" port="$2" sid="$3" status hdr=("${mcp_headers[@]}")
  hdr+=(-H 'MCP-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $sid")
  [[ -z "${4:-}" ]] || hdr+=(-H "Authorization: Bearer $4")
  status=$(curl -sS --max-time 10 -D "$work/$name.first.head" -o "$work/$name.first.body" -w '%{http_code}' \
           -X POST "http://127.0.0.1:$port/mcp" "${hdr[@]}" \
           -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress10","arguments":{"text":"hello"},"_meta":{"progressToken":"p1"}}}')
  if [[ "$status" != 200 ]] || ! stream_answer_ok "$work/$name.first.head" "$work/$name.first.body" 1 p1; then
    log "run.sh: $name: wrong streamed call answer (HTTP $status):"
    cat "$work/$name.first.head" "$work/$name.first.body" >&2
    return 1
  fi
}
# check_lifecycle <name> <port>: one session lifecycle as churn.lua runs it, with its checks:
# initialize (200, a session id, the result with id 0), notifications/initialized (202), the echo
# call (check_first_echo), DELETE (200 or 204); then a call on the deleted session must be 404.
check_lifecycle() {
  local name="$1" port="$2" sid status deleted body
  sid=$(open_session "$port")
  body=$(cat "$work/init.body")
  if [[ "$body" != *'"protocolVersion":"2025-11-25"'* || ( "$body" != *'"id":0,'* && "$body" != *'"id":0}'* ) ]]; then
    log "run.sh: $name: wrong initialize answer: $body"; return 1
  fi
  check_first_echo "$name" "$port" "$sid" id
  deleted=$(curl -sS --max-time 10 -o "$work/$name.delete.body" -w '%{http_code}' -X DELETE \
            "http://127.0.0.1:$port/mcp" -H 'MCP-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $sid")
  if [[ "$deleted" != 200 && "$deleted" != 204 ]]; then
    log "run.sh: $name: DELETE of the session answered $deleted"; return 1
  fi
  status=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" \
           "${mcp_headers[@]}" -H 'MCP-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $sid" \
           -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}')
  [[ "$status" == 404 ]] || { log "run.sh: $name: a call on the deleted session answered $status, not 404"; return 1; }
  log "run.sh: $name: one session lifecycle OK (initialize, initialized, echo, DELETE $deleted, then 404)"
}

# served_by_check <expected server> <head file> <what>: fails unless HAProxy's answer names it.
served_by_check() {
  local got
  got=$(served_by "$2")
  [[ "$got" == "$1" ]] || { log "run.sh: $3 was served by $got, not by $1 (the server that holds the session)"; return 1; }
}

# ---- smoke ---------------------------------------------------------------------------------------
if ((smoke_haproxy)); then
  # Seconds, no wrk: the balancer's configuration does what the load targets rely on.
  for k in 1 2 3; do start_mcpcore "be$k" --max-sessions 100 --max-streams 100; done
  start_haproxy h3 "$be1_port" "$be2_port" "$be3_port"
  log "run.sh: haproxy $("$haproxy_bin" -v | awk '{print $3; exit}') on port $h3_port, servers s1 s2 s3 UP"
  declare -A seen=()
  for k in 1 2 3; do
    sid=$(open_session "$h3_port")
    by=$(served_by "$work/init.head")
    seen[$by]=1
    check_first_echo smoke_h3 "$h3_port" "$sid" id
    served_by_check "$by" "$work/smoke_h3.first.head" "session $k's echo call"
  done
  if ((${#seen[@]} != 3)) || [[ -n "${seen[-]:-}" ]]; then
    die "three sessions opened through HAProxy landed on ${!seen[*]}, not on three different servers"
  fi
  seen=()
  for k in 1 2 3; do
    check_first_echo smoke_h3_2026 "$h3_port" "" 2026
    seen[$(served_by "$work/smoke_h3_2026.first.head")]=1
  done
  if ((${#seen[@]} != 3)) || [[ -n "${seen[-]:-}" ]]; then
    die "three 2026-07-28 calls through HAProxy went to ${!seen[*]}, not to the three servers in turn"
  fi
  log "run.sh: haproxy smoke passed"
  exit 0
fi
if ((smoke)); then
  start_mcpcore smoke_mcpcore --max-sessions 100 --max-streams 100
  sid=$(open_session "$smoke_mcpcore_port")
  check_first_echo smoke_mcpcore "$smoke_mcpcore_port" "$sid" id
  check_first_stream smoke_mcpcore_stream "$smoke_mcpcore_port" "$sid"
  log "run.sh: smoke_mcpcore: streamed call OK ($progress_steps progress notifications, then the result)"
  check_lifecycle smoke_mcpcore_churn "$smoke_mcpcore_port"
  "$idle_client" --port "$smoke_mcpcore_port" --pid "$smoke_mcpcore_pid" --count 20 --streams --settle-ms 100
  log "run.sh: smoke passed"
  exit 0
fi

failed=0
machine_desc=""  # the date and the machine, for the tables' "# machine:" lines (plot.gp's titles)
machine_notes() {  # the machine, its load and the tools, as comment lines
  machine_desc="$(date -u '+%Y-%m-%d %H:%M UTC'); nproc $(nproc)"
  machine_desc+="; $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
  result "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'); nproc $(nproc); $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  local tools="" v
  if command -v wrk >/dev/null; then v=$(wrk -v 2>&1 | head -1 || true); tools+="; ${v%% Copyright*}"; fi
  if [[ -n "$nginx_bin" ]]; then v=$("$nginx_bin" -v 2>&1 || true); tools+="; nginx ${v##*/}"; fi
  if has_ts || has ts2026; then tools+="; node $("$node_bin" --version)"; fi
  result "#${tools#;}"
}

# ---- load ----------------------------------------------------------------------------------------
if ((run_load)); then
  machine_notes
  if has mcpcore; then
    start_mcpcore mcpcore
    mcpcore_sid=$(open_session "$mcpcore_port")
    check_first_echo mcpcore "$mcpcore_port" "$mcpcore_sid" id
    result "# mcpcore echo_server: $(sed -n 's/.*(\(io .*threads\))$/\1/p' "$work/mcpcore.log")"
  fi
  if has ts; then
    start_ts ts
    ts_sid=$(open_session "$ts_port")
    check_first_echo ts "$ts_port" "$ts_sid" id
  fi
  if has nginx || has nginx-haproxy; then
    start_nginx nginx
    nginx_sid=""
    check_first_echo nginx "$nginx_port" "" fixed
  fi
  if has asio; then
    start_mcpcore asio --transport-only
    asio_sid=""
    check_first_echo asio "$asio_port" "" fixed
  fi
  if has inline; then
    start_mcpcore inline --inline-dispatch
    inline_sid=$(open_session "$inline_port")
    check_first_echo inline "$inline_port" "$inline_sid" id
  fi
  # The per-request era has no session: nothing to open before the first call.
  if has mcpcore2026; then
    start_mcpcore mcpcore2026
    mcpcore2026_sid=""
    check_first_echo mcpcore2026 "$mcpcore2026_port" "" 2026
    result "# mcpcore2026 echo_server: $(sed -n 's/.*(\(io .*threads\))$/\1/p' "$work/mcpcore2026.log")"
  fi
  if has ts2026; then
    start_ts2026 ts2026
    ts2026_sid=""
    check_first_echo ts2026 "$ts2026_port" "" 2026
  fi
  # The streamed call: --connections sessions on each server, each opened as its own principal
  # (bearer tokens s1, s2, ...: echo_server --principal-per-token; the TypeScript server ignores
  # them) and checked with one streamed call; stream.lua rotates over them. mcpcore holds at most 4
  # streamed POSTs of one principal, and of one session, open at once
  # (docs/sessions.md#the-stream-budget): one session for every connection would be refused 429 by
  # design, as one client holding more would. And the bridge keeps a finished call's record until
  # the maintenance tick's sweep reaps it (docs/sessions.md#progress-records): with the defaults
  # (256 records, a tick every 3 s) a server refuses streamed calls beyond about 256 per 3 s
  # (429 post_record_cap), far below this load, so mcpcore-stream's server keeps
  # $stream_bridge_records records and ticks every $stream_tick_ms ms.
  open_stream_sessions() {  # open_stream_sessions <target> <port>: sets <var>_sid and <var>_bearer
    local v k sid sids="" tokens=""
    v=$(var "$1")
    for ((k = 1; k <= connections; ++k)); do
      sid=$(open_session "$2" "s$k")
      check_first_stream "$v" "$2" "$sid" "s$k"
      sids+="${sids:+ }$sid" tokens+="${tokens:+ }s$k"
    done
    printf -v "${v}_sid" '%s' "$sids"
    printf -v "${v}_bearer" '%s' "$tokens"
    log "run.sh: $1: $connections sessions, the first streamed call of each OK"
  }
  if has mcpcore-stream; then
    start_mcpcore mcpcore_stream --principal-per-token --bridge-records "$stream_bridge_records" \
                  --tick-ms "$stream_tick_ms"
    open_stream_sessions mcpcore-stream "$mcpcore_stream_port"
    result "# mcpcore-stream echo_server: --principal-per-token --bridge-records $stream_bridge_records" \
           "--tick-ms $stream_tick_ms; $connections sessions, one principal each"
  fi
  if has ts-stream; then
    start_ts ts_stream
    open_stream_sessions ts-stream "$ts_stream_port"
  fi
  # Session churn: each server's first lifecycle is checked as churn.lua checks it (and the deleted
  # session must be gone). mcpcore's session caps (per principal 8 by default, and every request
  # is the one principal) are raised above what the runs may hold: the lifecycles under way, one
  # per connection, and as many left open by each run that wrk stops mid-lifecycle.
  if has mcpcore-churn; then
    start_mcpcore mcpcore_churn --max-sessions $(( connections * (rounds + 2) + churn_session_margin ))
    mcpcore_churn_sid=""
    check_lifecycle mcpcore-churn "$mcpcore_churn_port"
  fi
  if has ts-churn; then
    start_ts ts_churn
    ts_churn_sid=""
    check_lifecycle ts-churn "$ts_churn_port"
  fi
  # Behind HAProxy: echo servers be1 (direct's, and the one behind haproxy1) and be2, be3 (with
  # be1, behind haproxy3); balancers h1, h3 and hn (in front of nginx). Each 2025 target opens its
  # --sessions sessions through its own front, so a balancer learns them as it would in production.
  # procs: the processes whose CPU time and RSS a target counts; bal: its balancer.
  declare -A procs=() bal=()
  # open_sessions <target> <port>: opens the sessions, checks each one's first echo (and that it
  # was served where the session was opened), sets <var>_sid to their ids, space-separated.
  open_sessions() {
    local t="$1" port="$2" v k sid by list="" where=""
    v=$(var "$t")
    for ((k = 1; k <= sessions; ++k)); do
      sid=$(open_session "$port")
      by=$(served_by "$work/init.head")
      check_first_echo "$v" "$port" "$sid" id
      [[ "$by" == - ]] || served_by_check "$by" "$work/$v.first.head" "$t's session $k's echo call"
      list+="${list:+ }$sid" where+=" $by"
    done
    printf -v "${v}_sid" '%s' "$list"
    [[ -z "${bal[$t]:-}" ]] || result "# $t: $sessions sessions, opened on$where"
  }
  if has direct || has direct-2026 || has haproxy1 || has haproxy1-2026 || has haproxy3 || has haproxy3-2026; then
    start_mcpcore be1
    result "# echo servers behind the balancer: $(sed -n 's/.*(\(io .*threads\))$/\1/p' "$work/be1.log")"
  fi
  if has haproxy3 || has haproxy3-2026; then start_mcpcore be2; start_mcpcore be3; fi
  if has haproxy1 || has haproxy1-2026; then start_haproxy h1 "$be1_port"; fi
  if has haproxy3 || has haproxy3-2026; then start_haproxy h3 "$be1_port" "$be2_port" "$be3_port"; fi
  if has nginx-haproxy; then start_haproxy hn "$nginx_port"; fi
  if balanced; then
    result "# haproxy: bench/http/haproxy.cfg; $("$haproxy_bin" -vv 2>/dev/null | sed -n 's/.*multi-threading support (\(.*\)).*/\1/p' | head -1)"
  fi
  for t in direct haproxy1 haproxy3; do
    has "$t" || has "$t-2026" || continue
    case "$t" in
      direct) port=$be1_port procs[$t]="$be1_pid" ;;
      haproxy1) port=$h1_port procs[$t]="$h1_pid $be1_pid" bal[$t]=$h1_pid ;;
      haproxy3) port=$h3_port procs[$t]="$h3_pid $be1_pid $be2_pid $be3_pid" bal[$t]=$h3_pid ;;
    esac
    procs[$t-2026]=${procs[$t]} bal[$t-2026]=${bal[$t]:-}
    printf -v "$(var "$t")_port" '%s' "$port"
    printf -v "$(var "$t-2026")_port" '%s' "$port"
    printf -v "$(var "$t-2026")_sid" '%s' ""
    if has "$t"; then open_sessions "$t" "$port"; fi
    if has "$t-2026"; then check_first_echo "$(var "$t-2026")" "$port" "" 2026; fi
  done
  if has nginx-haproxy; then
    nginx_haproxy_port=$hn_port nginx_haproxy_sid="" procs[nginx-haproxy]="$hn_pid $nginx_pid" bal[nginx-haproxy]=$hn_pid
    check_first_echo nginx_haproxy "$nginx_haproxy_port" "" fixed
  fi
  for t in "${targets[@]}"; do  # the other targets are one process each
    pid_var="$(var "$t")_pid"
    [[ -n "${procs[$t]:-}" ]] || procs[$t]=${!pid_var}
  done
  # procs_sum <function> <target>: the sum of cpu_ticks or rss_kb over the target's processes.
  procs_sum() {
    local total=0 p
    for p in ${procs[$2]}; do total=$(( total + $("$1" "$p") )); done
    echo "$total"
  }
  # spread <target>: sets spread_out to the requests each server behind the target's balancer
  # received since the last call, as " s1=N s2=N ..." (`show stat`'s stot: health checks are not
  # counted). Not to be called in a subshell: it keeps the last counts.
  declare -A stot_last=()
  spread() {
    local h="" name n
    case "$1" in haproxy1*) h=h1 ;; haproxy3*) h=h3 ;; nginx-haproxy) h=hn ;; esac
    spread_out=""
    while read -r name n; do
      spread_out+=" $name=$(( n - ${stot_last[$h.$name]:-0} ))"
      stot_last[$h.$name]=$n
    done < <(haproxy_stat "$h" stot)
  }
  declare -A mode=([mcpcore]=id [ts]=id [nginx]=fixed [asio]=fixed [inline]=id [mcpcore2026]=2026 [ts2026]=2026
                   [direct]=id [haproxy1]=id [haproxy3]=id [direct-2026]=2026 [haproxy1-2026]=2026
                   [haproxy3-2026]=2026 [nginx-haproxy]=fixed [mcpcore-stream]=stream [ts-stream]=stream
                   [mcpcore-churn]=churn [ts-churn]=churn)

  # load <target> <seconds> <first id>: one wrk run; prints its RESULT line (zeros when wrk
  # failed) and fails when wrk failed or a response was not a correct 200.
  load() {
    local t="$1" secs="$2" first="$3" port_var sid_var bearer_var rc=0
    port_var="$(var "$1")_port" sid_var="$(var "$1")_sid" bearer_var="$(var "$1")_bearer"
    local script=echo.lua args=("${mode[$t]}" "$first") threads="$wrk_threads"
    case "${mode[$t]}" in
      2026) script=echo2026.lua args=("$first") ;;  # echo2026.lua always checks ids: the first id alone
      stream) script=stream.lua args=("$first") ;;
      # churn.lua keeps one lifecycle per thread: one connection per thread.
      churn) script=churn.lua args=("$first") threads="$connections" ;;
    esac
    MCP_PATH=/mcp MCP_SESSION_ID="${!sid_var}" MCP_BEARER="${!bearer_var:-}" \
      wrk -t"$threads" -c"$connections" -d"${secs}s" --timeout 5s -s "$here/$script" \
          "http://127.0.0.1:${!port_var}" -- "${args[@]}" >"$work/wrk.out" 2>&1 || rc=$?
    local line wrk_cpu
    line=$(grep '^RESULT ' "$work/wrk.out" || true)
    # wrk's own CPU time (this subshell's children: wrk, and the few commands before it), in ticks.
    # (times runs in this shell, its output to a file: in a pipe it would count a fresh subshell's.)
    times >"$work/times"
    wrk_cpu=$(awk -v hz="$clk_tck" 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.0f", t * hz }' "$work/times")
    printf '%s wrk_cpu_ticks=%s\n' "${line:-RESULT requests=0 rps=0 p50_us=0 p99_us=0 ok=0 non200=0 wrong=0 p90_us=0 p999_us=0}" "$wrk_cpu"
    if ((rc != 0)) || [[ -z "$line" ]]; then
      log "run.sh: wrk against $t failed (exit $rc):"; cat "$work/wrk.out" >&2
      return 1
    fi
  }

  # machine_ticks: "<busy> <total>" CPU ticks of the whole machine so far (/proc/stat: busy is the
  # time of processes, user, nice and system; total adds idle, iowait, irq, softirq and steal).
  # Interrupt time is left out of busy: on loopback it is mostly the benchmark's own packets.
  machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
  # per_request <ticks>: CPU µs per request of the run ($requests responses).
  per_request() { awk -v c="$1" -v n="$requests" -v hz="$clk_tck" 'BEGIN { printf "%.0f", (n > 0 ? c * 1e6 / hz / n : 0) }'; }
  # The ratios of each balanced target to the same call without the balancer.
  ratio_pairs="haproxy1/direct haproxy3/direct haproxy1-2026/direct-2026 haproxy3-2026/direct-2026 nginx-haproxy/nginx direct-2026/direct"
  declare -A base=([haproxy1]=direct [haproxy3]=direct [haproxy1-2026]=direct-2026 [haproxy3-2026]=direct-2026 [nginx-haproxy]=nginx)
  first_id=1000
  for t in "${targets[@]}"; do
    log "run.sh: warm-up $t (${warmup} s)"
    load "$t" "$warmup" "$first_id" >/dev/null || failed=1
    first_id=$(( first_id + 100000000 ))
    [[ -z "${bal[$t]:-}" ]] || spread "$t"
  done
  result "# load: wrk -t$wrk_threads -c$connections -d${duration}s, $rounds rounds; columns: round target rps p50_us p99_us server_rss_kb server_cpu_us_per_request ok non200 wrong socket_errors load_average_1min balancer_cpu_us_per_request others_cpu_percent p90_us p999_us"
  result "# (p90_us and p999_us, the 90th and 99.9th percentiles, come last so that the columns before them" \
         "keep their places)"
  if has mcpcore-churn || has ts-churn; then
    result "# (churn targets: wrk -t$connections -c$connections, one connection per thread; rps, ok, non200 and" \
           "wrong count session lifecycles, server_cpu_us_per_request is per lifecycle, the latencies are of one" \
           "step, one HTTP request)"
  fi
  result "# (others_cpu_percent: the CPU time that the machine's other processes took during the run, in % of all its CPUs' time: the user, nice and system time of /proc/stat less the target's and wrk's)"
  if balanced; then
    result "# (behind a balancer, server_rss_kb and server_cpu_us_per_request count HAProxy and every server behind it, balancer_cpu_us_per_request HAProxy alone; SPREAD: the requests each server received in that run)"
  fi
  for ((r = 1; r <= rounds; ++r)); do
    for ((k = 0; k < ${#targets[@]}; ++k)); do
      t=${targets[$(( (k + r - 1) % ${#targets[@]} ))]}
      h="${bal[$t]:-}"
      read -r busy_before total_before < <(machine_ticks)
      cpu_before=$(procs_sum cpu_ticks "$t")
      balancer_before=0
      [[ -z "$h" ]] || balancer_before=$(cpu_ticks "$h")
      line=$(load "$t" "$duration" "$first_id") || failed=1
      cpu=$(( $(procs_sum cpu_ticks "$t") - cpu_before ))
      read -r busy_after total_after < <(machine_ticks)
      # What the other processes of the machine took during the run, in % of all its CPUs' time:
      # the processes' time less the target's and wrk's (the machine's noise, besides the load average).
      others=$(awk -v b=$(( busy_after - busy_before )) -v t=$(( total_after - total_before )) -v c="$cpu" \
                   -v w="$(field "$line" wrk_cpu_ticks)" 'BEGIN { o = b - c - w; printf "%.0f", (t > 0 && o > 0 ? 100 * o / t : 0) }')
      balancer=0
      [[ -z "$h" ]] || balancer=$(( $(cpu_ticks "$h") - balancer_before ))
      first_id=$(( first_id + 100000000 ))
      rss=$(procs_sum rss_kb "$t")
      requests=$(field "$line" requests)
      socket_errors=$(( $(field "$line" connect_errors) + $(field "$line" read_errors) + $(field "$line" write_errors) + $(field "$line" timeouts) ))
      result "LOAD $r $t $(field "$line" rps) $(field "$line" p50_us) $(field "$line" p99_us) $rss $(per_request "$cpu") $(field "$line" ok) $(field "$line" non200) $(field "$line" wrong) $socket_errors $(cut -d' ' -f1 /proc/loadavg) $(per_request "$balancer") $others $(field "$line" p90_us) $(field "$line" p999_us)"
      if [[ -n "$h" ]]; then spread "$t"; result "SPREAD $r $t$spread_out"; fi
    done
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done  # every server of the load part
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  # What DELETE left behind in the TypeScript server (its count on exit: the sessions that the
  # runs stopped mid-lifecycle, at most one per connection and run).
  if has ts-churn; then
    result "# ts-churn: $(sed -n 's/^ts_echo_server: \(sessions opened.*\)/\1/p' "$work/ts_churn.log")"
  fi

  # Medians over the rounds, and the ratios of the medians.
  summary=$(awk '
    $1 == "LOAD" { n[$3]++; rps[$3, n[$3]] = $4; p50[$3, n[$3]] = $5; p99[$3, n[$3]] = $6; rss[$3, n[$3]] = $7; cpu[$3, n[$3]] = $8; bcpu[$3, n[$3]] = $14 + 0; others[$3, n[$3]] = $15 + 0; p90[$3, n[$3]] = $16 + 0; p999[$3, n[$3]] = $17 + 0; by_round[$2, $3] = $4; if ($2 > last) last = $2 }
    function med(a, t, k,   i, j, v, m, tmp) {
      m = n[t]; for (i = 1; i <= m; i++) v[i] = a[t, i]
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { tmp = v[i]; v[i] = v[j]; v[j] = tmp }
      return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
    }
    END {
      for (t in n) printf "MEDIAN %s rps=%.0f p50_us=%.0f p99_us=%.0f rss_kb=%.0f cpu_us_per_request=%.0f balancer_cpu_us_per_request=%.0f others_cpu_percent=%.0f rounds=%d p90_us=%.0f p999_us=%.0f\n", t, med(rps, t), med(p50, t), med(p99, t), med(rss, t), med(cpu, t), med(bcpu, t), med(others, t), n[t], med(p90, t), med(p999, t)
      # Ratios of two targets (mcpcore2026/mcpcore: what the per-request era costs mcpcore, against
      # calls on an open session; haproxy*/direct*, nginx-haproxy/nginx: what the balancer costs;
      # mcpcore-stream/mcpcore: the streamed call against the plain one); round by round for all
      # but mcpcore/inline.
      nr = split("mcpcore/ts mcpcore/nginx mcpcore/asio asio/nginx mcpcore2026/ts2026 mcpcore2026/mcpcore mcpcore-stream/ts-stream mcpcore-churn/ts-churn mcpcore-stream/mcpcore " balanced, pairs, " ")
      for (r = 1; r <= last; r++) {
        line = ""
        for (i = 1; i <= nr; i++) {
          split(pairs[i], p, "/")
          if (by_round[r, p[1]] > 0 && by_round[r, p[2]] > 0) line = line sprintf(" %s=%.2f", pairs[i], by_round[r, p[1]] / by_round[r, p[2]])
        }
        if (line != "") printf "ROUND_RATIO %d rps%s\n", r, line
      }
      np = split("mcpcore/ts mcpcore/nginx mcpcore/asio mcpcore/inline asio/nginx mcpcore2026/ts2026 mcpcore2026/mcpcore mcpcore-stream/ts-stream mcpcore-churn/ts-churn mcpcore-stream/mcpcore " balanced, pairs, " ")
      for (i = 1; i <= np; i++) {
        split(pairs[i], p, "/")
        if (!(p[1] in n) || !(p[2] in n) || med(rps, p[2]) == 0 || med(cpu, p[2]) == 0) continue
        printf "RATIO %s rps=%.2f p50=%.2f p99=%.2f cpu_per_request=%.2f\n", pairs[i], med(rps, p[1]) / med(rps, p[2]), med(p50, p[1]) / med(p50, p[2]), med(p99, p[1]) / med(p99, p[2]), med(cpu, p[1]) / med(cpu, p[2])
      }
    }' balanced="$ratio_pairs" "$work/results")
  printf '%s\n' "$summary" | sort | while IFS= read -r l; do result "$l"; done

  # The table beside --out, which plot.gp draws: one row per target, in --targets order (see
  # --help, and the column list in plot.gp). Medians as in the MEDIAN lines, each round's value in
  # round order; behind a balancer, the ratios of the medians to the same call without it when
  # that was measured.
  if [[ -n "$out" ]]; then
    rounds_of() {  # rounds_of <target> <LOAD column>: "\t<value>" per round, "-" for a round missing
      awk -v t="$1" -v c="$2" -v n="$rounds" '$1 == "LOAD" && $3 == t && k < n { printf "\t%.0f", $c; k++ }
                                              END { for (; k < n; k++) printf "\t-" }' "$work/results"
    }
    load_settings="wrk -t$wrk_threads -c$connections -d${duration}s, $rounds rounds after a ${warmup} s warm-up,"
    load_settings+=" loopback"
    if has mcpcore-churn || has ts-churn; then load_settings+="; churn: -t$connections, one lifecycle = 4 requests"; fi
    cpu_what="Server CPU time per request"
    if balanced; then cpu_what="CPU time per request of HAProxy and its servers"; fi
    {
      printf '# machine: %s\n# load: %s\n# cpu: %s\n# rounds: %s\n' \
             "$machine_desc" "$load_settings" "$cpu_what" "$rounds"
      printf 'target\tper\tmedian_rps'
      for ((r = 1; r <= rounds; ++r)); do printf '\trps_r%d' "$r"; done
      printf '\tmedian_cpu_us'
      for ((r = 1; r <= rounds; ++r)); do printf '\tcpu_r%d' "$r"; done
      printf '\tp50_us\tp90_us\tp99_us\tp999_us\trss_kb\tbase\trps_ratio\tcpu_ratio\n'
      for t in "${targets[@]}"; do
        m=$(grep "^MEDIAN $t " <<<"$summary" || true)
        per=request
        [[ "${mode[$t]}" != churn ]] || per=lifecycle
        b="${base[$t]:-}" ratios=$'-\t-'
        if [[ -n "$b" ]] && has "$b"; then
          mb=$(grep "^MEDIAN $b " <<<"$summary" || true)
          ratios=$(awk -v a="$(field "$m" rps)" -v b="$(field "$mb" rps)" -v c="$(field "$m" cpu_us_per_request)" \
                       -v d="$(field "$mb" cpu_us_per_request)" \
                         'BEGIN { printf "%s\t%s", (b > 0 ? sprintf("%.2f", a / b) : "-"),
                                                (d > 0 ? sprintf("%.2f", c / d) : "-") }')
        else
          b="-"
        fi
        printf '%s\t%s\t%s' "$t" "$per" "$(field "$m" rps)"
        rounds_of "$t" 4
        printf '\t%s' "$(field "$m" cpu_us_per_request)"
        rounds_of "$t" 8
        printf '\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(field "$m" p50_us)" "$(field "$m" p90_us)" "$(field "$m" p99_us)" \
               "$(field "$m" p999_us)" "$(field "$m" rss_kb)" "$b" "$ratios"
      done
    } >"$out.tsv"
  fi
fi

# ---- idle sessions and idle streams ---------------------------------------------------------------
# idle <kind> <mode> <count>: a fresh server, <count> idle sessions (mode sessions) or sessions
# with an open GET stream each (mode streams); prints the client's IDLE line.
idle() {
  local kind="$1" m="$2" count="$3" name="idle_$1_$2" line rc=0 args=()
  [[ "$m" == streams ]] && args=(--streams)
  if [[ "$kind" == mcpcore ]]; then
    start_mcpcore "$name" --max-sessions $(( count + 16 )) --max-streams $(( count + 16 ))
  else
    start_ts "$name"
  fi
  local pid_var="${name}_pid" port_var="${name}_port"
  line=$("$idle_client" --port "${!port_var}" --pid "${!pid_var}" --count "$count" "${args[@]}" --settle-ms 2000) || rc=$?
  stop_server "$name"
  if ((rc != 0)) || [[ "$line" != IDLE* ]]; then
    log "run.sh: idle $m on $kind failed (exit $rc)"; cat "$work/$name.log" >&2 || true
    failed=1
    return 0
  fi
  result "${line/IDLE /IDLE $kind }"
  idle_bytes[$kind.$m]=$(field "$line" bytes_each)
}
declare -A idle_bytes=()  # <kind>.<mode> -> bytes_each of each idle measurement that succeeded
if ((run_idle)); then
  ((run_load)) || machine_notes
  result "# idle: fresh server each; RSS before the first session and 2 s after the last; bytes_each = delta / count"
  if has mcpcore; then
    idle mcpcore sessions "$idle_sessions"
    idle mcpcore streams "$idle_streams"
  fi
  if has ts; then
    idle ts sessions "$ts_idle"
    idle ts streams "$ts_idle"
  fi
  # The table beside --out, which plot.gp draws: one row per server (NaN for a failed measurement).
  if [[ -n "$out" ]]; then
    {
      printf '# machine: %s\n' "$machine_desc"
      printf '# idle: fresh server each; RSS before the first session and 2 s after the last, divided by the count\n'
      printf 'server\tsessions\tbytes_per_session\tstreams\tbytes_per_stream\n'
      if has mcpcore; then
        printf 'mcpcore\t%s\t%s\t%s\t%s\n' "$idle_sessions" "${idle_bytes[mcpcore.sessions]:-NaN}" \
               "$idle_streams" "${idle_bytes[mcpcore.streams]:-NaN}"
      fi
      if has ts; then
        printf 'ts\t%s\t%s\t%s\t%s\n' "$ts_idle" "${idle_bytes[ts.sessions]:-NaN}" \
               "$ts_idle" "${idle_bytes[ts.streams]:-NaN}"
      fi
    } >"$out.idle.tsv"
  fi
fi

# The figures, from the tables (bench/http/plot.gp; gnuplot quotes ' in a '...' string as '').
if [[ -n "$out" ]] && [[ -s "$out.tsv" || -s "$out.idle.tsv" ]]; then
  if gnuplot -e "out='${out//\'/\'\'}'" "$here/plot.gp"; then
    drawn=""
    for f in "$out".tsv "$out".idle.tsv "$out".*.svg; do [[ ! -e "$f" ]] || drawn+=" $f"; done
    log "run.sh: tables and figures:$drawn"
  else
    log "run.sh: gnuplot could not draw $out.tsv / $out.idle.tsv"
    failed=1
  fi
fi

if ((failed)); then
  log "run.sh: some runs failed (see above); their figures are not valid"
  exit 1
fi
