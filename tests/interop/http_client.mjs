// SPDX-License-Identifier: Apache-2.0
// Interop checks over Streamable HTTP: the official MCP TypeScript SDK client
// (StreamableHTTPClientTransport), and raw fetch where the wire must be seen exactly, against the
// mcpcore conformance fixture server (examples/conformance_server).
//
// Usage: node http_client.mjs <path-to-mcpcore-conformance-server>
//
// Generates two bearer tokens (an agent of the supervised tier, and a human-interactive, assured
// approver), writes their SHA-256 digests to a token file, starts the server on an ephemeral
// 127.0.0.1 port with that file, runs every check in order and prints one line per check,
// "ok - <name>" or "not ok - <name>: <why>". The server is always killed by its PID at the end.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  CheckFailure, SseReader, bodyText, createChecks, expect, expectEqual, fmt, messagesOf, serverMessage,
  startGlobalTimer, startServerProcess, stopServerProcess, TapTransport, textOf, withTimeout,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is larger). */
const GLOBAL_TIMEOUT_MS = 180_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every SDK request (the SDK default is 60 s, too long for a test). */
const REQUEST_TIMEOUT_MS = 15_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 30_000;
/** Bound on reading one SSE event or one whole response body. */
const READ_TIMEOUT_MS = 10_000;
/** How long to keep listening for log notifications after the result of the call that caused them. */
const LOG_GRACE_MS = 200;
/** After notifications/cancelled, the cancelled request's POST stream must end within this long. */
const CANCEL_END_WITHIN_MS = 3_000;
/** After SIGTERM the server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 8_000;

// ---- expected server surface (examples/conformance_server/main.cpp, docs/conformance.md) -----------------

const PROTOCOL_VERSION = '2025-11-25';
const SERVER_NAME = 'mcpcore-conformance-server';
const TOOL_NAMES = [
  'confirm_delete', 'delete_note', 'failing_job', 'greet', 'json_schema_2020_12_tool', 'multi_input',
  'protocol_error_job', 'slow_compute', 'test_audio_content', 'test_custom_header_echo', 'test_dynamic_tool',
  'test_elicitation', 'test_elicitation_sep1034_defaults', 'test_elicitation_sep1330_enums', 'test_embedded_resource',
  'test_error_handling', 'test_image_content', 'test_input_required_result_capabilities',
  'test_input_required_result_elicitation', 'test_input_required_result_list_roots',
  'test_input_required_result_multi_round', 'test_input_required_result_multiple_inputs',
  'test_input_required_result_request_state', 'test_input_required_result_sampling',
  'test_input_required_result_tampered_state', 'test_logging_tool', 'test_missing_capability',
  'test_multiple_content_types', 'test_reconnection', 'test_sampling', 'test_simple_text', 'test_slow_tool',
  'test_streaming_elicitation', 'test_tool_with_logging', 'test_tool_with_progress', 'test_tool_with_task',
  'test_trigger_prompt_change', 'test_trigger_resource_update', 'test_trigger_tool_change',
];
const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
  additionalProperties: false,
};
const ELICITATION_SCHEMA = {
  type: 'object',
  properties: {
    username: { type: 'string', description: "User's response" },
    email: { type: 'string', description: "User's email address" },
  },
  required: ['username', 'email'],
};
const LOG_LINES = ['Tool execution started', 'Tool processing data', 'Tool execution completed'];
const SAMPLING_ANSWER = { role: 'assistant', content: { type: 'text', text: '42' }, model: 'interop-model', stopReason: 'endTurn' };
const ELICITATION_ANSWER = { action: 'accept', content: { username: 'interop', email: 'interop@example.com' } };
const APPROVAL_REQUIRED = -32006;
const FORBIDDEN = -32003;
const APPROVAL_ID = /^[0-9a-f]{32}$/;
const AGENT = { id: 'interop-agent', tier: 'supervised', kind: 'service' };
const APPROVER = { id: 'interop-approver', tier: '-', kind: 'human_interactive', options: 'roles=approver assured name=Interop Approver' };

// ---- arguments ------------------------------------------------------------------------------------------

const [serverBinary, ...rest] = process.argv.slice(2);
if (!serverBinary || rest.length > 0) {
  process.stderr.write('usage: node http_client.mjs <path-to-mcpcore-conformance-server>\n');
  process.exit(2);
}
if (!existsSync(serverBinary)) {
  process.stderr.write(`http_client: no such file: ${serverBinary}\n`);
  process.exit(2);
}

// ---- check plumbing (check.mjs) -------------------------------------------------------------------------

/**
 * Until the SDK client's initialize completed, the SDK checks fail without running; the raw checks pass
 * `{ needsSdk: false }`. Failure reasons show an Error's cause (fetch puts the reason there).
 */
const { check, describe, expectMcpError, markInitialized, summary } =
  createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

// ---- the server: tokens, spawn, kill by PID -------------------------------------------------------------

const work = mkdtempSync(join(tmpdir(), 'mcpcore-http-interop-'));
const portFile = join(work, 'port');
const tokenFile = join(work, 'tokens');
/** A fresh bearer token: 32 random bytes, base64url (RFC 6750 b64token syntax). */
const newToken = () => randomBytes(32).toString('base64url');
const agentToken = newToken();
const approverToken = newToken();
const digest = (token) => createHash('sha256').update(token).digest('hex');
writeFileSync(tokenFile, [
  '# Generated by tests/interop/http_client.mjs for one run; digests only.',
  `sha256:${digest(agentToken)}  ${AGENT.id}  ${AGENT.tier}  ${AGENT.kind}`,
  `sha256:${digest(approverToken)}  ${APPROVER.id}  ${APPROVER.tier}  ${APPROVER.kind}  ${APPROVER.options}`,
  '',
].join('\n'), { mode: 0o600 });

let server;

function killServerNow() {
  if (server && server.exitInfo === undefined) {
    try { process.kill(server.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
}

function cleanup() {
  killServerNow();
  try { rmSync(work, { recursive: true, force: true }); } catch { /* best effort */ }
}

process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stdout.write(`not ok - interrupted by ${sig}\n`);
    cleanup();
    process.exit(1);
  });
}
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);

async function startServer() {
  const started = await startServerProcess(serverBinary, ['--port', '0', '--port-file', portFile, '--token-file', tokenFile],
                                           portFile, { waitMs: PORT_FILE_WAIT_MS });
  server = started.child;
  return started.port;
}

/** SIGTERM, then SIGKILL after SERVER_EXIT_WAIT_MS; resolves with the exit {code, signal, killed}. */
function stopServer() {
  return stopServerProcess(server, SERVER_EXIT_WAIT_MS);
}

// ---- raw HTTP: requests, bodies, SSE ---------------------------------------------------------------------

let baseUrl; // http://127.0.0.1:<port>
let mcpUrl; // <baseUrl>/mcp

function headersFor({ session, token, sse = true, protocol = true, extra = {} } = {}) {
  const h = { 'Content-Type': 'application/json', Accept: sse ? 'application/json, text/event-stream' : 'application/json' };
  if (protocol) h['MCP-Protocol-Version'] = PROTOCOL_VERSION;
  if (session) h['Mcp-Session-Id'] = session;
  if (token) h.Authorization = `Bearer ${token}`;
  return { ...h, ...extra };
}

function post(body, options = {}) {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: headersFor(options),
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: options.signal,
  });
}

let rawIds = 1000;

/**
 * initialize + notifications/initialized over raw fetch; returns the session id. `capabilities` are
 * the client's (elicitation lets the server call elicitation/create on this session).
 */
async function rawSession({ token, capabilities = { elicitation: {}, sampling: {} } } = {}) {
  const init = await post({
    jsonrpc: '2.0', id: ++rawIds, method: 'initialize',
    params: { protocolVersion: PROTOCOL_VERSION, capabilities, clientInfo: { name: 'mcpcore-interop-raw', version: '1.0.0' } },
  }, { token, protocol: false });
  expectEqual(init.status, 200, 'initialize status');
  const session = init.headers.get('mcp-session-id');
  expect(typeof session === 'string' && /^[\x21-\x7e]+$/.test(session), `initialize gave no valid Mcp-Session-Id: ${fmt(session)}`);
  const [reply] = await messagesOf(init);
  expectEqual(reply?.result?.protocolVersion, PROTOCOL_VERSION, 'raw initialize protocolVersion');
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { session, token });
  expectEqual(initialized.status, 202, 'notifications/initialized status');
  expectEqual(await bodyText(initialized), '', 'notifications/initialized body');
  return session;
}

// ---- SDK client set-up ----------------------------------------------------------------------------------

/**
 * The shared tap (check.mjs) over a StreamableHTTPClientTransport: it also passes the session id and the
 * negotiated protocol version through, and its raw look-ups fail the check with a CheckFailure.
 */
class HttpTap extends TapTransport {
  get sessionId() { return this.inner.sessionId; }
  setProtocolVersion(version) { this.inner.setProtocolVersion?.(version); }
  rawResult(method) {
    const request = this.lastSent(method);
    if (!request) throw new CheckFailure(`no ${method} request was sent`);
    const i = this.responseIndex(request.id);
    if (i < 0) throw new CheckFailure(`no response to ${method} (id ${fmt(request.id)})`);
    const response = this.received[i].message;
    if (response.error) throw new CheckFailure(`${method} answered with an error: ${fmt(response.error)}`);
    return response.result;
  }
}

const opts = (extra = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...extra });

/** A connected SDK client (anonymous without `token`) and its tap. */
async function sdkClient(name, { token } = {}) {
  const http = new StreamableHTTPClientTransport(new URL(mcpUrl), token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {});
  const tap = new HttpTap(http);
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
  client.onerror = () => { /* stream ends and reconnections are reported here; checks look at results */ };
  await client.connect(tap, opts());
  return { client, tap, http };
}

let client;
let tap;
let http;
/** Messages the SDK delivered to our handlers. */
let logMessages = [];
const samplingRequests = [];
const elicitationRequests = [];

// ---- checks: the SDK client ------------------------------------------------------------------------------

async function sdkChecks() {
  await check('initialize', async () => {
    ({ client, tap, http } = await sdkClient('mcpcore-interop-http-client'));
    markInitialized();
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logMessages.push(n.params); });
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      samplingRequests.push(request.params);
      return SAMPLING_ANSWER;
    });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      elicitationRequests.push(request.params);
      return ELICITATION_ANSWER;
    });
    const init = tap.rawResult('initialize');
    expectEqual(init.protocolVersion, PROTOCOL_VERSION, 'protocolVersion');
    expectEqual(client.getServerVersion()?.name, SERVER_NAME, 'serverInfo.name');
    const caps = client.getServerCapabilities() ?? {};
    for (const cap of ['tools', 'resources', 'prompts', 'logging', 'completions']) {
      expect(caps[cap] !== null && typeof caps[cap] === 'object', `capability ${cap} missing: ${fmt(caps)}`);
    }
    expectEqual(caps.resources.subscribe, true, 'capabilities.resources.subscribe');
    expect(typeof http.sessionId === 'string' && http.sessionId.length > 0, `no Mcp-Session-Id: ${fmt(http.sessionId)}`);
  });

  await check('tools/list', async () => {
    const { tools } = await client.listTools({}, opts());
    expectEqual(tools.map((t) => t.name).sort(), TOOL_NAMES, 'tool names');
    for (const t of tools) {
      expect(typeof t.description === 'string' && t.description.length > 0, `${t.name} has no description`);
      expect(t.inputSchema?.type === 'object', `${t.name} inputSchema is not an object schema: ${fmt(t.inputSchema)}`);
    }
    const raw = tap.rawResult('tools/list').tools.find((t) => t.name === 'json_schema_2020_12_tool');
    expectEqual(raw?.inputSchema, JSON_SCHEMA_2020_12, 'json_schema_2020_12_tool inputSchema (verbatim)');
  });

  await check('tools/call test_simple_text', async () => {
    const result = await client.callTool({ name: 'test_simple_text', arguments: {} }, undefined, opts());
    expectEqual(result, { content: [{ type: 'text', text: 'This is a simple text response for testing.' }] }, 'result');
  });

  await check('tools/call test_error_handling is an isError result', async () => {
    const result = await client.callTool({ name: 'test_error_handling', arguments: {} }, undefined, opts());
    expectEqual(result.isError, true, 'isError');
    expectEqual(textOf(result, 'test_error_handling'), 'This tool intentionally returns an error for testing', 'text');
  });

  await check('progress: onprogress receives 0, 50, 100 of 100 before the result', async () => {
    const progress = [];
    const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
      opts({ onprogress: (p) => progress.push(p) }));
    const beforeResult = progress.length;
    expect(result.isError !== true, `isError result: ${fmt(result)}`);
    const request = tap.lastSent('tools/call', (m) => m.params?.name === 'test_tool_with_progress');
    const token = request?.params?._meta?.progressToken;
    expect(token !== undefined, 'the SDK sent no progressToken');
    const responseAt = tap.responseIndex(request.id);
    const wire = tap.received.map((r, i) => ({ i, m: r.message }))
      .filter((r) => r.m.method === 'notifications/progress' && r.m.params?.progressToken === token);
    expect(wire.every((r) => r.i < responseAt), `progress written after the result: ${fmt(wire.map((r) => r.m.params))}`);
    expectEqual(wire.map((r) => [r.m.params.progress, r.m.params.total]), [[0, 100], [50, 100], [100, 100]],
      '[progress, total] on the wire');
    expectEqual(beforeResult, 3, 'progress notifications delivered before callTool resolved');
    expectEqual(progress.map((p) => p.progress), [0, 50, 100], 'onprogress values');
    expectEqual(progress.map((p) => p.message), ['Completed step 0 of 100', 'Completed step 50 of 100',
      'Completed step 100 of 100'], 'onprogress messages');
  });

  await check('logging: setLevel debug, then three notifications/message during the call, in order', async () => {
    await client.setLoggingLevel('debug', opts());
    expectEqual(tap.rawResult('logging/setLevel'), {}, 'logging/setLevel result');
    logMessages = [];
    const result = await client.callTool({ name: 'test_tool_with_logging', arguments: {} }, undefined, opts());
    const atResult = logMessages.length;
    await sleep(LOG_GRACE_MS);
    expectEqual(textOf(result, 'test_tool_with_logging'), 'Tool with logging executed successfully', 'text');
    expectEqual(logMessages.map((m) => [m.level, m.data]), LOG_LINES.map((l) => ['info', l]), '[level, data]');
    expectEqual(atResult, 3, 'log messages delivered before callTool resolved');
    const request = tap.lastSent('tools/call', (m) => m.params?.name === 'test_tool_with_logging');
    const responseAt = tap.responseIndex(request.id);
    const late = tap.received.slice(responseAt + 1).filter((r) => r.message.method === 'notifications/message');
    expect(late.length === 0, `${late.length} log messages on the wire after the result`);
  });

  await check('logging: setLevel warning silences the info messages', async () => {
    await client.setLoggingLevel('warning', opts());
    logMessages = [];
    const result = await client.callTool({ name: 'test_tool_with_logging', arguments: {} }, undefined, opts());
    await sleep(LOG_GRACE_MS);
    expect(result.isError !== true, `isError result: ${fmt(result)}`);
    expectEqual(logMessages, [], 'log messages at level warning');
  });

  await check('sampling round trip inside a tool call', async () => {
    samplingRequests.length = 0;
    const prompt = 'What is six times seven?';
    const result = await client.callTool({ name: 'test_sampling', arguments: { prompt } }, undefined, opts());
    expectEqual(samplingRequests.length, 1, 'sampling/createMessage requests handled');
    expectEqual(samplingRequests[0].messages, [{ role: 'user', content: { type: 'text', text: prompt } }], 'params.messages');
    expectEqual(samplingRequests[0].maxTokens, 100, 'params.maxTokens');
    expectEqual(textOf(result, 'test_sampling'), 'LLM response: 42', 'text');
  });

  await check('elicitation round trip inside a tool call', async () => {
    elicitationRequests.length = 0;
    const message = 'Who are you?';
    const result = await client.callTool({ name: 'test_elicitation', arguments: { message } }, undefined, opts());
    expectEqual(elicitationRequests.length, 1, 'elicitation/create requests handled');
    expectEqual(elicitationRequests[0].message, message, 'params.message');
    expectEqual(elicitationRequests[0].requestedSchema, ELICITATION_SCHEMA, 'params.requestedSchema');
    expectEqual(textOf(result, 'test_elicitation'),
      `User response: action=accept, content=${JSON.stringify(ELICITATION_ANSWER.content)}`, 'text');
  });

  await check('resources/read through a template', async () => {
    const read = await client.readResource({ uri: 'test://template/abc%20d/data' }, opts());
    const first = read.contents?.[0];
    expectEqual(first?.mimeType, 'application/json', 'mimeType');
    expectEqual(JSON.parse(first.text), { id: 'abc d', templateTest: true, data: 'Data for ID: abc d' }, 'text');
  });
}

// ---- checks: raw HTTP ------------------------------------------------------------------------------------

async function rawChecks() {
  await check('notifications answer 202 with an empty body (raw)', async () => {
    const session = await rawSession(); // notifications/initialized: 202, empty
    const cancelled = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 424242 } },
      { session });
    expectEqual(cancelled.status, 202, 'notifications/cancelled (unknown request) status');
    expectEqual(await bodyText(cancelled), '', 'body');
    const progress = await post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, { session });
    expectEqual(progress.status, 202, 'notifications/roots/list_changed status');
    expectEqual(await bodyText(progress), '', 'body');
  }, { needsSdk: false });

  await check('a streamed call dropped after its first progress event resumes on GET with Last-Event-ID (raw)', async () => {
    const session = await rawSession();
    const id = ++rawIds;
    const token = 'resume-1';
    const controller = new AbortController();
    const response = await post({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: token } },
    }, { session, signal: controller.signal });
    expectEqual(response.status, 200, 'POST status');
    expect((response.headers.get('content-type') ?? '').startsWith('text/event-stream'),
      `a call with a progress token did not stream: Content-Type ${fmt(response.headers.get('content-type'))}`);
    const post1 = new SseReader(response);
    const priming = await post1.next();
    expect(priming !== null && priming.id !== undefined && priming.data === '',
      `the first event is not a priming event (id + empty data): ${fmt(priming)}`);
    expect(post1.retry !== undefined, 'the POST stream sent no retry: field');
    let cursor;
    for (;;) {
      const e = await post1.next();
      expect(e !== null, 'the POST stream ended before any progress event');
      expect(e.json?.id !== id, `the result arrived before any progress: ${fmt(e.json)}`);
      if (e.json?.method === 'notifications/progress') {
        expectEqual(e.json.params.progress, 0, 'first progress value');
        expect(e.id !== undefined, 'the progress event has no id');
        cursor = e.id;
        break;
      }
    }
    controller.abort(); // the client goes away mid-call; the work goes on
    await post1.cancel();
    // A second call's frames belong to its own POST stream: the resume must not carry them (MCP).
    const other = await post({
      jsonrpc: '2.0', id: ++rawIds, method: 'tools/call',
      params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'resume-other' } },
    }, { session });
    expectEqual(other.status, 200, 'second POST status');
    await new SseReader(other).rest();

    const resumed = await fetch(mcpUrl, {
      method: 'GET',
      headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': session, 'MCP-Protocol-Version': PROTOCOL_VERSION, 'Last-Event-ID': cursor },
    });
    expectEqual(resumed.status, 200, 'GET with Last-Event-ID status');
    expect((resumed.headers.get('content-type') ?? '').startsWith('text/event-stream'), 'GET is not text/event-stream');
    // Resumed while the call may still run: what it sent after the cursor, the rest live, the result last,
    // then the end of the stream (it belongs to the call), and nothing of any other stream.
    const get = new SseReader(resumed);
    const seen = [];
    try {
      for (;;) {
        const e = await get.next(READ_TIMEOUT_MS);
        if (e === null) break;
        if (e.data === '' || e.data === undefined) continue; // heartbeats and the like carry no message
        const m = e.json;
        const ours = (m?.method === 'notifications/progress' && m.params?.progressToken === token) ||
          (m?.id === id && m.method === undefined);
        expect(ours, `the resumed stream carried a message of another stream: ${fmt(m)}`);
        seen.push(e);
      }
    } finally {
      await get.cancel();
    }
    const shape = seen.map((e) => (e.json.method ? `progress ${e.json.params.progress}` : 'result'));
    expectEqual(shape, ['progress 50', 'progress 100', 'result'], 'the replayed frames of the call, in order');
    const ids = seen.map((e) => e.id);
    expect(ids.every((x) => x !== undefined && x !== cursor), `replayed frames without ids or repeating the cursor: ${fmt(ids)}`);
    expect(new Set(ids).size === ids.length, `repeated event ids: ${fmt(ids)}`);
    const numeric = [cursor, ...ids].map(Number);
    expect(numeric.every((x, k) => k === 0 || x > numeric[k - 1]), `event ids do not increase after the cursor: ${fmt(ids)}`);
    const final = seen.at(-1).json;
    expect(final.result?.content?.[0]?.type === 'text', `the replayed result is not a text result: ${fmt(final)}`);
  }, { needsSdk: false });

  await check('notifications/cancelled ends the request\'s stream promptly, without a result (raw)', async () => {
    const session = await rawSession();
    const id = ++rawIds;
    const response = await post({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'test_elicitation', arguments: { message: 'never answered' }, _meta: { progressToken: 'cancel-1' } },
    }, { session });
    expectEqual(response.status, 200, 'POST status');
    expect((response.headers.get('content-type') ?? '').startsWith('text/event-stream'), 'the call did not stream');
    const stream = new SseReader(response);
    // The tool waits for the elicitation/create answer we never give: the call is in flight.
    let asked;
    for (let e = await stream.next(); e !== null; e = await stream.next()) {
      expect(e.json?.id !== id || e.json?.method !== undefined, `a result before the cancellation: ${fmt(e.json)}`);
      if (e.json?.method === 'elicitation/create') { asked = e.json; break; }
    }
    expect(asked !== undefined, 'the POST stream ended without the elicitation/create request');
    const cancelledAt = performance.now();
    const cancel = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'interop' } },
      { session });
    expectEqual(cancel.status, 202, 'notifications/cancelled status');
    const after = await stream.rest(CANCEL_END_WITHIN_MS);
    const endedAfter = performance.now() - cancelledAt;
    expect(endedAfter < CANCEL_END_WITHIN_MS, `the stream ended ${Math.round(endedAfter)} ms after the cancellation`);
    const answers = after.filter((e) => e.json?.id === id && e.json?.method === undefined);
    expectEqual(answers.map((e) => e.json), [], 'responses to the cancelled request');
    // The session is still alive and answers.
    const [pong] = await messagesOf(await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session }));
    expectEqual(pong?.result, {}, 'ping after the cancellation');
  }, { needsSdk: false });

  await check('404 for an unknown session; DELETE answers 200, then the session is 404 (raw)', async () => {
    const unknown = await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session: 'no-such-session-0123456789abcdef' });
    expectEqual(unknown.status, 404, 'POST with an unknown Mcp-Session-Id');
    await bodyText(unknown);
    const session = await rawSession();
    const [pong] = await messagesOf(await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session }));
    expectEqual(pong?.result, {}, 'ping before DELETE');
    const del = await fetch(mcpUrl, { method: 'DELETE', headers: { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': PROTOCOL_VERSION } });
    expectEqual(del.status, 200, 'DELETE status');
    await bodyText(del);
    const gone = await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session });
    expectEqual(gone.status, 404, 'POST after DELETE');
    await bodyText(gone);
    const note = await post({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, { session });
    expectEqual(note.status, 404, 'a notification after DELETE (never 202)');
    await bodyText(note);
    const getGone = await fetch(mcpUrl, { method: 'GET', headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': session, 'MCP-Protocol-Version': PROTOCOL_VERSION } });
    expectEqual(getGone.status, 404, 'GET after DELETE');
    await bodyText(getGone);
    const again = await fetch(mcpUrl, { method: 'DELETE', headers: { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': PROTOCOL_VERSION } });
    expectEqual(again.status, 404, 'DELETE after DELETE');
    await bodyText(again);
  }, { needsSdk: false });

  await check('a bearer token that is not in the token file is 401 with WWW-Authenticate: Bearer (raw)', async () => {
    const response = await post({
      jsonrpc: '2.0', id: ++rawIds, method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'intruder', version: '1' } },
    }, { token: newToken(), protocol: false });
    expectEqual(response.status, 401, 'status');
    expect(/^Bearer\b/i.test(response.headers.get('www-authenticate') ?? ''),
      `WWW-Authenticate: ${fmt(response.headers.get('www-authenticate'))}`);
    await bodyText(response);
  }, { needsSdk: false });
}

// ---- checks: approval -------------------------------------------------------------------------------------

async function approvalChecks() {
  let agent;
  await check('approval: mint -32006, approve over HTTP as a human approver, recall once, replay refused', async () => {
    agent = await sdkClient('mcpcore-interop-agent', { token: agentToken });
    const args = { name: 'todo' };
    const minted = await expectMcpError(agent.client.callTool({ name: 'delete_note', arguments: args }, undefined, opts()),
      APPROVAL_REQUIRED);
    const ticket = minted.data?.approval_id;
    expect(typeof ticket === 'string' && APPROVAL_ID.test(ticket), `approval_id ${fmt(ticket)}`);
    const statusUrl = minted.data?.status_url;
    expectEqual(statusUrl, `/api/v1/approvals/${ticket}`, 'status_url');

    const auth = (token) => ({ Authorization: `Bearer ${token}` });
    const status = await fetch(`${baseUrl}${statusUrl}`, { headers: auth(agentToken) });
    expectEqual(status.status, 200, 'the submitter reads its ticket');
    expectEqual(JSON.parse(await bodyText(status)).status, 'pending', 'ticket status before review');

    const early = await expectMcpError(
      agent.client.callTool({ name: 'delete_note', arguments: { ...args, approval_id: ticket } }, undefined, opts()),
      APPROVAL_REQUIRED);
    expectEqual(early.data?.approval_id, ticket, 'a recall while pending answers the same ticket');

    const bySubmitter = await fetch(`${baseUrl}${statusUrl}/approve`, { method: 'POST', headers: auth(agentToken) });
    expectEqual(bySubmitter.status, 403, 'the agent (not an approver) approving');
    await bodyText(bySubmitter);
    const anonymous = await fetch(`${baseUrl}${statusUrl}/approve`, { method: 'POST' });
    expectEqual(anonymous.status, 403, 'the anonymous principal (not an approver) approving');
    await bodyText(anonymous);

    const approve = await fetch(`${baseUrl}${statusUrl}/approve`, {
      method: 'POST', headers: { ...auth(approverToken), 'Content-Type': 'application/json' }, body: '{}',
    });
    const approvedText = await bodyText(approve);
    expectEqual(approve.status, 200, `approve status (body ${approvedText})`);
    const approved = JSON.parse(approvedText);
    expectEqual([approved.approval_id, approved.status, approved.reviewed_by, approved.submitted_by, approved.consumed],
      [ticket, 'approved', APPROVER.id, AGENT.id, false], '[approval_id, status, reviewed_by, submitted_by, consumed]');

    const recall = await agent.client.callTool({ name: 'delete_note', arguments: { approval_id: ticket, ...args } },
      undefined, opts());
    expectEqual(recall, { content: [{ type: 'text', text: 'deleted note todo' }] }, 'the recall with approval_id');

    const replay = await expectMcpError(
      agent.client.callTool({ name: 'delete_note', arguments: { ...args, approval_id: ticket } }, undefined, opts()),
      FORBIDDEN);
    expectEqual(serverMessage(replay), 'approval already used (one-time ticket)', 'the replay\'s message');
    const after = await fetch(`${baseUrl}${statusUrl}`, { headers: auth(approverToken) });
    expectEqual(after.status, 200, 'the approver reads the ticket');
    expectEqual(JSON.parse(await bodyText(after)).consumed, true, 'consumed after the recall');
  }, { needsSdk: false });
  if (agent) {
    try { await agent.http.terminateSession(); } catch { /* reported by the checks above if it matters */ }
    await agent.client.close();
  }
}

// ---- run --------------------------------------------------------------------------------------------------

let port;
try {
  port = await startServer();
} catch (error) {
  process.stdout.write(`not ok - start the server: ${describe(error)}\n# 0 passed, 1 failed\n`);
  cleanup();
  process.exit(1);
}
baseUrl = `http://127.0.0.1:${port}`;
mcpUrl = `${baseUrl}/mcp`;
process.stdout.write(`# server pid ${server.pid} on ${mcpUrl}\n`);

await sdkChecks();
await rawChecks();
await approvalChecks();

await check('DELETE of the SDK client\'s session (terminateSession) answers 200', async () => {
  const session = http.sessionId;
  await http.terminateSession();
  expectEqual(http.sessionId, undefined, 'the SDK cleared its session id (it does so only on 200/405)');
  const gone = await post({ jsonrpc: '2.0', id: ++rawIds, method: 'ping' }, { session });
  expectEqual(gone.status, 404, 'the terminated session afterwards');
  await bodyText(gone);
});
if (client) await client.close();

await check('the server exits 0 on SIGTERM', async () => {
  const exit = await stopServer();
  expect(!exit.killed, `the server did not exit within ${SERVER_EXIT_WAIT_MS} ms of SIGTERM (killed)`);
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
}, { needsSdk: false });

const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
