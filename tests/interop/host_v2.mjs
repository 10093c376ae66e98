// SPDX-License-Identifier: Apache-2.0
// The example host server (examples/host_server, docs/host-server.md) in the per-request era (MCP 2026-07-28,
// docs/eras.md), driven by the official MCP TypeScript client v2 (`@modelcontextprotocol/client`, pinned in
// package.json), over Streamable HTTP with a bearer token and over stdio.
//
// Usage: node host_v2.mjs <path-to-mcpcore-host> [<allow-list file>]
//
// In a fresh data directory: starts mcpcore-host on an ephemeral 127.0.0.1 port (first run: it creates the
// token file and prints an operator token once, which the checks use as the bearer token). Then, with the v2
// client pinned to 2026-07-28 and again in 'auto' negotiation, each with its own client whose fetch carries
// `Authorization: Bearer <token>` and records every exchange: connect (the modern era, 2026-07-28), tools/list
// (the read-only tools, each annotated read-only with an object outputSchema), tools/call get_system_summary
// (the documented structured shape, checked against /proc), resources/read host://server/health, prompts/get
// host_health_briefing, execute_instruction with a progress token (an allow-listed command's output lines as
// progress, then the final result; skipped, with the reason printed, when no allow-list was given), and a
// client without a token or with an unknown one (401). A raw enveloped request without a token is 401 with
// `WWW-Authenticate: Bearer`. Then the server is stopped (SIGTERM, exit 0) and the v2 client, pinned and then
// negotiating, spawns `mcpcore-host --stdio` on the same data directory (no token on stdio: the caller is the local user at
// --stdio-tier, operator by default): connect, tools/list, tools/call get_system_summary.
//
// Prints one line per check, "ok - <name>" or "not ok - <name>: <why>" (a skipped check: "ok - <name> # SKIP
// <reason>"), then "# N passed, M failed" and a final "PASS" or "FAIL". The server (and any stdio child) is
// always killed at the end, and the whole run is bounded by a global timeout.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import {
  checkArguments, createChecks, ENVELOPE_CAPABILITIES, ENVELOPE_VERSION, expect, expectEqual, fmt, guardRun,
  killRunning, MODERN_VERSION, postModern, posts, printedOperatorToken, recordingFetch, scratchRun, startHost,
  stopServerProcess, textOf, wireResponse,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 240 s). */
const GLOBAL_TIMEOUT_MS = 180_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every client request and to connect. */
const REQUEST_TIMEOUT_MS = 20_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 40_000;
/** After SIGTERM the server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 10_000;

// ---- expected server surface (examples/host_server, docs/host-server.md) ---------------------------------

const SERVER_NAME = 'mcpcore-host';
/** The read-only tools always offered (get_recent_logs is offered only when a log source exists). */
const READ_ONLY_TOOLS = [
  'get_execution_status', 'get_memory', 'get_system_summary', 'get_tags', 'list_filesystems', 'list_listening_sockets',
  'list_network_interfaces', 'list_top_processes',
];
/** The tools that change something: listed, never annotated read-only. */
const WRITE_TOOLS = ['delete_tag', 'set_tag'];
const HEALTH_URI = 'host://server/health';
const PROMPT = 'host_health_briefing';
/** The allow-listed command of the progress check (allowlist.example.json: `ls -la -- <path>`). */
const COMMAND = { command: 'list_directory', args: ['/'] };

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary, allowlist, ...extra] = process.argv.slice(2);
checkArguments('host_v2.mjs', {
  ok: hostBinary && !hostBinary.startsWith('-') && extra.length === 0,
  usage: 'usage: node host_v2.mjs <mcpcore-host> [<allow-list>]',
  files: [hostBinary, allowlist],
});

let server;
/** The `--stdio` children the stdio transport spawned (the session child), killed at the end if still up. */
const stdioChildren = [];
const { work, portFile, cleanup: cleanupRun } = scratchRun('mcpcore-host-v2-', () => server);
const dataDir = join(work, 'data');
const cleanup = () => {
  killRunning(stdioChildren);
  cleanupRun();
};
const globalTimer = guardRun(cleanup, GLOBAL_TIMEOUT_MS);
const { check, checkWith, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

const opts = (more = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...more });
const negotiation = (mode) => (mode === 'pin' ? { mode: { pin: MODERN_VERSION } } : { mode: 'auto' });
const bearer = (token) => ({ Authorization: `Bearer ${token}` });

/** A v2 client in `mode`, not yet connected. */
function newClient(mode, what) {
  const client = new Client({ name: `mcpcore-host-v2-${what}`, version: '1.0.0' },
    { capabilities: {}, versionNegotiation: negotiation(mode) });
  client.onerror = () => { /* stream ends are reported here; the checks look at results */ };
  return client;
}

/** A v2 client in `mode` connected over HTTP with `token` as its bearer token: `{client, log}`; `log` records
 * every exchange (check.mjs recordingFetch). */
async function connectHttp(mode, url, token) {
  const log = [];
  const client = newClient(mode, mode);
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { fetch: recordingFetch(log), requestInit: { headers: bearer(token) } }), opts());
  return { client, log };
}

/** The last recorded POST of `method` whose body matches `predicate`; fails when there is none. */
function lastPost(log, method, predicate = () => true) {
  const [post] = posts(log, method, predicate).slice(-1);
  expect(post, `no ${method} POST was recorded`);
  return post;
}

/** A /proc file's text, trimmed. */
const procText = (path) => readFileSync(path, 'utf8').trim();

// ---- shared checks (both transports) ---------------------------------------------------------------------

/** tools/list: every read-only tool listed, annotated read-only, with an object outputSchema; the write tools
 * listed and not annotated read-only. Returns the tools. */
async function checkToolsList(client) {
  const { tools } = await client.listTools(undefined, opts({ cacheMode: 'refresh' }));
  const byName = new Map(tools.map((t) => [t.name, t]));
  expectEqual([...READ_ONLY_TOOLS, ...WRITE_TOOLS].filter((n) => !byName.has(n)), [], 'tools missing from tools/list');
  for (const t of tools.filter((x) => x.annotations?.readOnlyHint === true || READ_ONLY_TOOLS.includes(x.name))) {
    expect(t.annotations?.readOnlyHint === true, `${t.name} is not annotated read-only: ${fmt(t.annotations)}`);
    expect(t.outputSchema?.type === 'object', `${t.name} has no object outputSchema: ${fmt(t.outputSchema)}`);
  }
  for (const n of WRITE_TOOLS) {
    expect(byName.get(n).annotations?.readOnlyHint !== true, `${n} is annotated read-only`);
  }
  return tools;
}

/** A JSON type name of `v` as JSON Schema spells it ('integer' for whole numbers). */
function jsonType(v) {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** Fails unless every member of `shape` ({name: type}) is in `object` with that JSON type ('number' also takes
 * integers) and `object` has no other member; `what` names the object. */
function expectShape(object, shape, what) {
  expect(jsonType(object) === 'object', `${what} is not an object: ${fmt(object)}`);
  expectEqual(Object.keys(object).sort(), Object.keys(shape).sort(), `${what}: members`);
  for (const [key, type] of Object.entries(shape)) {
    const t = jsonType(object[key]);
    expect(t === type || (type === 'number' && t === 'integer'), `${what}.${key}: expected ${type}, got ${fmt(object[key])}`);
  }
}

/** get_system_summary: the documented structured shape (host_state.hpp system_summary_schema), the same JSON as
 * text, values that agree with /proc. Returns the result. */
async function checkSystemSummary(client, tools) {
  const result = await client.callTool({ name: 'get_system_summary', arguments: {} }, opts());
  expect(result.isError !== true, `isError result: ${fmt(result)}`);
  expect(!('resultType' in result), `resultType reached the caller: ${fmt(result)}`);
  const s = result.structuredContent;
  expectShape(s, {
    hostname: 'string', os: 'string', os_id: 'string', kernel: 'string', kernel_version: 'string',
    architecture: 'string', uptime_seconds: 'number', load_average: 'object', cpu_count: 'integer', processes: 'object',
  }, 'structuredContent');
  expectShape(s.load_average, { one: 'number', five: 'number', fifteen: 'number' }, 'structuredContent.load_average');
  expectShape(s.processes, { running: 'integer', total: 'integer' }, 'structuredContent.processes');
  const schema = tools.find((t) => t.name === 'get_system_summary')?.outputSchema;
  expectEqual(Object.keys(s).sort(), [...(schema?.required ?? [])].sort(), 'members vs the listed outputSchema\'s required');
  expectEqual(JSON.parse(textOf(result, 'get_system_summary')), s, 'the text content (parsed) vs structuredContent');
  expectEqual(s.hostname, procText('/proc/sys/kernel/hostname'), 'hostname vs /proc/sys/kernel/hostname');
  expectEqual(s.hostname, hostname(), 'hostname vs os.hostname()');
  expectEqual(s.kernel, procText('/proc/sys/kernel/osrelease'), 'kernel vs /proc/sys/kernel/osrelease');
  const uptime = Number.parseFloat(procText('/proc/uptime').split(' ')[0]);
  expect(Math.abs(s.uptime_seconds - uptime) < 30, `uptime_seconds ${s.uptime_seconds} vs /proc/uptime ${uptime}`);
  expect(s.cpu_count >= 1 && s.processes.total >= 1, `cpu_count ${s.cpu_count}, processes ${fmt(s.processes)}`);
  return result;
}

// ---- over HTTP, one negotiation mode ---------------------------------------------------------------------

let url;
let operatorToken;

async function httpChecks(mode) {
  let v2;
  const c = checkWith(() => v2, 'connect');
  const name = (what) => `http ${mode}: ${what}`;
  let tools;

  await check(name('connect with the bearer token: negotiated 2026-07-28, modern era, mcpcore-host'), async () => {
    v2 = await connectHttp(mode, url, operatorToken);
    const { client, log } = v2;
    expectEqual(client.getProtocolEra(), 'modern', 'getProtocolEra()');
    expectEqual(client.getNegotiatedProtocolVersion(), MODERN_VERSION, 'getNegotiatedProtocolVersion()');
    expectEqual(client.getServerVersion()?.name, SERVER_NAME, 'getServerVersion().name');
    const discover = client.getDiscoverResult();
    expect(discover?.supportedVersions?.includes(MODERN_VERSION), `discover supportedVersions: ${fmt(discover)}`);
    for (const cap of ['tools', 'resources', 'prompts']) {
      expect(typeof discover?.capabilities?.[cap] === 'object', `discover capabilities.${cap}: ${fmt(discover?.capabilities)}`);
    }
    expectEqual(log.map((e) => `${e.method} ${e.body?.method} ${e.status}`), ['POST server/discover 200'], 'the exchanges of connect');
    expectEqual(log[0].headers.authorization, `Bearer ${operatorToken}`, 'the probe\'s Authorization header');
  }, { needsSdk: false });

  await c(name('tools/list: the read-only tools, annotated read-only with an object outputSchema; a stamped result'), async () => {
    tools = await checkToolsList(v2.client);
    const post = lastPost(v2.log, 'tools/list');
    expectEqual(post.body.params?._meta?.[ENVELOPE_VERSION], MODERN_VERSION, 'the request envelope\'s protocolVersion');
    const wire = await wireResponse(post);
    expectEqual(wire.result?.resultType, 'complete', 'resultType on the wire');
    expectEqual(wire.result?._meta?.['io.modelcontextprotocol/serverInfo']?.name, SERVER_NAME, '_meta serverInfo on the wire');
  });

  await c(name('tools/call get_system_summary: the documented structured result'), async () => {
    await checkSystemSummary(v2.client, tools ?? []);
    const post = lastPost(v2.log, 'tools/call', (b) => b.params?.name === 'get_system_summary');
    expectEqual([post.headers['mcp-method'], post.headers['mcp-name']], ['tools/call', 'get_system_summary'],
      '[Mcp-Method, Mcp-Name] headers');
    const wire = await wireResponse(post);
    expectEqual([post.status, wire.result?.resultType], [200, 'complete'], '[HTTP status, resultType on the wire]');
  });

  await c(name(`resources/read ${HEALTH_URI}: the health document`), async () => {
    const result = await v2.client.readResource({ uri: HEALTH_URI }, opts({ cacheMode: 'refresh' }));
    expectEqual(result.contents?.map((x) => [x.uri, x.mimeType]), [[HEALTH_URI, 'application/json']], '[uri, mimeType] of contents');
    const health = JSON.parse(result.contents[0].text);
    expectShape(health, {
      server: 'string', version: 'string', transport: 'string', uptime_seconds: 'integer', running_commands: 'integer',
      pending_approvals: 'integer', approval_store: 'string',
    }, 'the health document');
    expectEqual([health.server, health.transport, health.approval_store], [SERVER_NAME, 'streamable-http', 'ok'],
      '[server, transport, approval_store]');
    const post = lastPost(v2.log, 'resources/read');
    expectEqual(post.headers['mcp-name'], HEALTH_URI, 'Mcp-Name header');
    expectEqual((await wireResponse(post)).result?.resultType, 'complete', 'resultType on the wire');
  });

  await c(name(`prompts/get ${PROMPT} (focus memory)`), async () => {
    const result = await v2.client.getPrompt({ name: PROMPT, arguments: { focus: 'memory' } }, opts());
    expectEqual(result.description, 'Host health briefing', 'description');
    expectEqual(result.messages?.map((m) => [m.role, m.content?.type]), [['user', 'text']], '[role, content type] of messages');
    const text = result.messages[0].content.text;
    expect(text.startsWith('Write a short health briefing of this host') && text.endsWith('\nfocus: memory'),
      `the prompt text: ${fmt(text)}`);
    const post = lastPost(v2.log, 'prompts/get');
    expectEqual(post.headers['mcp-name'], PROMPT, 'Mcp-Name header');
  });

  const progressName = name(`execute_instruction ${COMMAND.command} ${COMMAND.args.join(' ')} with a progress token: `
    + 'the output lines as progress, then the final result');
  if (!allowlist) {
    process.stdout.write(`ok - ${progressName} # SKIP no allow-list given: mcpcore-host has no default allow-list, `
      + 'so execute_instruction (the one tool that streams) is not offered\n');
  } else {
    await c(progressName, async () => {
      const progress = [];
      const result = await v2.client.callTool({ name: 'execute_instruction', arguments: COMMAND },
        opts({ onprogress: (p) => progress.push(p) }));
      const post = lastPost(v2.log, 'tools/call', (b) => b.params?.name === 'execute_instruction');
      const token = post.body.params?._meta?.progressToken;
      expect(token !== undefined, 'the client sent no progressToken');
      const wire = await post.messages();
      const order = wire.map((m) => (m.method === 'notifications/progress' ? 'progress' : m.method ?? 'response'));
      expect(order.length >= 3 && order.at(-1) === 'response' && order.slice(0, -1).every((k) => k === 'progress'),
        `messages on the answer (progress..., response): ${fmt(order)} (Content-Type ${fmt(post.contentType)})`);
      expect(post.contentType.startsWith('text/event-stream'), `not answered over SSE: ${fmt(post.contentType)}`);
      const notes = wire.filter((m) => m.method === 'notifications/progress').map((m) => m.params);
      expect(notes.every((p) => p.progressToken === token), `progress with another token: ${fmt(notes)}`);
      const executionId = notes[0]._meta?.['mcpcore/executionId'];
      expect(/^[0-9a-f]{32}$/.test(executionId ?? ''), `the first progress carries no execution id: ${fmt(notes[0])}`);
      for (let i = 1; i < notes.length; ++i) {
        expect(notes[i].progress > notes[i - 1].progress, `progress not increasing: ${fmt(notes)}`);
      }
      expect(notes.some((p) => /\betc\b/.test(p.message ?? '')), `no progress message carries an output line: ${fmt(notes)}`);
      expect(progress.length >= 2, `progress delivered to onprogress: ${fmt(progress)}`);
      // The final is the command's complete result (docs/host-server.md#execute_instruction): its state in
      // structuredContent and in the text, the execution id in _meta, nothing of the provisional "running".
      const final = wire.at(-1).result;
      const sc = final?.structuredContent;
      expectEqual([final?.resultType, final?._meta?.['mcpcore/executionId'], sc?.execution_id, sc?.status, sc?.exit_code],
        ['complete', executionId, executionId, 'succeeded', 0],
        '[resultType, _meta execution id, execution_id, status, exit_code] of the final on the wire');
      expect(/\bbin\b/.test(sc?.output ?? '') && /\betc\b/.test(sc?.output ?? ''), `the final's output: ${fmt(sc?.output)}`);
      expect(final?.content?.[0]?.text?.startsWith('succeeded (exit 0)\n'), `the final's text: ${fmt(final?.content)}`);
      expect(final?.status === undefined, `a top-level status on the final: ${fmt(final?.status)}`);
      expect(result.isError !== true, `isError result: ${fmt(result)}`);
      expectEqual([result.structuredContent?.execution_id, result.structuredContent?.status], [executionId, 'succeeded'],
        '[execution_id, status] of the caller\'s result');
    });
  }

  await check(name('no token, then an unknown token: connect fails with 401 (CLIENT_HTTP_AUTHENTICATION)'), async () => {
    for (const headers of [{}, bearer('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')]) {
      const log = [];
      const client = newClient(mode, `${mode}-unauthenticated`);
      let error;
      try {
        await client.connect(new StreamableHTTPClientTransport(new URL(url),
          { fetch: recordingFetch(log), requestInit: { headers } }), opts());
      } catch (e) {
        error = e;
      }
      await client.close().catch(() => {});
      const which = headers.Authorization ? 'an unknown token' : 'no token';
      expect(error, `connect with ${which} succeeded`);
      expectEqual(error.code, 'CLIENT_HTTP_AUTHENTICATION', `the error of connect with ${which} (${error.message})`);
      expectEqual(log.map((e) => `${e.method} ${e.body?.method} ${e.status}`), ['POST server/discover 401'],
        `the exchanges of connect with ${which}`);
    }
  }, { needsSdk: false });

  if (v2) await v2.client.close().catch(() => {});
}

// ---- the run --------------------------------------------------------------------------------------------

await check('first run: mcpcore-host starts in a fresh data directory and prints an operator token once', async () => {
  ({ child: server, url } = await startHost(hostBinary, { dataDir, portFile, allowlist, waitMs: PORT_FILE_WAIT_MS }));
  const { token, printed } = await printedOperatorToken(server);
  operatorToken = token;
  expect(printed.includes(`listening on ${url}`), `the URL is not printed: ${fmt(printed)}`);
  process.stdout.write(`# server pid ${server.pid} on ${url}; allow-list ${allowlist ?? '(none)'}\n`);
}, { needsSdk: false });

if (operatorToken) {
  for (const mode of ['pin', 'auto']) await httpChecks(mode);

  await check('raw: an enveloped tools/list without a token is 401 with WWW-Authenticate: Bearer', async () => {
    const response = await postModern(url, { jsonrpc: '2.0', id: 1, method: 'tools/list',
      params: { _meta: { [ENVELOPE_VERSION]: MODERN_VERSION, [ENVELOPE_CAPABILITIES]: {} } } },
    { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await response.text();
    expectEqual(response.status, 401, 'HTTP status');
    expect(/^Bearer\b/i.test(response.headers.get('www-authenticate') ?? ''),
      `WWW-Authenticate: ${fmt(response.headers.get('www-authenticate'))}`);
  }, { needsSdk: false });
}

await check('the server exits 0 on SIGTERM', async () => {
  expect(server, 'the server did not start');
  const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
  expect(!exit.killed, `the server did not exit within ${SERVER_EXIT_WAIT_MS} ms of SIGTERM (killed)`);
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
}, { needsSdk: false });

// ---- over stdio, pinned and negotiating --------------------------------------------------------------------

for (const mode of ['pin', 'auto']) {
  let v2;
  const c = checkWith(() => v2, 'connect');
  const args = ['--stdio', '--data-dir', dataDir, '--no-journal', ...(allowlist ? ['--allowlist', allowlist] : [])];
  let tools;

  await check(`stdio ${mode}: connect to \`mcpcore-host --stdio\` (no token: the local user): negotiated 2026-07-28`, async () => {
    const transport = new StdioClientTransport({ command: hostBinary, args });
    const client = newClient(mode, 'stdio');
    try {
      await client.connect(transport, opts());
    } finally {
      if (transport._process) stdioChildren.push(transport._process);  // the session child, killed at the end
    }
    v2 = { client };
    expectEqual(client.getProtocolEra(), 'modern', 'getProtocolEra()');
    expectEqual(client.getNegotiatedProtocolVersion(), MODERN_VERSION, 'getNegotiatedProtocolVersion()');
    expectEqual(client.getServerVersion()?.name, SERVER_NAME, 'getServerVersion().name');
  }, { needsSdk: false });

  await c(`stdio ${mode}: tools/list: the read-only tools, annotated read-only with an object outputSchema`, async () => {
    tools = await checkToolsList(v2.client);
  });

  await c(`stdio ${mode}: tools/call get_system_summary: the documented structured result`, async () => {
    await checkSystemSummary(v2.client, tools ?? []);
  });

  if (v2) await v2.client.close().catch(() => {});
}

const status = summary();
process.stdout.write(status === 0 ? 'PASS\n' : 'FAIL\n');
clearTimeout(globalTimer);
cleanup();
process.exit(status);
