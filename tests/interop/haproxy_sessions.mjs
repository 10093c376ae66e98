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
// and HAProxy in the foreground with a generated configuration (haproxy_cluster.mjs, and docs/scale-out.md) on an
// ephemeral 127.0.0.1 port with an admin stats socket. HAProxy adds `X-Served-By: <server name>` to every answer;
// the checks count it. Checks: every server is UP by the /readyz health check; a 2025-11-25 SDK client keeps its
// session across 100 tools/call, all served by one server; a streamed call's progress reaches the client through the
// balancer at least a second before its final (not buffered); plain 2026-07-28 enveloped requests spread over all
// three servers; after SIGKILL of the server holding the session, the session's next request answers 404, a new
// SDK client initializes through the balancer and its calls succeed on a live server; once the health check has
// marked the server DOWN (read on the stats socket), 2026-era requests see no error and never reach it.
// With --print-config the generated configuration is printed (lines prefixed "# cfg ").
//
// Prints one line per check ("ok - ..." / "not ok - ..."), then "# N passed, M failed" and "PASS" or "FAIL".
// Every process it started is killed at the end; the whole run is bounded by a global timeout.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { performance } from 'node:perf_hooks';
import process from 'node:process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  checkArguments, createChecks, expect, expectEqual, fmt, guardRun, MODERN_VERSION, TapTransport,
} from './check.mjs';
import { HaproxyCluster } from './haproxy_cluster.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 180 s). */
const GLOBAL_TIMEOUT_MS = 150_000;
/** Timeout handed to every client request and to connect. */
const REQUEST_TIMEOUT_MS = 20_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 60_000;
/** The calls the 2025 session makes before the kill; all must be served by one server. */
const STICKY_CALLS = 100;
/** Plain 2026-era requests per round; round robin over three servers reaches each of them. */
const PLAIN_REQUESTS = 9;
/** The streamed call runs `sleep SLEEP_SECONDS`; its first progress must arrive PROGRESS_LEAD_MS before the final. */
const SLEEP_SECONDS = 2;
const PROGRESS_LEAD_MS = 1_000;

const LEGACY_VERSION = '2025-11-25';
const SERVERS = ['s1', 's2', 's3'];

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const args = process.argv.slice(2);
const printConfig = args.includes('--print-config');
const [hostBinary, haproxyBinary, allowlist, ...extra] = args.filter((a) => a !== '--print-config');
checkArguments('haproxy_sessions.mjs', {
  ok: hostBinary && haproxyBinary && allowlist && extra.length === 0,
  usage: 'usage: node haproxy_sessions.mjs <mcpcore-host> <haproxy> <allow-list> [--print-config]',
  files: [hostBinary, haproxyBinary, allowlist],
});

/** The hosts and HAProxy (haproxy_cluster.mjs), in a scratch directory. */
const cluster = new HaproxyCluster({ prefix: 'mcpcore-haproxy-', hostBinary, haproxyBinary, allowlist, servers: SERVERS,
  clientName: 'mcpcore-haproxy-sessions', requestTimeoutMs: REQUEST_TIMEOUT_MS });
const globalTimer = guardRun(() => cluster.cleanup(), GLOBAL_TIMEOUT_MS);
const { check, checkWith, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });
const opts = (more = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...more });

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

/**
 * `count` plain 2026-07-28 enveloped tools/call get_memory (no session) through the balancer, in sequence; fails on
 * any error; returns {server name: calls served}.
 */
async function plainRound(token, count) {
  const served = {};
  for (let i = 0; i < count; ++i) {
    let r;
    try {
      r = await cluster.call(token, 'get_memory', {});
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
let legacy;
let holder;

await check('three mcpcore-host processes start, sharing the first one\'s token file', async () => {
  token = await cluster.startHosts();
}, { needsSdk: false });

await check('HAProxy starts with the generated configuration and marks every server UP by GET /readyz', async () => {
  expect(cluster.hosts.size === SERVERS.length, 'the servers did not start');
  url = await cluster.startHaproxy({ printConfig });
  process.stdout.write(`# haproxy pid ${cluster.haproxy.pid} on ${url}\n`);
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
  const table = await cluster.statsCommand('show table mcp');
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
  const served = await plainRound(token, PLAIN_REQUESTS);
  expectEqual(Object.keys(served).sort(), SERVERS, `the servers that answered (${fmt(served)})`);
});

let killedAt;
await withSession('SIGKILL of the server holding the session: the session\'s next request answers 404', async () => {
  const { child } = cluster.hosts.get(holder);
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
  await cluster.waitStates(Object.fromEntries(SERVERS.map((n) => [n, n === holder ? 'DOWN' : 'UP'])));
  process.stdout.write(`# ${holder} DOWN ${Math.round(performance.now() - killedAt)} ms after the kill\n`);
  const served = await plainRound(token, PLAIN_REQUESTS * 2);
  expectEqual(Object.keys(served).sort(), live, `the servers that answered (${fmt(served)})`);
});

const status = summary();
process.stdout.write(status === 0 ? 'PASS\n' : 'FAIL\n');
clearTimeout(globalTimer);
cluster.cleanup();
process.exit(status);
