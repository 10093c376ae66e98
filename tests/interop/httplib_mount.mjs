// SPDX-License-Identifier: Apache-2.0
// End-to-end checks of examples/httplib_mount (mcpcore mounted on cpp-httplib through the blocking-server
// adapter, docs/http.md#mounting-on-a-blocking-server) with the official MCP TypeScript SDK client
// (StreamableHTTPClientTransport), and raw fetch where the wire must be seen exactly: the host's own bearer
// check (401), initialize, a call, a streamed call with progress, a GET resume after a drop (Last-Event-ID),
// cancellation, DELETE, and SIGTERM with streams open (they end, the process exits 0 promptly).
//
// Usage: node httplib_mount.mjs <path-to-mcpcore-httplib-mount>
//
// Starts the example on an ephemeral 127.0.0.1 port, runs every check in order and prints one line per
// check, "ok - <name>" or "not ok - <name>: <why>". The server is always killed by its PID at the end.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import process from 'node:process';
import { performance } from 'node:perf_hooks';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  CheckFailure, SseReader, bodyText, createChecks, expect, expectEqual, fmt, messagesOf, scratchRun,
  startGlobalTimer, startServerProcess, stopServerProcess, textOf, withTimeout,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is larger). */
const GLOBAL_TIMEOUT_MS = 90_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every SDK request. */
const REQUEST_TIMEOUT_MS = 15_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 30_000;
/** Bound on reading one SSE event or one whole response body. */
const READ_TIMEOUT_MS = 10_000;
/** After notifications/cancelled, the cancelled request's POST stream must end within this long. */
const CANCEL_END_WITHIN_MS = 3_000;
/** After SIGTERM with streams open, the streams must end and the process exit within this long. */
const SHUTDOWN_WITHIN_MS = 6_000;
/** After that, the process is sent SIGKILL (the check has failed by then). */
const SERVER_EXIT_WAIT_MS = 10_000;

// ---- the example's surface (examples/httplib_mount/main.cpp) ----------------------------------------------

const PROTOCOL_VERSION = '2025-11-25';
const SERVER_NAME = 'mcpcore-httplib-mount';
const TOOL_NAMES = ['count_slowly', 'echo', 'whoami'];
/** The host's fixed token table. */
const ALICE = 'httplib-example-alice';
const BOB = 'httplib-example-bob';
const CLOSE_METHOD = 'notifications/mcpcore/stream_closed';

// ---- arguments ------------------------------------------------------------------------------------------

const [serverBinary, ...rest] = process.argv.slice(2);
if (!serverBinary || rest.length > 0) {
  process.stderr.write('usage: node httplib_mount.mjs <path-to-mcpcore-httplib-mount>\n');
  process.exit(2);
}
if (!existsSync(serverBinary)) {
  process.stderr.write(`httplib_mount: no such file: ${serverBinary}\n`);
  process.exit(2);
}

const { check, describe, markInitialized, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

// ---- the server -----------------------------------------------------------------------------------------

let server;
const { portFile, cleanup } = scratchRun('mcpcore-httplib-mount-', () => server, { signals: true });
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);

let mcpUrl;

// ---- raw HTTP ---------------------------------------------------------------------------------------------

function headersFor({ session, token = ALICE, protocol = true, extra = {} } = {}) {
  const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  if (protocol) h['MCP-Protocol-Version'] = PROTOCOL_VERSION;
  if (session) h['Mcp-Session-Id'] = session;
  if (token) h.Authorization = `Bearer ${token}`;
  return { ...h, ...extra };
}

function post(body, options = {}) {
  return fetch(mcpUrl, {
    method: 'POST', headers: headersFor(options), body: JSON.stringify(body), signal: options.signal,
  });
}

function getStream(session, { lastEventId, token = ALICE, signal } = {}) {
  const headers = { Accept: 'text/event-stream', 'Mcp-Session-Id': session, 'MCP-Protocol-Version': PROTOCOL_VERSION };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (lastEventId !== undefined) headers['Last-Event-ID'] = lastEventId;
  return fetch(mcpUrl, { method: 'GET', headers, signal });
}

let rawIds = 1000;

/** initialize + notifications/initialized over raw fetch; returns the session id. */
async function rawSession({ token = ALICE } = {}) {
  const init = await post({
    jsonrpc: '2.0', id: ++rawIds, method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'httplib-mount-raw', version: '1.0.0' } },
  }, { token, protocol: false });
  expectEqual(init.status, 200, 'initialize status');
  const session = init.headers.get('mcp-session-id');
  expect(typeof session === 'string' && session.length > 0, `initialize gave no Mcp-Session-Id: ${fmt(session)}`);
  const [reply] = await messagesOf(init);
  expectEqual(reply?.result?.protocolVersion, PROTOCOL_VERSION, 'raw initialize protocolVersion');
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { session, token });
  expectEqual(initialized.status, 202, 'notifications/initialized status');
  await bodyText(initialized);
  return session;
}

/** A `count_slowly` call with a progress token, as a streamed POST; its reader and its id. */
async function startCount(session, { to, intervalMs, progressToken, signal }) {
  const id = ++rawIds;
  const response = await post({
    jsonrpc: '2.0', id, method: 'tools/call',
    params: { name: 'count_slowly', arguments: { to, interval_ms: intervalMs }, _meta: { progressToken } },
  }, { session, signal });
  expectEqual(response.status, 200, 'POST status');
  expect((response.headers.get('content-type') ?? '').startsWith('text/event-stream'),
    `a call with a progress token did not stream: Content-Type ${fmt(response.headers.get('content-type'))}`);
  return { id, stream: new SseReader(response) };
}

/** Reads `stream` until a progress event for `token`; that event. */
async function nextProgress(stream, token, id) {
  for (;;) {
    const e = await stream.next();
    expect(e !== null, 'the stream ended before the next progress event');
    expect(e.json?.id !== id || e.json?.method !== undefined, `the result arrived before the progress: ${fmt(e.json)}`);
    if (e.json?.method === 'notifications/progress' && e.json.params?.progressToken === token) return e;
  }
}

// ---- the SDK client -------------------------------------------------------------------------------------

const opts = (extra = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...extra });
let client;
let http;

// ---- checks -----------------------------------------------------------------------------------------------

async function checks() {
  await check('the host\'s bearer check: no token and a wrong token are 401 with WWW-Authenticate: Bearer', async () => {
    for (const token of [undefined, 'not-a-token-of-the-host']) {
      const response = await post({
        jsonrpc: '2.0', id: ++rawIds, method: 'initialize',
        params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'intruder', version: '1' } },
      }, { token: token ?? '', protocol: false });
      expectEqual(response.status, 401, `status with token ${fmt(token)}`);
      expect(/^Bearer\b/i.test(response.headers.get('www-authenticate') ?? ''),
        `WWW-Authenticate: ${fmt(response.headers.get('www-authenticate'))}`);
      await bodyText(response);
    }
  }, { needsSdk: false });

  await check('a foreign Host is 403: the local address the host reported reads as loopback (raw)', async () => {
    // fetch may not set Host; node:http may.
    const url = new URL(mcpUrl);
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' });
    const status = await withTimeout(new Promise((resolve, reject) => {
      const req = httpRequest({
        host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
        headers: { ...headersFor({ protocol: false }), Host: 'rebinding.example', 'Content-Length': Buffer.byteLength(body) },
      }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
      req.on('error', reject);
      req.end(body);
    }), READ_TIMEOUT_MS, 'no answer to the foreign Host');
    expectEqual(status, 403, 'status');
  }, { needsSdk: false });

  await check('initialize', async () => {
    http = new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${ALICE}` } } });
    client = new Client({ name: 'mcpcore-httplib-mount-interop', version: '1.0.0' }, { capabilities: {} });
    client.onerror = () => { /* stream ends are reported here; checks look at results */ };
    await client.connect(http, opts());
    markInitialized();
    expectEqual(client.getServerVersion()?.name, SERVER_NAME, 'serverInfo.name');
    expect(typeof http.sessionId === 'string' && http.sessionId.length > 0, `no Mcp-Session-Id: ${fmt(http.sessionId)}`);
  });

  await check('tools/list', async () => {
    const { tools } = await client.listTools({}, opts());
    expectEqual(tools.map((t) => t.name).sort(), TOOL_NAMES, 'tool names');
  });

  await check('tools/call echo', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { text: 'through cpp-httplib' } }, undefined, opts());
    expectEqual(result, { content: [{ type: 'text', text: 'through cpp-httplib' }] }, 'result');
  });

  await check('the principal the host handed in, with its host context, reaches the tool', async () => {
    const result = await client.callTool({ name: 'whoami', arguments: {} }, undefined, opts());
    expectEqual(textOf(result, 'whoami'), 'alice of research', 'whoami');
  });

  await check('progress: onprogress receives every step before the result', async () => {
    const progress = [];
    const result = await client.callTool({ name: 'count_slowly', arguments: { to: 5, interval_ms: 20 } }, undefined,
      opts({ onprogress: (p) => progress.push(p) }));
    const beforeResult = progress.length;
    expectEqual(textOf(result, 'count_slowly'), 'counted to 5', 'text');
    expectEqual(beforeResult, 5, 'progress notifications delivered before callTool resolved');
    expectEqual(progress.map((p) => [p.progress, p.total]), [[1, 5], [2, 5], [3, 5], [4, 5], [5, 5]], '[progress, total]');
  });

  await check('resources/read', async () => {
    const read = await client.readResource({ uri: 'httplib-mount://about' }, opts());
    expectEqual(read.contents?.[0]?.mimeType, 'text/plain', 'mimeType');
  });

  await check('a streamed call dropped mid-way resumes on GET with Last-Event-ID (raw)', async () => {
    const session = await rawSession();
    const token = 'resume-1';
    const controller = new AbortController();
    const { id, stream } = await startCount(session, { to: 6, intervalMs: 100, progressToken: token, signal: controller.signal });
    const first = await nextProgress(stream, token, id);
    expectEqual(first.json.params.progress, 1, 'first progress value');
    const second = await nextProgress(stream, token, id);
    expect(second.id !== undefined, 'the progress event has no id');
    const cursor = second.id;
    controller.abort(); // the client goes away mid-call; the work goes on
    await stream.cancel();

    const resumed = await getStream(session, { lastEventId: cursor });
    expectEqual(resumed.status, 200, 'GET with Last-Event-ID status');
    const get = new SseReader(resumed);
    const seen = [];
    try {
      for (;;) {
        const e = await get.next();
        if (e === null) break;
        if (e.json === undefined) continue;
        seen.push(e);
        if (e.json.id === id && e.json.method === undefined) break;
      }
    } finally {
      await get.cancel();
    }
    const shape = seen.map((e) => (e.json.method === 'notifications/progress' ? `progress ${e.json.params.progress}` : 'result'));
    expectEqual(shape, ['progress 3', 'progress 4', 'progress 5', 'progress 6', 'result'], 'the frames after the cursor, in order');
    const numeric = [cursor, ...seen.map((e) => e.id)].map(Number);
    expect(numeric.every((x, k) => k === 0 || x > numeric[k - 1]), `event ids do not increase after the cursor: ${fmt(numeric)}`);
    expectEqual(textOf(seen.at(-1).json.result, 'resumed result'), 'counted to 6', 'the resumed result');
  }, { needsSdk: false });

  await check('notifications/cancelled ends the call\'s stream promptly, without a result (raw)', async () => {
    const session = await rawSession();
    const token = 'cancel-1';
    const { id, stream } = await startCount(session, { to: 1000, intervalMs: 50, progressToken: token });
    await nextProgress(stream, token, id);
    const cancelledAt = performance.now();
    const cancel = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'interop' } },
      { session });
    expectEqual(cancel.status, 202, 'notifications/cancelled status');
    await bodyText(cancel);
    const after = await stream.rest(CANCEL_END_WITHIN_MS);
    const endedAfter = performance.now() - cancelledAt;
    expect(endedAfter < CANCEL_END_WITHIN_MS, `the stream ended ${Math.round(endedAfter)} ms after the cancellation`);
    const answers = after.filter((e) => e.json?.id === id && e.json?.method === undefined);
    expectEqual(answers.map((e) => e.json), [], 'responses to the cancelled request');
    const [pong] = await messagesOf(await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session }));
    expectEqual(pong?.result, {}, 'ping after the cancellation');
  }, { needsSdk: false });

  await check('DELETE ends a session: 200, then 404 for it (raw)', async () => {
    const session = await rawSession({ token: BOB });
    const del = await fetch(mcpUrl, {
      method: 'DELETE',
      headers: { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': PROTOCOL_VERSION, Authorization: `Bearer ${BOB}` },
    });
    expectEqual(del.status, 200, 'DELETE status');
    await bodyText(del);
    const gone = await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session, token: BOB });
    expectEqual(gone.status, 404, 'POST after DELETE');
    await bodyText(gone);
  }, { needsSdk: false });

  await check('DELETE of the SDK client\'s session (terminateSession) answers 200', async () => {
    const session = http.sessionId;
    await http.terminateSession();
    expectEqual(http.sessionId, undefined, 'the SDK cleared its session id (it does so only on 200/405)');
    const gone = await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session });
    expectEqual(gone.status, 404, 'the terminated session afterwards');
    await bodyText(gone);
  });
  if (client) await client.close();

  await check('SIGTERM with a GET stream and a streamed call open: both end, the process exits 0 promptly', async () => {
    const session = await rawSession();
    const get = await getStream(session);
    expectEqual(get.status, 200, 'GET status');
    const getReader = new SseReader(get);
    const token = 'shutdown-1';
    const { id, stream } = await startCount(session, { to: 1000, intervalMs: 50, progressToken: token });
    await nextProgress(stream, token, id);

    const exited = new Promise((resolve) => {
      if (server.exitInfo) resolve(server.exitInfo);
      else server.once('exit', (code, signal) => resolve({ code, signal }));
    });
    const t0 = performance.now();
    process.kill(server.pid, 'SIGTERM');
    const [postRest, getRest] = await Promise.all([stream.rest(SHUTDOWN_WITHIN_MS), getReader.rest(SHUTDOWN_WITHIN_MS)]);
    const exit = await withTimeout(exited, SHUTDOWN_WITHIN_MS, `the process did not exit within ${SHUTDOWN_WITHIN_MS} ms of SIGTERM`);
    const took = performance.now() - t0;
    expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
    expect(took < SHUTDOWN_WITHIN_MS, `the shutdown took ${Math.round(took)} ms`);
    expect(getRest.some((e) => e.json?.method === CLOSE_METHOD), `the GET stream ended without ${CLOSE_METHOD}: ${fmt(getRest.map((e) => e.json))}`);
    expect(postRest.some((e) => e.json?.method === CLOSE_METHOD || (e.json?.id === id && e.json?.method === undefined)),
      `the POST stream ended without its close notification or a result: ${fmt(postRest.map((e) => e.json))}`);
  }, { needsSdk: false });
}

// ---- run --------------------------------------------------------------------------------------------------

try {
  const started = await startServerProcess(serverBinary, ['--port', '0', '--port-file', portFile], portFile,
                                           { waitMs: PORT_FILE_WAIT_MS });
  server = started.child;
  mcpUrl = `http://127.0.0.1:${started.port}/mcp`;
} catch (error) {
  process.stdout.write(`not ok - start the server: ${describe(error)}\n# 0 passed, 1 failed\n`);
  cleanup();
  process.exit(1);
}
process.stdout.write(`# server pid ${server.pid} on ${mcpUrl}\n`);

await checks();
if (server.exitInfo === undefined) await stopServerProcess(server, SERVER_EXIT_WAIT_MS);

const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
