// SPDX-License-Identifier: Apache-2.0
// Interop checks of MCP tasks in the handshake era (2025-11-25, docs/tasks.md): the official TypeScript
// SDK 1.x client's task API (`client.experimental.tasks`, @modelcontextprotocol/sdk 1.32.2) against the
// mcpcore conformance fixture's task tools (examples/conformance_server: slow_compute, failing_job,
// protocol_error_job, confirm_delete (an elicitation inside the task), greet), over Streamable HTTP or
// over stdio.
//
// Usage: node tasks_client.mjs <path-to-mcpcore-conformance-server> [--transport http|stdio]
//
// --transport http (the default): writes a token file with two fresh tokens (two principals, `alice` and
// `bob`; SHA-256 digests only), starts the fixture on an ephemeral 127.0.0.1 port with it, and connects
// SDK clients with those tokens. Besides the checks of both transports it checks that bob sees alice's
// task ids exactly like unknown ones, and that alice fetches a task's result from a new session after
// her first one dropped its connection in the middle (no DELETE).
// --transport stdio: the SDK client spawns `<server> --stdio` (one client, the anonymous principal). The
// two HTTP-only checks are not run there: stdio has a single principal, and the server process ends
// with the pipe, so nothing can be fetched after a disconnect.
//
// Prints one line per check, "ok - <name>" or "not ok - <name>: <why>", then "# N passed, M failed"; the
// server is always killed by its PID at the end. Exit status: 0 when every check passed, 1 otherwise (also
// after the global timeout), 2 on bad usage.

import { createHash, randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  CheckFailure, createChecks, expect, expectEqual, fail, fmt, scratchRun, serverMessage, startGlobalTimer,
  startServerProcess, stopServerProcess, TapTransport, textOf, withTimeout, pollTask, TASK_TERMINAL, waitFor,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is larger). */
const GLOBAL_TIMEOUT_MS = 100_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every SDK request (the SDK default is 60 s, too long for a test). */
const REQUEST_TIMEOUT_MS = 15_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 30_000;
/** How long a check polls tasks/get for a task to reach a status. */
const POLL_FOR_MS = 10_000;
/** The longest pause between two tasks/get of a poll, whatever pollInterval the server asks for. */
const MAX_POLL_PAUSE_MS = 1_000;
/** How long a status notification may lag behind the status tasks/get shows. */
const NOTIFICATION_WAIT_MS = 3_000;
/** How long the checks keep watching for progress a finished task must no longer send. */
const QUIET_WAIT_MS = 300;
/** After SIGTERM the HTTP server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 8_000;
/** Over stdio the server must exit this long after its input ended (the SDK's close() sends SIGTERM
 * after 2 s, so a later exit is one the signal forced). */
const EXIT_ON_EOF_WITHIN_MS = 2_000;
/** How long the last stdio check waits for the child's exit status after close(). */
const EXIT_WAIT_MS = 6_000;

// ---- expected server surface (examples/conformance_server, docs/tasks.md) --------------------------------

const PROTOCOL_VERSION = '2025-11-25';
/** The server's `capabilities.tasks` when tasks are on (docs/tasks.md). */
const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
/** execution.taskSupport of the fixture's tools; a tool not named here must declare none, or forbidden. */
const TASK_SUPPORT = { slow_compute: 'optional', failing_job: 'required', test_tool_with_task: 'required' };
/** The tools of the fixture that must support tasks in some way (their taskSupport is optional or required). */
const TASK_TOOLS = ['slow_compute', 'failing_job', 'protocol_error_job', 'confirm_delete', 'multi_input', 'test_tool_with_task'];
/** The ttl every task below asks for. */
const TTL_MS = 60_000;
/** A task id: 32 lowercase hexadecimal characters (docs/tasks.md). */
const TASK_ID = /^[0-9a-f]{32}$/;
/** An ISO 8601 UTC timestamp. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
/** Creating tasks for the pagination check stops here if no second page appeared. */
const PAGINATION_MAX_TASKS = 250;
const TERMINAL = TASK_TERMINAL;
/** slow_compute's answer after `seconds` of work on `label` (examples/conformance_server/task_fixtures.hpp). */
const computed = (label, seconds) => `${label}: computed for ${seconds * 1000} ms`;
const FAILING_JOB_TEXT = 'the job failed, as it always does';
/** What a task whose handler threw keeps as its outcome (docs/tasks.md#outcomes). */
const HANDLER_THREW = { code: -32603, message: 'The tool failed unexpectedly' };

// ---- arguments ------------------------------------------------------------------------------------------

const USAGE = 'usage: node tasks_client.mjs <path-to-mcpcore-conformance-server> [--transport http|stdio]\n';
const [serverBinary, ...rest] = process.argv.slice(2);
let transportKind = 'http';
let badUsage = !serverBinary || serverBinary.startsWith('--');
if (rest.length === 2 && rest[0] === '--transport' && ['http', 'stdio'].includes(rest[1])) transportKind = rest[1];
else if (rest.length !== 0) badUsage = true;
if (badUsage) {
  process.stderr.write(USAGE);
  process.exit(2);
}
if (!existsSync(serverBinary)) {
  process.stderr.write(`tasks_client: no such file: ${serverBinary}\n`);
  process.exit(2);
}
const overHttp = transportKind === 'http';

// ---- check plumbing (check.mjs) -------------------------------------------------------------------------

const { check, describe, expectMcpError, markInitialized, summary } =
  createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

/** The server process: over HTTP the fixture this script starts, over stdio the SDK transport's child. */
let server;
const { work, portFile, cleanup } = scratchRun('mcpcore-tasks-interop-', () => server, { signals: true });
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);

// ---- principals (HTTP): two tokens in a token file ------------------------------------------------------

const newToken = () => randomBytes(32).toString('base64url');
const digest = (token) => createHash('sha256').update(token).digest('hex');
const tokens = { alice: newToken(), bob: newToken() };

let mcpUrl;
if (overHttp) {
  const tokenFile = join(work, 'tokens');
  writeFileSync(tokenFile, [
    '# Generated by tests/interop/tasks_client.mjs for one run; digests only.',
    `sha256:${digest(tokens.alice)}  tasks-alice  -  service`,
    `sha256:${digest(tokens.bob)}  tasks-bob  -  service`,
    '',
  ].join('\n'), { mode: 0o600 });
  try {
    const started = await startServerProcess(serverBinary, ['--port', '0', '--port-file', portFile, '--token-file', tokenFile],
                                             portFile, { waitMs: PORT_FILE_WAIT_MS });
    server = started.child;
    mcpUrl = `http://127.0.0.1:${started.port}/mcp`;
  } catch (error) {
    process.stdout.write(`not ok - start the server: ${describe(error)}\n# 0 passed, 1 failed\n`);
    cleanup();
    process.exit(1);
  }
  process.stdout.write(`# over Streamable HTTP: server pid ${server.pid} on ${mcpUrl}\n`);
} else {
  process.stdout.write(`# over stdio: ${serverBinary} --stdio\n`);
}

// ---- SDK clients ----------------------------------------------------------------------------------------

/** The shared tap (check.mjs); over HTTP it passes the session id and the negotiated version through. */
class Tap extends TapTransport {
  get sessionId() { return this.inner.sessionId; }
  setProtocolVersion(version) { this.inner.setProtocolVersion?.(version); }
  /** Progress notifications received for `token`, in wire order, with their index in `received`. */
  progressFor(token) {
    const out = [];
    this.received.forEach((r, i) => {
      if (r.message.method === 'notifications/progress' && r.message.params?.progressToken === token) out.push({ i, ...r });
    });
    return out;
  }
  /** Status notifications received for `taskId`, in wire order, with their index in `received`. */
  statusFor(taskId) {
    const out = [];
    this.received.forEach((r, i) => {
      if (r.message.method === 'notifications/tasks/status' && r.message.params?.taskId === taskId) out.push({ i, ...r });
    });
    return out;
  }
}

const opts = (extra = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...extra });

/**
 * A connected SDK 1.x client (MCP 2025-11-25): over HTTP with `principal`'s token, over stdio on a new
 * `--stdio` child. Returns `{client, tap, statuses, methods}`: the status notifications its handler
 * received (parsed by the SDK's TaskStatusNotificationSchema), and over HTTP the HTTP methods it sent.
 */
async function connect(name, principal) {
  const methods = [];
  let inner;
  if (overHttp) {
    inner = new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${tokens[principal]}` } },
      fetch: (url, init) => {
        methods.push(init?.method ?? 'GET');
        return fetch(url, init);
      },
    });
  } else {
    inner = new StdioClientTransport({ command: serverBinary, args: ['--stdio'] });
  }
  const tap = new Tap(inner);
  // Declares elicitation: a task that asks for input inside it sends its request to this client.
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.onerror = () => { /* stream ends are reported here; the checks look at what arrived */ };
  const statuses = [];
  // The SDK registers no handler for notifications/tasks/status: without this one it drops them.
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => { statuses.push(n.params); });
  // The elicitations the server sends (their params); each is accepted, confirming.
  const elicitations = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    elicitations.push(request.params);
    return { action: 'accept', content: { confirm: true, name: 'interop' } };
  });
  await client.connect(tap, opts());
  if (!overHttp) {
    const child = inner._process;
    expect(child !== undefined, 'no server child after connect');
    child.once('exit', (code, signal) => { child.exitInfo = { code, signal, at: performance.now() }; });
    server = child;
  }
  return { client, tap, statuses, methods, elicitations };
}

/**
 * tools/call of `tool` with `args` as a task (params.task.ttl = `ttl`); resolves with the parsed
 * CreateTaskResult's task and the request's id (the progress token when `onprogress` is given).
 */
async function createTask(peer, tool, args, { ttl = TTL_MS, onprogress } = {}) {
  const marker = randomBytes(8).toString('hex');
  const created = await peer.client.request(
    { method: 'tools/call', params: { name: tool, arguments: args, task: { ttl }, _meta: { 'interop-marker': marker } } },
    CreateTaskResultSchema, opts(onprogress ? { onprogress } : {}));
  const sent = peer.tap.lastSent('tools/call', (m) => m.params?._meta?.['interop-marker'] === marker);
  return { task: created.task, created, requestId: sent?.id };
}

/** tasks/get until `done(task)` (check.mjs pollTask); returns every task read. */
async function pollUntil(peer, taskId, done, what) {
  const seen = await pollTask(peer.client, taskId, done, what,
    { pollForMs: POLL_FOR_MS, maxPauseMs: MAX_POLL_PAUSE_MS, requestOptions: opts() });
  return seen;
}
const untilTerminal = (peer, taskId) => pollUntil(peer, taskId, (t) => TERMINAL.includes(t.status), 'a terminal status');

/** The fields every Task of the 2025-11-25 wire has; `what` names it in failures. */
function expectTaskShape(task, what) {
  expect(TASK_ID.test(task?.taskId ?? ''), `${what}: taskId is not 32 hex characters: ${fmt(task)}`);
  expect(ISO_8601.test(task.createdAt ?? ''), `${what}: createdAt is not ISO 8601 UTC: ${fmt(task.createdAt)}`);
  expect(ISO_8601.test(task.lastUpdatedAt ?? ''), `${what}: lastUpdatedAt is not ISO 8601 UTC: ${fmt(task.lastUpdatedAt)}`);
  expect(Date.parse(task.lastUpdatedAt) >= Date.parse(task.createdAt), `${what}: lastUpdatedAt before createdAt: ${fmt(task)}`);
  expect(typeof task.pollInterval === 'number' && task.pollInterval > 0, `${what}: no positive pollInterval: ${fmt(task)}`);
}

/** The related-task _meta of a tasks/result answer must name `taskId`. */
function expectRelatedTask(result, taskId, what) {
  expectEqual(result?._meta?.[RELATED_TASK], { taskId }, `${what}: _meta["${RELATED_TASK}"]`);
}

/**
 * A JSON-RPC error with the task id `id` replaced, to compare errors about different ids; `data` without
 * its `correlation_id` (every request has its own, docs/errors.md).
 */
function errorShape(error, id) {
  const blank = (text) => text.split(id).join('<task id>');
  const data = error.data !== null && typeof error.data === 'object' && !Array.isArray(error.data)
    ? Object.fromEntries(Object.entries(error.data).filter(([key]) => key !== 'correlation_id'))
    : error.data;
  return { code: error.code, message: blank(serverMessage(error)), data: blank(JSON.stringify(data ?? null)) };
}

/** A fresh task id that no server issued. */
const unknownTaskId = () => randomBytes(16).toString('hex');

// ---- the checks -----------------------------------------------------------------------------------------

let alice;
/** A task still running when the server stops: the server must stop it and exit promptly. */
let longTask;

// Named 'initialize': the other SDK checks run only once it passed (check.mjs).
await check('initialize', async () => {
  alice = await connect('mcpcore-interop-tasks-alice', 'alice');
  markInitialized();
  expectEqual(alice.client.getServerCapabilities()?.tasks, TASKS_CAPABILITY, 'capabilities.tasks');
  if (overHttp) expect(typeof alice.tap.sessionId === 'string', 'no Mcp-Session-Id');
  const sent = alice.tap.lastSent('initialize');
  const version = alice.tap.received.find((r) => r.message.id === sent?.id)?.message.result?.protocolVersion;
  expectEqual(version, PROTOCOL_VERSION, 'negotiated protocolVersion');
});

await check('tools/list: execution.taskSupport of the task tools', async () => {
  // listTools also fills the SDK's cache that callToolStream reads (isToolTask, output validators).
  const { tools } = await alice.client.listTools(undefined, opts());
  const byName = new Map(tools.map((t) => [t.name, t]));
  for (const [name, support] of Object.entries(TASK_SUPPORT)) {
    expect(byName.has(name), `${name} is not listed`);
    expectEqual(byName.get(name).execution, { taskSupport: support }, `${name}.execution`);
  }
  for (const name of TASK_TOOLS) {
    const support = byName.get(name)?.execution?.taskSupport;
    expect(support === 'optional' || support === 'required', `${name}.execution.taskSupport: ${fmt(byName.get(name)?.execution)}`);
  }
  for (const t of tools) {
    if (TASK_TOOLS.includes(t.name)) continue;
    const support = t.execution?.taskSupport;
    expect(support === undefined || support === 'forbidden', `${t.name} (not a task tool) declares ${fmt(t.execution)}`);
  }
  expect(byName.has('greet'), 'greet is not listed');
});

/** The task of the create check, followed through progress, tasks/get, status notifications and tasks/result. */
let first;
const firstProgress = [];

await check('create: tools/call slow_compute {seconds: 1} with params.task answers a CreateTaskResult', async () => {
  first = await createTask(alice, 'slow_compute', { seconds: 1, label: 'interop-create' },
                           { onprogress: (p) => firstProgress.push(p) });
  const { task, created } = first;
  expectTaskShape(task, 'CreateTaskResult.task');
  // Working: the answer did not wait for the work.
  expectEqual(task.status, 'working', 'status');
  expectEqual(task.ttl, TTL_MS, 'ttl (the one asked for)');
  // On the wire: the task under `task`, not flat (the SDK would accept extra keys silently).
  const wire = alice.tap.received.find((r) => r.message.id === first.requestId && r.message.method === undefined)?.message;
  expect(wire?.result?.task?.taskId === task.taskId, `the wire result has no task.taskId: ${fmt(wire)}`);
  for (const key of ['content', 'taskId', 'status', 'isError']) {
    expect(!(key in wire.result), `the wire CreateTaskResult has a top-level ${key}: ${fmt(wire.result)}`);
  }
  expect(created._meta?.[RELATED_TASK] === undefined || created._meta[RELATED_TASK].taskId === task.taskId,
    `a related-task _meta naming another task: ${fmt(created._meta)}`);
});

let firstPolls;
await check('tasks/get: polled until completed, working before, the same task every time', async () => {
  expect(first, 'no task was created');
  firstPolls = await pollUntil(alice, first.task.taskId, (t) => t.status === 'completed', 'completed');
  const statuses = firstPolls.map((t) => t.status);
  const firstDone = statuses.indexOf('completed');
  expect(statuses.slice(0, firstDone).every((s) => s === 'working'), `statuses before completed: ${fmt(statuses)}`);
  for (const t of firstPolls) {
    expectTaskShape(t, 'tasks/get');
    expectEqual([t.taskId, t.createdAt, t.ttl], [first.task.taskId, first.task.createdAt, TTL_MS], '[taskId, createdAt, ttl]');
  }
  const done = firstPolls.at(-1);
  expect(Date.parse(done.lastUpdatedAt) >= Date.parse(first.task.lastUpdatedAt), `lastUpdatedAt went back: ${fmt(done)}`);
  // The 2025-11-25 rule: tasks/get answers carry no related-task _meta.
  expect(done._meta?.[RELATED_TASK] === undefined, `tasks/get carries related-task _meta: ${fmt(done._meta)}`);
});

await check('progress: notifications/progress with the tools/call token arrive, increasing, before the end', async () => {
  expect(first?.requestId !== undefined, 'no task was created');
  const wire = alice.tap.progressFor(first.requestId);
  expect(wire.length > 0, `no notifications/progress for token ${fmt(first.requestId)} (onprogress saw ${fmt(firstProgress)})`);
  expectEqual(firstProgress.map((p) => p.progress), wire.map((w) => w.message.params.progress), 'what onprogress received');
  const values = wire.map((w) => w.message.params.progress);
  expect(values.every((v, i) => i === 0 || v > values[i - 1]), `progress not increasing: ${fmt(values)}`);
  // slow_compute reports seconds done of `seconds`: the last report is the whole second.
  expectEqual([values.at(-1), wire.at(-1).message.params.total], [1, 1], '[progress, total] of the last report');
  // None after the task is terminal: none after its terminal status notification, none from now on.
  const terminal = alice.tap.statusFor(first.task.taskId).find((s) => TERMINAL.includes(s.message.params.status));
  if (terminal) expect(wire.every((w) => w.i < terminal.i), 'progress after the terminal status notification');
  const count = wire.length;
  await sleep(QUIET_WAIT_MS);
  expectEqual(alice.tap.progressFor(first.requestId).length, count, 'progress notifications after completion');
});

await check('notifications/tasks/status: the terminal one (completed) arrives, a full Task', async () => {
  expect(first, 'no task was created');
  const id = first.task.taskId;
  const arrived = await waitFor(() => alice.statuses.some((s) => s.taskId === id && s.status === 'completed'),
                                NOTIFICATION_WAIT_MS);
  expect(arrived, `no completed status notification for the task; received: ${fmt(alice.statuses)}`);
  const mine = alice.statuses.filter((s) => s.taskId === id);
  for (const s of mine) {
    expectTaskShape(s, 'notifications/tasks/status');
    expectEqual([s.createdAt, s.ttl], [first.task.createdAt, TTL_MS], '[createdAt, ttl] of a status notification');
    expect(s._meta?.[RELATED_TASK] === undefined, `a status notification carries related-task _meta: ${fmt(s._meta)}`);
  }
  const order = mine.map((s) => s.status);
  expectEqual(order.filter((s) => TERMINAL.includes(s)), ['completed'], 'terminal status notifications');
  expectEqual(order.at(-1), 'completed', 'the last status notification');
});

await check('tasks/result: the CallToolResult, with _meta related-task', async () => {
  expect(first, 'no task was created');
  const result = await alice.client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema, opts());
  expect(result.isError !== true, `isError: ${fmt(result)}`);
  expectEqual(textOf(result, 'slow_compute'), computed('interop-create', 1), 'the text');
  expectRelatedTask(result, first.task.taskId, 'tasks/result');
  // The same answer again: a result stays until the task's ttl.
  const again = await alice.client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema, opts());
  expectEqual(again, result, 'a second tasks/result');
});

await check('tasks/result of a working task waits until it is terminal', async () => {
  const { task } = await createTask(alice, 'slow_compute', { seconds: 1, label: 'interop-wait' });
  const started = performance.now();
  const result = await alice.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
  const waited = performance.now() - started;
  expect(waited > 300, `tasks/result answered after ${Math.round(waited)} ms, before the 1 s of work could end`);
  expectRelatedTask(result, task.taskId, 'tasks/result');
  expect(result.isError !== true, `isError: ${fmt(result)}`);
  expectEqual(textOf(result, 'slow_compute'), computed('interop-wait', 1), 'the text');
  const after = await alice.client.experimental.tasks.getTask(task.taskId, opts());
  expectEqual(after.status, 'completed', 'the status once tasks/result answered');
});

await check('tasks/list: the completed task is listed', async () => {
  expect(first, 'no task was created');
  const page = await alice.client.experimental.tasks.listTasks(undefined, opts());
  const listed = page.tasks.find((t) => t.taskId === first.task.taskId);
  expect(listed, `the task is not in tasks/list: ${fmt(page.tasks.map((t) => t.taskId))}`);
  expectTaskShape(listed, 'tasks/list entry');
  expectEqual([listed.status, listed.createdAt, listed.ttl], ['completed', first.task.createdAt, TTL_MS],
    '[status, createdAt, ttl] of the listed task');
});

await check('tasks/list: a junk cursor answers -32602', async () => {
  await expectMcpError(alice.client.experimental.tasks.listTasks('not-a-cursor-of-this-server', opts()), INVALID_PARAMS);
});

let cancelled;
await check('tasks/cancel of a working slow_compute {seconds: 60}: status cancelled, and it stays so', async () => {
  ({ task: cancelled } = await createTask(alice, 'slow_compute', { seconds: 60, label: 'interop-cancel' }));
  const started = performance.now();
  const answer = await alice.client.experimental.tasks.cancelTask(cancelled.taskId, opts());
  expect(performance.now() - started < 2_000, `tasks/cancel took ${Math.round(performance.now() - started)} ms`);
  expectTaskShape(answer, 'tasks/cancel');
  expectEqual([answer.taskId, answer.status], [cancelled.taskId, 'cancelled'], '[taskId, status] of tasks/cancel');
  await sleep(QUIET_WAIT_MS);
  const later = await alice.client.experimental.tasks.getTask(cancelled.taskId, opts());
  expectEqual(later.status, 'cancelled', 'tasks/get after the cancel');
  const arrived = await waitFor(() => alice.statuses.some((s) => s.taskId === cancelled.taskId && s.status === 'cancelled'),
                                NOTIFICATION_WAIT_MS);
  expect(arrived, `no cancelled status notification; received: ${fmt(alice.statuses.filter((s) => s.taskId === cancelled.taskId))}`);
});

await check('tasks/cancel of the cancelled task again answers -32602', async () => {
  expect(cancelled, 'no task was cancelled');
  await expectMcpError(alice.client.experimental.tasks.cancelTask(cancelled.taskId, opts()), INVALID_PARAMS);
});

await check('tasks/result of the cancelled task answers -32602 (the task was cancelled)', async () => {
  expect(cancelled, 'no task was cancelled');
  const error = await expectMcpError(
    alice.client.experimental.tasks.getTaskResult(cancelled.taskId, CallToolResultSchema, opts()), INVALID_PARAMS);
  expect(/cancel/i.test(serverMessage(error)), `the message does not say it was cancelled: ${fmt(serverMessage(error))}`);
});

await check('tasks/cancel of a completed task answers -32602; it stays completed', async () => {
  expect(first, 'no task was created');
  await expectMcpError(alice.client.experimental.tasks.cancelTask(first.task.taskId, opts()), INVALID_PARAMS);
  expectEqual((await alice.client.experimental.tasks.getTask(first.task.taskId, opts())).status, 'completed', 'status');
});

await check('failing_job as a task: status failed; tasks/result is its isError result', async () => {
  const { task } = await createTask(alice, 'failing_job', {});
  expectEqual(task.status, 'working', 'status at creation');
  const polls = await untilTerminal(alice, task.taskId);
  const last = polls.at(-1);
  expectEqual(last.status, 'failed', 'the terminal status (2025-11-25: an isError tool result is failed)');
  expect(typeof last.statusMessage === 'string' && last.statusMessage.length > 0, `no statusMessage: ${fmt(last)}`);
  const result = await alice.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
  expectEqual(result.isError, true, 'isError');
  expectEqual(textOf(result, 'failing_job'), FAILING_JOB_TEXT, 'the text');
  expectRelatedTask(result, task.taskId, 'tasks/result');
});

await check('protocol_error_job as a task: status failed; tasks/result answers its JSON-RPC error', async () => {
  const { task } = await createTask(alice, 'protocol_error_job', {});
  expectEqual((await untilTerminal(alice, task.taskId)).at(-1).status, 'failed', 'the terminal status');
  let error;
  try {
    const result = await alice.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
    fail(`tasks/result answered a result: ${fmt(result)}`);
  } catch (e) {
    if (e instanceof CheckFailure) throw e;
    error = e;
  }
  expect(Number.isInteger(error?.code), `not a JSON-RPC error: ${describe(error)}`);
  expectEqual({ code: error.code, message: serverMessage(error) }, HANDLER_THREW, 'the error');
});

await check('failing_job (taskSupport required) called without a task answers -32601', async () => {
  // client.callTool refuses locally for a required tool (it would send nothing): a plain request.
  await expectMcpError(alice.client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } },
                                            CallToolResultSchema, opts()), METHOD_NOT_FOUND);
});

await check('greet (no task support) called with params.task answers -32601', async () => {
  await expectMcpError(alice.client.request(
    { method: 'tools/call', params: { name: 'greet', arguments: { name: 'interop' }, task: { ttl: TTL_MS } } },
    CallToolResultSchema, opts()), METHOD_NOT_FOUND);
});

await check('slow_compute (optional) called without a task answers a plain CallToolResult', async () => {
  const result = await alice.client.callTool({ name: 'slow_compute', arguments: { seconds: 0, label: 'interop-plain' } },
                                             CallToolResultSchema, opts());
  expect(result.isError !== true, `isError: ${fmt(result)}`);
  expectEqual(textOf(result, 'slow_compute'), computed('interop-plain', 0), 'the text');
  expect(result.task === undefined && result._meta?.[RELATED_TASK] === undefined, `a task answer: ${fmt(result)}`);
});

/** The errors an unknown task id answers, by method, for the comparisons below. */
const unknownErrors = {};
await check('an unknown task id answers -32602 on tasks/get, tasks/result and tasks/cancel', async () => {
  const tasks = alice.client.experimental.tasks;
  for (const id of [unknownTaskId(), 'not-a-task-id']) {
    const errors = {
      get: await expectMcpError(tasks.getTask(id, opts()), INVALID_PARAMS),
      result: await expectMcpError(tasks.getTaskResult(id, CallToolResultSchema, opts()), INVALID_PARAMS),
      cancel: await expectMcpError(tasks.cancelTask(id, opts()), INVALID_PARAMS),
    };
    if (TASK_ID.test(id)) {
      for (const [method, error] of Object.entries(errors)) unknownErrors[method] = errorShape(error, id);
    }
  }
});

await check('an expired task id answers exactly like an unknown one', async () => {
  const { task } = await createTask(alice, 'slow_compute', { seconds: 0, label: 'interop-expire' }, { ttl: 1 });
  // The server raises a too-short ttl to its minimum (docs/tasks.md); wait that long.
  expect(task.ttl >= 1 && task.ttl <= 3_000, `the granted ttl ${task.ttl} ms is not a short one`);
  const done = await alice.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
  expectRelatedTask(done, task.taskId, 'tasks/result before the expiry');
  await sleep(Math.max(0, Date.parse(task.createdAt) + task.ttl - Date.now()) + 250);
  const tasks = alice.client.experimental.tasks;
  const errors = {
    get: await expectMcpError(tasks.getTask(task.taskId, opts()), INVALID_PARAMS),
    result: await expectMcpError(tasks.getTaskResult(task.taskId, CallToolResultSchema, opts()), INVALID_PARAMS),
    cancel: await expectMcpError(tasks.cancelTask(task.taskId, opts()), INVALID_PARAMS),
  };
  for (const [method, error] of Object.entries(errors)) {
    expectEqual(errorShape(error, task.taskId), unknownErrors[method], `tasks/${method} of the expired id vs an unknown id`);
  }
  const listed = (await tasks.listTasks(undefined, opts())).tasks.map((t) => t.taskId);
  expect(!listed.includes(task.taskId), 'the expired task is still in tasks/list');
});

await check('callToolStream(slow_compute) yields taskCreated, taskStatus..., then the result', async () => {
  const messages = [];
  const progress = [];
  // onprogress and options.task ride along on every tasks/get and tasks/result the SDK sends: the
  // server must ignore them there.
  for await (const message of alice.client.experimental.tasks.callToolStream(
    { name: 'slow_compute', arguments: { seconds: 1, label: 'interop-stream' } }, CallToolResultSchema,
    opts({ task: { ttl: TTL_MS }, onprogress: (p) => progress.push(p) }))) {
    messages.push(message);
  }
  const types = messages.map((m) => m.type);
  expect(types[0] === 'taskCreated' && types.at(-1) === 'result' && types.slice(1, -1).every((t) => t === 'taskStatus') &&
         types.length >= 3, `the message types: ${fmt(types)} (${fmt(messages.find((m) => m.type === 'error')?.error?.message)})`);
  const { taskId } = messages[0].task;
  expect(TASK_ID.test(taskId), `taskCreated: ${fmt(messages[0])}`);
  const statuses = messages.slice(1, -1).map((m) => m.task.status);
  expectEqual(statuses.at(-1), 'completed', 'the last taskStatus');
  expect(statuses.slice(0, -1).every((s) => s === 'working'), `taskStatus before completed: ${fmt(statuses)}`);
  expect(messages.slice(1, -1).every((m) => m.task.taskId === taskId), 'a taskStatus of another task');
  const { result } = messages.at(-1);
  expect(result.isError !== true, `isError: ${fmt(result)}`);
  expectEqual(textOf(result, 'slow_compute'), computed('interop-stream', 1), 'the text');
  expectRelatedTask(result, taskId, 'the streamed result');
  const sentGets = alice.tap.sent.filter((s) => s.message.method === 'tasks/get' && s.message.params?.taskId === taskId);
  expect(sentGets.some((s) => s.message.params.task !== undefined), 'the SDK sent no task params on tasks/get (nothing tolerated)');
});

await check('callToolStream(confirm_delete): the 2025 task elicits with related-task _meta, the answer completes it', async () => {
  const before = alice.elicitations.length;
  const messages = [];
  for await (const message of alice.client.experimental.tasks.callToolStream(
    { name: 'confirm_delete', arguments: { filename: 'interop.txt' } }, CallToolResultSchema,
    opts({ task: { ttl: TTL_MS } }))) {
    messages.push(message);
  }
  const types = messages.map((m) => m.type);
  expect(types[0] === 'taskCreated' && types.at(-1) === 'result',
    `the message types: ${fmt(types)} (${fmt(messages.find((m) => m.type === 'error')?.error?.message)})`);
  const { taskId } = messages[0].task;
  // The request went to the client as a server-to-client elicitation/create naming the task.
  const asked = alice.elicitations.slice(before);
  expectEqual(asked.length, 1, 'the elicitations received');
  expectEqual(asked[0]._meta?.[RELATED_TASK], { taskId }, 'the elicitation\'s related-task _meta');
  const { result } = messages.at(-1);
  expect(result.isError !== true, `isError: ${fmt(result)}`);
  expectEqual(textOf(result, 'confirm_delete'), 'deleted interop.txt', 'the text (it used the answer)');
  expectRelatedTask(result, taskId, 'the streamed result');
});

// ---- HTTP only: another principal, and a disconnect in the middle ---------------------------------------

if (overHttp) {
  let bob;
  await check('another principal (bob) gets -32602 for alice\'s task ids, exactly as for unknown ones', async () => {
    bob = await connect('mcpcore-interop-tasks-bob', 'bob');
    const { task: working } = await createTask(alice, 'slow_compute', { seconds: 60, label: 'interop-foreign' });
    const tasks = bob.client.experimental.tasks;
    for (const id of [working.taskId, first?.task.taskId].filter(Boolean)) {
      const foreign = {
        get: await expectMcpError(tasks.getTask(id, opts()), INVALID_PARAMS),
        result: await expectMcpError(tasks.getTaskResult(id, CallToolResultSchema, opts()), INVALID_PARAMS),
        cancel: await expectMcpError(tasks.cancelTask(id, opts()), INVALID_PARAMS),
      };
      const other = unknownTaskId();
      const unknown = {
        get: await expectMcpError(tasks.getTask(other, opts()), INVALID_PARAMS),
        result: await expectMcpError(tasks.getTaskResult(other, CallToolResultSchema, opts()), INVALID_PARAMS),
        cancel: await expectMcpError(tasks.cancelTask(other, opts()), INVALID_PARAMS),
      };
      for (const method of ['get', 'result', 'cancel']) {
        expectEqual(errorShape(foreign[method], id), errorShape(unknown[method], other),
          `bob's tasks/${method} of alice's task vs of an unknown id`);
      }
    }
    const listed = (await tasks.listTasks(undefined, opts())).tasks.map((t) => t.taskId);
    expect(!listed.includes(working.taskId) && !listed.includes(first?.task.taskId), `bob's tasks/list shows alice's: ${fmt(listed)}`);
    // Bob's cancel changed nothing: alice's task still runs. Then alice cancels it.
    const tasksOfAlice = alice.client.experimental.tasks;
    expectEqual((await tasksOfAlice.getTask(working.taskId, opts())).status, 'working', 'alice\'s task after bob\'s tasks/cancel');
    expectEqual((await tasksOfAlice.cancelTask(working.taskId, opts())).status, 'cancelled', 'alice\'s own tasks/cancel');
  });
  if (bob) await bob.client.close();

  await check('disconnect in the middle: a new session of the same principal fetches the result', async () => {
    const dropped = await connect('mcpcore-interop-tasks-dropped', 'alice');
    const { task } = await createTask(dropped, 'slow_compute', { seconds: 2, label: 'interop-disconnect' });
    // A tasks/result in flight when the connection drops: the server must let go of it.
    const pending = dropped.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts())
      .then(() => 'answered', () => 'rejected');
    await sleep(300);
    await dropped.client.close();  // aborts the connections; no DELETE: the session is not ended
    expectEqual(await withTimeout(pending, 2_000, 'the pending tasks/result did not settle on close'), 'rejected',
      'the pending tasks/result');
    expect(!dropped.methods.includes('DELETE'), `the client sent a DELETE: ${fmt(dropped.methods)}`);
    const again = await connect('mcpcore-interop-tasks-again', 'alice');
    try {
      expect(again.tap.sessionId !== dropped.tap.sessionId, 'the new client reuses the old session');
      const now = await again.client.experimental.tasks.getTask(task.taskId, opts());
      expectEqual(now.status, 'working', 'the status seen by the new session (the task must still be running)');
      const result = await again.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
      expect(result.isError !== true, `isError: ${fmt(result)}`);
      expectEqual(textOf(result, 'slow_compute'), computed('interop-disconnect', 2), 'the text');
      expectRelatedTask(result, task.taskId, 'tasks/result from the new session');
      expectEqual((await again.client.experimental.tasks.getTask(task.taskId, opts())).status, 'completed', 'the status');
    } finally {
      await again.client.close();
    }
  });
}

// ---- pagination (last: it fills the principal's task store up to a second page) ---------------------------

// Created before the pagination check fills the store; the last check stops the server with it running.
await check('a slow_compute {seconds: 60} task is working (the server stops with it at the end)', async () => {
  ({ task: longTask } = await createTask(alice, 'slow_compute', { seconds: 60, label: 'interop-shutdown' }));
  await sleep(QUIET_WAIT_MS);
  expectEqual((await alice.client.experimental.tasks.getTask(longTask.taskId, opts())).status, 'working', 'status');
});

await check('tasks/list pagination: nextCursor pages through more tasks than one page, each once', async () => {
  const tasks = alice.client.experimental.tasks;
  const created = [];
  let paged = false;
  while (!paged && created.length < PAGINATION_MAX_TASKS) {
    let made;
    try {
      made = await createTask(alice, 'slow_compute', { seconds: 0, label: `interop-page-${created.length}` });
    } catch (error) {
      // A cap refusal here means the fixture's per-principal cap is below its tasks/list page size.
      fail(`creating task ${created.length + 1} for a second page of tasks/list (no nextCursor yet) failed: ` +
           `${describe(error)}`);
    }
    created.push(made.task.taskId);
    if (created.length % 10 === 0) paged = (await tasks.listTasks(undefined, opts())).nextCursor !== undefined;
  }
  expect(paged, `no nextCursor after ${created.length} tasks`);
  const pages = [];
  let cursor;
  do {
    const page = await tasks.listTasks(cursor, opts());
    pages.push(page.tasks.map((t) => t.taskId));
    expect(page.nextCursor === undefined || (typeof page.nextCursor === 'string' && page.nextCursor !== cursor),
      `a bad nextCursor: ${fmt(page.nextCursor)}`);
    cursor = page.nextCursor;
    expect(pages.length <= 100, 'more than 100 pages');
  } while (cursor !== undefined);
  expect(pages.length >= 2, `one page only: ${pages[0].length} tasks`);
  const size = pages[0].length;
  expect(pages.slice(0, -1).every((p) => p.length === size) && pages.at(-1).length <= size && pages.at(-1).length > 0,
    `page sizes: ${fmt(pages.map((p) => p.length))}`);
  const all = pages.flat();
  expectEqual(all.length, new Set(all).size, 'distinct task ids over all pages (a task listed twice)');
  const missing = created.filter((id) => !all.includes(id));
  expectEqual(missing, [], 'created tasks missing from the pages');
  // Creation order: each page continues where the last one ended.
  const order = created.map((id) => all.indexOf(id));
  expect(order.every((v, i) => i === 0 || v > order[i - 1]), 'the tasks are not listed in creation order');
});

// ---- the end: the server stops with a task still running ------------------------------------------------

if (overHttp) {
  await alice?.client.close();
  await check('the server exits 0 on SIGTERM with a task still running', async () => {
    expect(longTask, 'no task was running');
    const started = performance.now();
    const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
    expect(!exit.killed, `the server did not exit within ${SERVER_EXIT_WAIT_MS} ms of SIGTERM (killed)`);
    expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
    process.stdout.write(`# the server exited ${Math.round(performance.now() - started)} ms after SIGTERM\n`);
  }, { needsSdk: false });
} else {
  await check('the server exits 0 at the end of its input with a task still running', async () => {
    expect(server, 'no server child');
    expect(longTask, 'no task was running');
    const child = server;
    const closedAt = performance.now();
    await alice.client.close();  // ends the child's stdin; SIGTERM after 2 s if it has not exited
    const exited = await waitFor(() => child.exitInfo !== undefined, EXIT_WAIT_MS);
    expect(exited, `the server had not exited ${EXIT_WAIT_MS} ms after its input ended`);
    const after = child.exitInfo.at - closedAt;
    expectEqual([child.exitInfo.code, child.exitInfo.signal], [0, null], '[exit code, signal]');
    expect(after < EXIT_ON_EOF_WITHIN_MS, `the server exited ${Math.round(after)} ms after its input ended (SIGTERM forced it)`);
  }, { needsSdk: false });
}

const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
