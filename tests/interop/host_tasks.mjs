// SPDX-License-Identifier: Apache-2.0
// mcpcore-host's execute_instruction as an MCP task (docs/host-server.md#commands-as-tasks), driven by the
// official TypeScript SDK 1.x client's task API (`client.experimental.tasks`, @modelcontextprotocol/sdk 1.32.2,
// MCP 2025-11-25) against the real server over Streamable HTTP, across a restart, and over `--stdio`.
//
// Usage: node host_tasks.mjs <path-to-mcpcore-host> <allow-list file>
//
// In a fresh data directory: starts mcpcore-host on an ephemeral 127.0.0.1 port (first run: it prints an operator
// token once, used as the bearer token) and checks: the tasks capability and execute_instruction's taskSupport;
// an allow-listed command (list_directory /) created as a task with a progress token, its progress (the first
// announcing the start with the execution id, then the output lines), tasks/get until completed, the completed
// status notification, tasks/result (the complete final: "succeeded (exit 0)" and the output as text,
// structuredContent with status, exit code and output) and tasks/list; a failing command (status failed, an
// isError result); tasks/cancel of a long command (cancelled, and the runner's own status, read with
// get_execution_status, is cancelled: the process is gone); a disconnect in the middle followed by the result
// fetched from a new session of the same principal; a plain call (no task) still answered the provisional
// result. Then the server is killed (SIGKILL, as a crash) with a task running and one finished, and started
// again on the same data directory: the finished task's tasks/result is the same, the running one is failed
// with the restart message, an unknown id stays -32602. The restarted server exits 0 on SIGTERM with a task
// running. Last, `mcpcore-host --stdio`: one task created and its result read.
//
// Prints one line per check, "ok - <name>" or "not ok - <name>: <why>", then "# N passed, M failed". The server
// is always killed at the end, and the whole run is bounded by a global timeout.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema, CreateTaskResultSchema, TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  checkArguments, createChecks, expect, expectEqual, fail, fmt, printedOperatorToken, scratchRun, serverMessage,
  startGlobalTimer, startHost, stopServerProcess, TapTransport, textOf, withTimeout, pollTask, TASK_TERMINAL, waitFor,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 180 s). */
const GLOBAL_TIMEOUT_MS = 150_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every SDK request. */
const REQUEST_TIMEOUT_MS = 20_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 40_000;
/** How long a check polls for a status. */
const POLL_FOR_MS = 15_000;
/** The longest pause between two polls, whatever pollInterval the server asks for. */
const MAX_POLL_PAUSE_MS = 500;
/** How long a status notification may lag behind the status tasks/get shows. */
const NOTIFICATION_WAIT_MS = 3_000;
/** After SIGTERM the server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 10_000;
/** The server's maintenance tick in this test. */
const TICK_MS = 200;

// ---- expected server surface (docs/host-server.md, docs/tasks.md) ---------------------------------------

const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };
const TTL_MS = 120_000;
const TASK_ID = /^[0-9a-f]{32}$/;
const EXECUTION_ID = /^[0-9a-f]{32}$/;
const EXECUTION_META = 'mcpcore/executionId';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const TERMINAL = TASK_TERMINAL;
const RESTART_MESSAGE = 'the server restarted before the task finished';
const LIST_ROOT = { command: 'list_directory', args: ['/'] };
const LIST_MISSING = { command: 'list_directory', args: ['/nonexistent-mcpcore-host-tasks'] };
const sleepFor = (seconds) => ({ command: 'sleep', args: [String(seconds)] });

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary, allowlist] = process.argv.slice(2);
checkArguments('host_tasks.mjs', {
  ok: hostBinary && allowlist,
  usage: 'usage: node host_tasks.mjs <mcpcore-host> <allow-list>',
  files: [hostBinary, allowlist],
});

let server;
const { work, portFile, cleanup } = scratchRun('mcpcore-host-tasks-', () => server, { signals: true });
const dataDir = join(work, 'data');
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);
const { check, describe, expectMcpError, markInitialized, summary } =
  createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

const opts = (extra = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...extra });

/** Starts the host on the test's data directory; resolves with its URL. */
async function start() {
  const started = await startHost(hostBinary, { dataDir, portFile, allowlist, tickMs: TICK_MS, waitMs: PORT_FILE_WAIT_MS });
  server = started.child;
  return started.url;
}

/** The shared tap; it passes the session id and the negotiated version through. */
class Tap extends TapTransport {
  get sessionId() { return this.inner.sessionId; }
  setProtocolVersion(version) { this.inner.setProtocolVersion?.(version); }
  /** Progress notifications received for `token`, in wire order. */
  progressFor(token) {
    return this.received.map((r) => r.message)
      .filter((m) => m.method === 'notifications/progress' && m.params?.progressToken === token);
  }
}

/** A connected SDK 1.x client with the bearer token; `statuses` collects the status notifications. */
async function connect(url, token, name) {
  const methods = [];
  const inner = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: (target, init) => {
      methods.push(init?.method ?? 'GET');
      return fetch(target, init);
    },
  });
  const tap = new Tap(inner);
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => { /* stream ends are reported here; the checks look at what arrived */ };
  const statuses = [];
  // The SDK registers no handler for notifications/tasks/status: without this one it drops them.
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => { statuses.push(n.params); });
  await client.connect(tap, opts());
  return { client, tap, statuses, methods };
}

/**
 * execute_instruction with `args` as a task (params.task.ttl); resolves with the CreateTaskResult's task and
 * the request's id (also its progress token when `onprogress` is given).
 */
async function createTask(peer, args, { onprogress } = {}) {
  const marker = randomBytes(8).toString('hex');
  const created = await peer.client.request(
    { method: 'tools/call', params: { name: 'execute_instruction', arguments: args, task: { ttl: TTL_MS },
                                      _meta: { 'interop-marker': marker } } },
    CreateTaskResultSchema, opts(onprogress ? { onprogress } : {}));
  const sent = peer.tap.lastSent('tools/call', (m) => m.params?._meta?.['interop-marker'] === marker);
  expect(TASK_ID.test(created.task?.taskId ?? ''), `no task in the answer: ${fmt(created)}`);
  return { task: created.task, requestId: sent?.id };
}

/** tasks/get until `done(task)` (check.mjs pollTask); returns the last task read. */
async function pollUntil(peer, taskId, done, what) {
  const seen = await pollTask(peer.client, taskId, done, what,
    { pollForMs: POLL_FOR_MS, maxPauseMs: MAX_POLL_PAUSE_MS, requestOptions: opts() });
  return seen.at(-1);
}
const untilTerminal = (peer, taskId) => pollUntil(peer, taskId, (t) => TERMINAL.includes(t.status), 'a terminal status');

/** get_execution_status until the execution is terminal; returns its structuredContent. */
async function executionWhenTerminal(peer, executionId) {
  const deadline = performance.now() + POLL_FOR_MS;
  for (;;) {
    const r = await peer.client.callTool({ name: 'get_execution_status', arguments: { execution_id: executionId } },
      undefined, opts());
    const s = r.structuredContent;
    if (s?.status !== 'running') return s;
    if (performance.now() > deadline) fail(`the execution still runs after ${POLL_FOR_MS} ms: ${fmt(s)}`);
    await sleep(50);
  }
}

/** The execution id the first progress notification of `requestId` carries (waits for it). */
async function executionIdOf(peer, requestId) {
  const deadline = performance.now() + POLL_FOR_MS;
  for (;;) {
    const id = peer.tap.progressFor(requestId)[0]?.params?._meta?.[EXECUTION_META];
    if (id !== undefined) return id;
    if (performance.now() > deadline) fail(`no progress notification carried the execution id for ${fmt(requestId)}`);
    await sleep(20);
  }
}

/** The final of an execute_instruction task, as tasks/result gives it, checked for `status` and `exit`. */
function expectFinal(result, taskId, { status, exit, isError }) {
  const s = result.structuredContent;
  expectEqual([s?.status, s?.exit_code, result.isError ?? false], [status, exit, isError],
    '[structuredContent.status, structuredContent.exit_code, isError] of the final');
  expect(EXECUTION_ID.test(s?.execution_id ?? ''), `no execution_id: ${fmt(s)}`);
  expectEqual(result._meta?.[EXECUTION_META], s.execution_id, 'the execution id in the final\'s _meta');
  expectEqual(result._meta?.[RELATED_TASK], { taskId }, `_meta["${RELATED_TASK}"]`);
  expect(typeof s.output === 'string', `no output: ${fmt(s)}`);
  const text = textOf(result, 'the final');
  const head = `${status} (exit ${exit})`;  // then a line break and the output, when there is output
  expect(s.output === '' ? text === head : text === `${head}\n${s.output}`, `the final's text: ${fmt(text)}`);
  return s;
}

// ---- the run over HTTP ----------------------------------------------------------------------------------

let url;
let token;
let alice;
let first;

await check('initialize: tasks capability; execute_instruction declares taskSupport optional', async () => {
  url = await start();
  ({ token } = await printedOperatorToken(server));
  alice = await connect(url, token, 'mcpcore-host-tasks');
  markInitialized();
  expectEqual(alice.client.getServerCapabilities()?.tasks, TASKS_CAPABILITY, 'capabilities.tasks');
  const { tools } = await alice.client.listTools(undefined, opts());
  const exec = tools.find((t) => t.name === 'execute_instruction');
  expectEqual(exec?.execution, { taskSupport: 'optional' }, 'execute_instruction.execution');
  const others = tools.filter((t) => t.name !== 'execute_instruction' && t.execution !== undefined);
  expectEqual(others.map((t) => t.name), [], 'other tools declaring task support');
}, { needsSdk: false });

const firstProgress = [];
await check('create: execute_instruction list_directory / with params.task answers a CreateTaskResult', async () => {
  first = await createTask(alice, LIST_ROOT, { onprogress: (p) => firstProgress.push(p) });
  expectEqual(first.task.status, 'working', 'status at creation');
  expectEqual(first.task.ttl, TTL_MS, 'ttl');
  const wire = alice.tap.received.find((r) => r.message.id === first.requestId && r.message.method === undefined)?.message;
  expect(wire?.result?.task?.taskId === first.task.taskId, `the wire answer is not a CreateTaskResult: ${fmt(wire)}`);
  expect(!('content' in wire.result) && !('structuredContent' in wire.result), `a tool result in the answer: ${fmt(wire)}`);
});

await check('tasks/get: polled until completed', async () => {
  expect(first, 'no task was created');
  const done = await pollUntil(alice, first.task.taskId, (t) => t.status === 'completed', 'completed');
  expectEqual([done.taskId, done.createdAt, done.ttl], [first.task.taskId, first.task.createdAt, TTL_MS],
    '[taskId, createdAt, ttl]');
});

await check('progress with the tools/call token: the start with the execution id, then the output lines', async () => {
  expect(first?.requestId !== undefined, 'no task was created');
  const wire = alice.tap.progressFor(first.requestId);
  expect(wire.length >= 2, `progress notifications: ${fmt(wire)}`);
  expectEqual(wire[0].params.message, 'started list_directory', 'the first progress message');
  expect(EXECUTION_ID.test(wire[0].params._meta?.[EXECUTION_META] ?? ''), `no execution id: ${fmt(wire[0])}`);
  expect(wire.some((m) => /\betc\b/.test(m.params.message ?? '')), `no output line as progress: ${fmt(wire)}`);
  const values = wire.map((m) => m.params.progress);
  expect(values.every((v, i) => i === 0 || v > values[i - 1]), `progress not increasing: ${fmt(values)}`);
});

await check('notifications/tasks/status: the terminal one (completed) arrives', async () => {
  expect(first, 'no task was created');
  const arrived = await waitFor(() => alice.statuses.some((s) => s.taskId === first.task.taskId && s.status === 'completed'),
    NOTIFICATION_WAIT_MS);
  expect(arrived, `no completed status notification; received: ${fmt(alice.statuses)}`);
});

let firstResult;
await check('tasks/result: the complete final (succeeded (exit 0), status, exit code, output)', async () => {
  expect(first, 'no task was created');
  firstResult = await alice.client.experimental.tasks.getTaskResult(first.task.taskId, CallToolResultSchema, opts());
  const s = expectFinal(firstResult, first.task.taskId, { status: 'succeeded', exit: 0, isError: false });
  expect(/\bbin\b/.test(s.output) && /\betc\b/.test(s.output), `the output of ls -la /: ${fmt(s.output)}`);
  expect(/\betc\b/.test(textOf(firstResult, 'the final')), 'the output is not in the text');
  expectEqual(s.execution_id, alice.tap.progressFor(first.requestId)[0]?.params?._meta?.[EXECUTION_META],
    'the execution id of the final vs of the start');
});

await check('tasks/list: the task is listed, completed', async () => {
  expect(first, 'no task was created');
  const listed = (await alice.client.experimental.tasks.listTasks(undefined, opts())).tasks
    .find((t) => t.taskId === first.task.taskId);
  expectEqual([listed?.status, listed?.createdAt], ['completed', first.task.createdAt], '[status, createdAt] listed');
});

await check('a failing command as a task: status failed; tasks/result is the isError final (failed, exit 2)', async () => {
  const { task } = await createTask(alice, LIST_MISSING);
  const last = await untilTerminal(alice, task.taskId);
  expectEqual(last.status, 'failed', 'the terminal status (2025-11-25: an isError result fails the task)');
  const result = await alice.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
  const s = expectFinal(result, task.taskId, { status: 'failed', exit: 2, isError: true });
  expect(/No such file/.test(s.output), `the output of ls: ${fmt(s.output)}`);
});

await check("tasks/cancel of a long command: cancelled, and the runner stopped it (get_execution_status: cancelled)", async () => {
  const { task, requestId } = await createTask(alice, sleepFor(30), { onprogress: () => {} });
  const executionId = await executionIdOf(alice, requestId);
  const before = await alice.client.callTool({ name: 'get_execution_status', arguments: { execution_id: executionId } },
    undefined, opts());
  expectEqual(before.structuredContent?.status, 'running', 'the execution before the cancel');
  const started = performance.now();
  const answer = await alice.client.experimental.tasks.cancelTask(task.taskId, opts());
  expectEqual([answer.taskId, answer.status], [task.taskId, 'cancelled'], '[taskId, status] of tasks/cancel');
  const s = await executionWhenTerminal(alice, executionId);
  const took = performance.now() - started;
  expectEqual([s?.status, s?.signal], ['cancelled', 15], '[status, signal] of the execution');
  expect(took < 10_000, `the command ended ${Math.round(took)} ms after the cancel (it should be stopped at once)`);
  expectEqual((await alice.client.experimental.tasks.getTask(task.taskId, opts())).status, 'cancelled',
    'tasks/get after the command ended');
  const error = await expectMcpError(
    alice.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts()), INVALID_PARAMS);
  expect(/cancel/i.test(serverMessage(error)), `tasks/result of the cancelled task: ${fmt(serverMessage(error))}`);
  await expectMcpError(alice.client.experimental.tasks.cancelTask(task.taskId, opts()), INVALID_PARAMS);
});

await check('disconnect in the middle: a new session of the same principal fetches the result', async () => {
  const dropped = await connect(url, token, 'mcpcore-host-tasks-dropped');
  const { task } = await createTask(dropped, sleepFor(2));
  await sleep(300);
  await dropped.client.close();  // aborts the connections; no DELETE: the session is not ended
  expect(!dropped.methods.includes('DELETE'), `the client sent a DELETE: ${fmt(dropped.methods)}`);
  const again = await connect(url, token, 'mcpcore-host-tasks-again');
  try {
    expect(again.tap.sessionId !== dropped.tap.sessionId, 'the new client reuses the old session');
    expectEqual((await again.client.experimental.tasks.getTask(task.taskId, opts())).status, 'working',
      'the status seen by the new session (the command must still run)');
    const result = await again.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema, opts());
    expectFinal(result, task.taskId, { status: 'succeeded', exit: 0, isError: false });
    expectEqual((await again.client.experimental.tasks.getTask(task.taskId, opts())).status, 'completed', 'the status');
  } finally {
    await again.client.close();
  }
});

await check('a plain call (no task) still answers the provisional result; get_execution_status follows it', async () => {
  const started = await alice.client.callTool({ name: 'execute_instruction', arguments: sleepFor(1) }, undefined, opts());
  const s = started.structuredContent;
  expectEqual(s?.status, 'running', 'status at the answer');
  expect(started.task === undefined, `a task in the plain answer: ${fmt(started)}`);
  expectEqual((await executionWhenTerminal(alice, s.execution_id))?.status, 'succeeded', 'the execution at its end');
});

// ---- a restart ------------------------------------------------------------------------------------------

let running;
await check('restart: the host is killed (SIGKILL) with a task running and one finished', async () => {
  expect(first && firstResult, 'no finished task');
  ({ task: running } = await createTask(alice, sleepFor(5)));
  expectEqual((await alice.client.experimental.tasks.getTask(running.taskId, opts())).status, 'working', 'status');
  await alice.client.close();
  const exited = new Promise((resolve) => server.once('exit', resolve));
  process.kill(server.pid, 'SIGKILL');
  await withTimeout(exited, SERVER_EXIT_WAIT_MS, 'the server did not die on SIGKILL');
});

let again;
await check("after the restart: the finished result is the same, the running task failed, unknown ids -32602", async () => {
  expect(running, 'no task was running');
  url = await start();
  again = await connect(url, token, 'mcpcore-host-tasks-restarted');
  const tasks = again.client.experimental.tasks;
  const result = await tasks.getTaskResult(first.task.taskId, CallToolResultSchema, opts());
  expectEqual(result, firstResult, 'tasks/result of the finished task after the restart');
  const abandoned = await tasks.getTask(running.taskId, opts());
  expectEqual([abandoned.status, abandoned.statusMessage], ['failed', RESTART_MESSAGE], '[status, statusMessage]');
  await expectMcpError(tasks.getTaskResult(running.taskId, CallToolResultSchema, opts()), INTERNAL_ERROR);
  await expectMcpError(tasks.cancelTask(running.taskId, opts()), INVALID_PARAMS);
  const unknown = randomBytes(16).toString('hex');
  await expectMcpError(tasks.getTask(unknown, opts()), INVALID_PARAMS);
  await expectMcpError(tasks.getTaskResult(unknown, CallToolResultSchema, opts()), INVALID_PARAMS);
  const listed = (await tasks.listTasks(undefined, opts())).tasks.map((t) => t.taskId);
  expect(listed.includes(first.task.taskId) && listed.includes(running.taskId), `tasks/list after the restart: ${fmt(listed)}`);
});

await check('the restarted server exits 0 on SIGTERM with a task running', async () => {
  expect(again, 'no client after the restart');
  const { task } = await createTask(again, sleepFor(30));
  await again.client.close();
  const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
  expect(!exit.killed, 'the server did not exit in time (killed)');
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
  expect(TASK_ID.test(task.taskId), 'no task');
}, { needsSdk: false });

// ---- stdio ----------------------------------------------------------------------------------------------

await check('over stdio (`mcpcore-host --stdio`): a task created and its result read', async () => {
  const transport = new StdioClientTransport({ command: hostBinary,
    args: ['--stdio', '--data-dir', dataDir, '--no-journal', '--allowlist', allowlist], stderr: 'ignore' });
  const client = new Client({ name: 'mcpcore-host-tasks-stdio', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport, opts());
    expectEqual(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY, 'capabilities.tasks over stdio');
    const created = await client.request({ method: 'tools/call',
      params: { name: 'execute_instruction', arguments: LIST_ROOT, task: { ttl: TTL_MS } } }, CreateTaskResultSchema, opts());
    const taskId = created.task?.taskId;
    expect(TASK_ID.test(taskId ?? ''), `no task over stdio: ${fmt(created)}`);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, opts());
    const s = expectFinal(result, taskId, { status: 'succeeded', exit: 0, isError: false });
    expect(/\betc\b/.test(s.output), `the output over stdio: ${fmt(s.output)}`);
    expectEqual((await client.experimental.tasks.getTask(taskId, opts())).status, 'completed', 'the status over stdio');
  } finally {
    await client.close();
  }
});

void describe;
const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
