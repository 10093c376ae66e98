// SPDX-License-Identifier: Apache-2.0
// Three mcpcore-host processes behind a real HAProxy (Debian `haproxy`), the topology of docs/scale-out.md:
// 2025-era sessions stick to the server that created them, 2026-era requests go round robin, health checks use
// /readyz, SSE is not buffered, and a killed server's sessions answer 404 while the official TypeScript client
// (SDK 1.x, MCP 2025-11-25) re-initializes and goes on.
//
// Usage: node haproxy_sessions.mjs <path-to-mcpcore-host> <path-to-haproxy> <allow-list file> [--print-config]
//
// Starts three mcpcore-host processes on ephemeral 127.0.0.1 ports, each with its own data directory and all with
// the first one's token file (--token-file: the operator token the first run printed is valid on every server),
// and HAProxy in the foreground with a generated configuration (below, and in docs/scale-out.md) on an ephemeral
// 127.0.0.1 port with an admin stats socket. HAProxy adds `X-Served-By: <server name>` to every answer; the checks
// count it. Checks: every server is UP by the /readyz health check; a 2025-11-25 SDK client keeps its session
// across 100 tools/call, all served by one server; a streamed call's progress reaches the client through the
// balancer at least a second before its final (not buffered); plain 2026-07-28 enveloped requests spread over all
// three servers; after SIGKILL of the server holding the session, the session's next request answers 404, a new
// SDK client initializes through the balancer and its calls succeed on a live server; once the health check has
// marked the server DOWN (read on the stats socket), 2026-era requests see no error and never reach it.
// With --print-config the generated configuration is printed (lines prefixed "# cfg ").
//
// Prints one line per check ("ok - ..." / "not ok - ..."), then "# N passed, M failed" and "PASS" or "FAIL".
// Every process it started is killed at the end; the whole run is bounded by a global timeout.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  createChecks, expect, expectEqual, fmt, messagesOf, printedOperatorToken, scratchRun, startGlobalTimer,
  startServerProcess, TapTransport,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 180 s). */
const GLOBAL_TIMEOUT_MS = 150_000;
/** A server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every client request and to connect. */
const REQUEST_TIMEOUT_MS = 20_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 60_000;
/** HAProxy must report the wanted server states on its stats socket within this long. */
const STATE_WAIT_MS = 15_000;
/** The health check's interval; a server is DOWN after HEALTH_FALL failed checks, UP after HEALTH_RISE good ones. */
const HEALTH_INTER_MS = 300;
const HEALTH_FALL = 2;
const HEALTH_RISE = 1;
/** The calls the 2025 session makes before the kill; all must be served by one server. */
const STICKY_CALLS = 100;
/** Plain 2026-era requests per round; round robin over three servers reaches each of them. */
const PLAIN_REQUESTS = 9;
/** The streamed call runs `sleep SLEEP_SECONDS`; its first progress must arrive PROGRESS_LEAD_MS before the final. */
const SLEEP_SECONDS = 2;
const PROGRESS_LEAD_MS = 1_000;

const MODERN_VERSION = '2026-07-28';
const LEGACY_VERSION = '2025-11-25';
const ENVELOPE_VERSION = 'io.modelcontextprotocol/protocolVersion';
const ENVELOPE_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const ENVELOPE_CLIENT = 'io.modelcontextprotocol/clientInfo';
const SERVERS = ['s1', 's2', 's3'];

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const args = process.argv.slice(2);
const printConfig = args.includes('--print-config');
const [hostBinary, haproxyBinary, allowlist, ...extra] = args.filter((a) => a !== '--print-config');
if (!hostBinary || !haproxyBinary || !allowlist || extra.length > 0) {
  process.stderr.write('usage: node haproxy_sessions.mjs <mcpcore-host> <haproxy> <allow-list> [--print-config]\n');
  process.exit(2);
}
for (const f of [hostBinary, haproxyBinary, allowlist]) {
  if (!existsSync(f)) {
    process.stderr.write(`haproxy_sessions.mjs: no such file: ${f}\n`);
    process.exit(2);
  }
}

/** name -> {child, port, dataDir}: the mcpcore-host processes. */
const hosts = new Map();
let haproxy;
const { work, cleanup: cleanupRun } = scratchRun('mcpcore-haproxy-', () => undefined, { signals: false });
const running = (child) => child && child.exitCode === null && child.signalCode === null;
function cleanup() {
  for (const child of [haproxy, ...[...hosts.values()].map((h) => h.child)]) {
    if (running(child)) {
      try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
  cleanupRun();
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stdout.write(`not ok - interrupted by ${sig}\nFAIL\n`);
    cleanup();
    process.exit(1);
  });
}
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, () => {
  process.stdout.write('FAIL\n');
  cleanup();
});
const { check, checkWith, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });
const opts = (more = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...more });

// ---- mcpcore-host --------------------------------------------------------------------------------------

/**
 * Starts mcpcore-host on an ephemeral 127.0.0.1 port with `dataDir` and `extraArgs` (as check.mjs startHost does,
 * plus --token-file); resolves with {child, port}; `child.printed()` returns what it printed so far.
 */
async function startMcpHost({ dataDir, portFile, extraArgs }) {
  const hostArgs = ['--data-dir', dataDir, '--port', '0', '--port-file', portFile, '--allowlist', allowlist,
    '--no-journal', ...extraArgs];
  const { child, port } = await startServerProcess(hostBinary, hostArgs, portFile,
    { waitMs: PORT_FILE_WAIT_MS, stdout: 'pipe' });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.printed = () => out;
  return { child, port };
}

// ---- HAProxy --------------------------------------------------------------------------------------------

/** A free 127.0.0.1 port (bound, read, released: HAProxy binds it right after). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * The configuration of docs/scale-out.md#the-haproxy-configuration (each line explained there), for `servers`
 * ({name: port}).
 */
function haproxyConfig({ port, socket, servers }) {
  return [
    'global',
    `    stats socket ${socket} mode 600 level admin`,
    '    maxconn 1024',
    '',
    'defaults',
    '    mode http',
    '    timeout connect 2s',
    '    timeout client 1h',
    '    timeout server 1h',
    '    timeout tunnel 1h',
    '    timeout http-request 10s',
    '    retries 2',
    '    option redispatch',
    '',
    'frontend mcp_in',
    `    bind 127.0.0.1:${port}`,
    '    default_backend mcp',
    '',
    'backend mcp',
    '    balance roundrobin',
    '    option httpchk GET /readyz HTTP/1.1',
    '    http-check send hdr Host localhost',
    '    http-check expect status 200',
    '    stick-table type string len 64 size 100k expire 35m',
    '    stick match req.hdr(mcp-session-id)',
    '    stick store-response res.hdr(mcp-session-id)',
    '    http-response set-header X-Served-By %[srv_name]',
    ...Object.entries(servers).map(([name, p]) =>
      `    server ${name} 127.0.0.1:${p} check inter ${HEALTH_INTER_MS}ms fall ${HEALTH_FALL} rise ${HEALTH_RISE}`),
    '',
  ].join('\n');
}

/** One command on HAProxy's stats socket; resolves with its whole answer. */
function statsCommand(socket, command) {
  return new Promise((resolve, reject) => {
    let out = '';
    const c = createConnection(socket, () => c.end(`${command}\n`));
    c.setEncoding('utf8');
    c.on('data', (d) => { out += d; });
    c.on('end', () => resolve(out));
    c.on('error', reject);
    c.setTimeout(5_000, () => c.destroy(new Error(`no answer to "${command}" on the stats socket`)));
  });
}

/** {server name: status} of the backend `mcp` ("UP", "DOWN", "UP 1/2", ...), from `show stat`. */
async function serverStates(socket) {
  const lines = (await statsCommand(socket, 'show stat')).split('\n').filter((l) => l !== '');
  const head = lines[0].replace(/^# /, '').split(',');
  const [px, sv, st] = ['pxname', 'svname', 'status'].map((k) => head.indexOf(k));
  const out = {};
  for (const l of lines.slice(1)) {
    const f = l.split(',');
    if (f[px] === 'mcp' && SERVERS.includes(f[sv])) out[f[sv]] = f[st];
  }
  return out;
}

/** Waits until HAProxy reports `wanted` ({name: status}); fails with the last states otherwise. */
async function waitStates(socket, wanted) {
  const deadline = performance.now() + STATE_WAIT_MS;
  let states;
  for (;;) {
    states = await serverStates(socket);
    if (Object.entries(wanted).every(([name, status]) => states[name] === status)) return states;
    if (performance.now() > deadline) break;
    await sleep(50);
  }
  return expect(false, `HAProxy's server states: expected ${fmt(wanted)}, got ${fmt(states)}`);
}

// ---- clients --------------------------------------------------------------------------------------------

/** A fetch that records, for each exchange, the JSON-RPC method, the HTTP status and HAProxy's X-Served-By. */
function servedFetch(log) {
  return async (url, init = {}) => {
    let rpc;
    try { rpc = typeof init.body === 'string' ? JSON.parse(init.body).method : undefined; } catch { /* not JSON */ }
    const response = await fetch(url, init);
    log.push({ method: init.method ?? 'GET', rpc, status: response.status,
      servedBy: response.headers.get('x-served-by'), contentType: response.headers.get('content-type') ?? '' });
    return response;
  };
}

/** A 2025-11-25 SDK 1.x client connected through the balancer: {client, tap, log}. */
async function sdkClient(url, token, name) {
  const log = [];
  const http = new StreamableHTTPClientTransport(new URL(url),
    { fetch: servedFetch(log), requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const tap = new TapTransport(http);
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => { /* the standalone GET stream's end is reported here; the checks look at results */ };
  await client.connect(tap, opts());
  return { client, tap, http, log };
}

let nextId = 1;

/** One plain 2026-07-28 enveloped tools/call get_memory (no session); resolves with {status, servedBy, message}. */
async function plainCall(url, token) {
  const id = nextId++;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': MODERN_VERSION, 'Mcp-Method': 'tools/call',
      'Mcp-Name': 'get_memory',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_memory', arguments: {},
      _meta: { [ENVELOPE_VERSION]: MODERN_VERSION, [ENVELOPE_CAPABILITIES]: {},
        [ENVELOPE_CLIENT]: { name: 'mcpcore-haproxy-sessions', version: '1.0.0' } } } }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const messages = await messagesOf(response);
  return { status: response.status, servedBy: response.headers.get('x-served-by'),
    message: messages.find((m) => m.id === id && m.method === undefined) };
}

/** `count` plain calls in sequence; fails on any error; returns {server name: calls served}. */
async function plainRound(url, token, count) {
  const served = {};
  for (let i = 0; i < count; ++i) {
    let r;
    try {
      r = await plainCall(url, token);
    } catch (error) {
      expect(false, `plain call ${i + 1}/${count} failed: ${error.message}${error.cause ? ` (${error.cause})` : ''}`);
    }
    expect(r.status === 200 && r.message?.result?.isError !== true && r.message?.error === undefined,
      `plain call ${i + 1}/${count}: HTTP ${r.status} from ${r.servedBy}: ${fmt(r.message)}`);
    served[r.servedBy] = (served[r.servedBy] ?? 0) + 1;
  }
  return served;
}

/** The servers that served the recorded tools/call POSTs of `log`: {server name: calls}. */
function servedCalls(log) {
  const out = {};
  for (const e of log.filter((x) => x.method === 'POST' && x.rpc === 'tools/call')) {
    out[e.servedBy] = (out[e.servedBy] ?? 0) + 1;
  }
  return out;
}

// ---- the run --------------------------------------------------------------------------------------------

let token;
let url;
let socket;
let legacy;
let holder;

await check('three mcpcore-host processes start, sharing the first one\'s token file', async () => {
  for (const name of SERVERS) {
    const dataDir = join(work, `data-${name}`);
    const portFile = join(work, `port-${name}`);
    const started = await startMcpHost({ dataDir, portFile,
      extraArgs: name === 's1' ? [] : ['--token-file', join(work, 'data-s1', 'tokens')] });
    hosts.set(name, { child: started.child, port: started.port, dataDir });
    if (name === 's1') ({ token } = await printedOperatorToken(started.child));
  }
  process.stdout.write(`# hosts ${fmt(Object.fromEntries([...hosts].map(([n, h]) => [n, h.port])))}\n`);
}, { needsSdk: false });

await check('HAProxy starts with the generated configuration and marks every server UP by GET /readyz', async () => {
  expect(hosts.size === SERVERS.length, 'the servers did not start');
  const port = await freePort();
  socket = join(work, 'haproxy.sock');
  const config = haproxyConfig({ port, socket,
    servers: Object.fromEntries([...hosts].map(([n, h]) => [n, h.port])) });
  const file = join(work, 'haproxy.cfg');
  writeFileSync(file, config);
  if (printConfig) process.stdout.write(config.split('\n').map((l) => `# cfg ${l}`).join('\n') + '\n');
  haproxy = spawn(haproxyBinary, ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  haproxy.stderr.setEncoding('utf8');
  haproxy.stderr.on('data', (d) => { errors += d; });
  const deadline = performance.now() + STATE_WAIT_MS;
  while (!existsSync(socket)) {
    expect(running(haproxy), `haproxy exited: ${fmt(errors)}`);
    expect(performance.now() < deadline, `no stats socket within ${STATE_WAIT_MS} ms: ${fmt(errors)}`);
    await sleep(25);
  }
  await waitStates(socket, Object.fromEntries(SERVERS.map((n) => [n, 'UP'])));
  url = `http://127.0.0.1:${port}/mcp`;
  process.stdout.write(`# haproxy pid ${haproxy.pid} on ${url}\n`);
}, { needsSdk: false });

const withBalancer = checkWith(() => url && token, 'the start');
const withSession = checkWith(() => legacy && holder, 'initialize');

await withBalancer(`a ${LEGACY_VERSION} SDK client initializes through the balancer; the stick table learns its session`, async () => {
  legacy = await sdkClient(url, token, 'mcpcore-haproxy-legacy');
  const init = legacy.log.find((e) => e.rpc === 'initialize');
  expect(SERVERS.includes(init?.servedBy), `the initialize answer's X-Served-By: ${fmt(init)}`);
  holder = init.servedBy;
  const negotiated = legacy.tap.received.find((r) => r.message.result?.protocolVersion !== undefined);
  expectEqual(negotiated?.message.result.protocolVersion, LEGACY_VERSION, 'the negotiated protocol version');
  const sessionId = legacy.http.sessionId;
  expect(/^[0-9a-f]{32}$/.test(sessionId ?? ''), `session id ${fmt(sessionId)}`);
  const table = await statsCommand(socket, 'show table mcp');
  const serverId = SERVERS.indexOf(holder) + 1;
  expect(table.includes(`key=${sessionId}`) && table.includes(`server_id=${serverId}`),
    `the stick table does not map the session to ${holder} (server_id ${serverId}): ${fmt(table)}`);
  process.stdout.write(`# the session ${sessionId} lives on ${holder}\n`);
});

await withSession(`the session holds across ${STICKY_CALLS} tools/call: every answer OK, all served by one server`, async () => {
  for (let i = 0; i < STICKY_CALLS; ++i) {
    const r = await legacy.client.callTool({ name: 'get_memory', arguments: {} }, undefined, opts());
    expect(r.isError !== true && typeof r.structuredContent === 'object', `call ${i + 1}: ${fmt(r)}`);
  }
  const served = servedCalls(legacy.log);
  expectEqual(served, { [holder]: STICKY_CALLS }, 'tools/call answers per server');
  const elsewhere = legacy.log.filter((e) => e.servedBy !== holder);
  expect(elsewhere.length === 0, `exchanges served elsewhere: ${fmt(elsewhere)}`);
});

await withSession('a streamed call through the balancer: progress arrives before the final, not buffered', async () => {
  const progress = [];
  const before = legacy.tap.received.length;
  const result = await legacy.client.callTool(
    { name: 'execute_instruction', arguments: { command: 'sleep', args: [String(SLEEP_SECONDS)] } }, undefined,
    opts({ onprogress: (p) => progress.push({ at: performance.now(), p }) }));
  expectEqual([result.structuredContent?.status, result.isError ?? false], ['succeeded', false], '[status, isError]');
  const wire = legacy.tap.received.slice(before);
  const firstProgress = wire.find((r) => r.message.method === 'notifications/progress');
  const final = wire.find((r) => r.message.result?.structuredContent?.execution_id !== undefined);
  expect(firstProgress && final, `progress and final on the wire: ${fmt(wire.map((r) => r.message))}`);
  const lead = final.at - firstProgress.at;
  expect(lead >= PROGRESS_LEAD_MS, `the first progress arrived only ${Math.round(lead)} ms before the final `
    + `(a ${SLEEP_SECONDS} s command): the stream was buffered`);
  const post = legacy.log.filter((e) => e.rpc === 'tools/call').at(-1);
  expect(post.contentType.startsWith('text/event-stream'), `Content-Type ${fmt(post.contentType)}`);
  expectEqual(post.servedBy, holder, 'the streamed call\'s server');
  process.stdout.write(`# first progress ${Math.round(lead)} ms before the final\n`);
});

await withBalancer(`${PLAIN_REQUESTS} plain ${MODERN_VERSION} requests (no session) spread over all three servers`, async () => {
  const served = await plainRound(url, token, PLAIN_REQUESTS);
  expectEqual(Object.keys(served).sort(), SERVERS, `the servers that answered (${fmt(served)})`);
});

let killedAt;
await withSession('SIGKILL of the server holding the session: the session\'s next request answers 404', async () => {
  const { child } = hosts.get(holder);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(child.pid, 'SIGKILL');
  await exited;
  killedAt = performance.now();
  let error;
  try {
    await legacy.client.callTool({ name: 'get_memory', arguments: {} }, undefined, opts());
  } catch (e) {
    error = e;
  }
  expect(error, 'the call after the kill succeeded');
  expectEqual(error.code, 404, `the error's HTTP status (${error.message})`);
  const last = legacy.log.filter((e) => e.rpc === 'tools/call').at(-1);
  expect(last.status === 404 && SERVERS.includes(last.servedBy) && last.servedBy !== holder,
    `the 404 was not answered by a live server: ${fmt(last)}`);
  await legacy.client.close().catch(() => {});
});

let fresh;
await withSession('the SDK client re-initializes (a new Client and transport) through the balancer and goes on', async () => {
  fresh = await sdkClient(url, token, 'mcpcore-haproxy-legacy-2');
  const init = fresh.log.find((e) => e.rpc === 'initialize');
  expect(SERVERS.includes(init?.servedBy) && init.servedBy !== holder, `initialize served by ${fmt(init?.servedBy)}`);
  for (let i = 0; i < 10; ++i) {
    const r = await fresh.client.callTool({ name: 'get_memory', arguments: {} }, undefined, opts());
    expect(r.isError !== true, `call ${i + 1}: ${fmt(r)}`);
  }
  expectEqual(servedCalls(fresh.log), { [init.servedBy]: 10 }, 'tools/call answers per server');
  await fresh.client.close().catch(() => {});
});

await withSession(`after the health check marks it DOWN, ${PLAIN_REQUESTS * 2} plain ${MODERN_VERSION} requests see no error`, async () => {
  const live = SERVERS.filter((n) => n !== holder);
  await waitStates(socket, Object.fromEntries(SERVERS.map((n) => [n, n === holder ? 'DOWN' : 'UP'])));
  process.stdout.write(`# ${holder} DOWN ${Math.round(performance.now() - killedAt)} ms after the kill\n`);
  const served = await plainRound(url, token, PLAIN_REQUESTS * 2);
  expectEqual(Object.keys(served).sort(), live, `the servers that answered (${fmt(served)})`);
});

const status = summary();
process.stdout.write(status === 0 ? 'PASS\n' : 'FAIL\n');
clearTimeout(globalTimer);
cleanup();
process.exit(status);
