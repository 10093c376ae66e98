// SPDX-License-Identifier: Apache-2.0
// mcpcore-host's execute_instruction as an MCP task in the per-request era (MCP 2026-07-28, the extension
// `io.modelcontextprotocol/tasks`; docs/host-server.md#commands-as-tasks, docs/tasks.md), driven against the real
// server over Streamable HTTP and over `--stdio`. The pinned client v2 (`@modelcontextprotocol/client` 2.4.0) has no
// tasks API, so the wire is spoken with plain fetch: every request carries the envelope
// (`_meta["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"`, client capabilities declaring the tasks
// extension or not, client info) and the headers the v2 client sends (MCP-Protocol-Version, Mcp-Method, and
// Mcp-Name: the tool's name on tools/call, the task id on tasks/*). The 2025-11-25 path of the same host is
// tests/interop/host_tasks.mjs.
//
// Usage: node host_tasks_v2.mjs <path-to-mcpcore-host> <allow-list file> [<path-to-mcpcore-admin>]
//
// In a fresh data directory: starts mcpcore-host on an ephemeral 127.0.0.1 port (first run: it prints an operator
// token once, used as the bearer token) and checks: server/discover advertises the tasks extension;
// execute_instruction of an allow-listed command with the extension declared answers `resultType: "task"` (task id,
// working, ttlMs, pollIntervalMs), without it the plain result; tasks/get polled until completed inlines the complete
// final (succeeded, exit 0, the output, as structuredContent and text); a failing command's task completes with an
// isError result (2026-07-28: tool errors complete the task); tasks/cancel of a long command is acknowledged, the
// task reaches cancelled and the command is stopped (seen in the health document's running commands and in the
// server's child processes: the 2026-07-28 wire of a task carries no execution id to ask get_execution_status
// with); another principal (a token minted with mcpcore-admin; skipped when no mcpcore-admin is given) sees the task
// exactly as an unknown id (-32602) and its tasks/cancel changes nothing. Then the server is stopped (SIGTERM,
// exit 0) and `mcpcore-host --stdio` on the same data directory, newline-delimited JSON: one task created with the
// 2026-07-28 wire and its tasks/get reaching completed.
//
// Prints one line per check, "ok - <name>" or "not ok - <name>: <why>" (a skipped check: "ok - <name> # SKIP
// <reason>"), then "# N passed, M failed". The servers are always killed at the end, and the whole run is bounded
// by a global timeout.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';

import {
  checkArguments, createChecks, envelope, expect, expectEqual, fail, fmt, killRunning, messagesOf,
  MODERN_VERSION, postModern, printedOperatorToken, scratchRun, startGlobalTimer, startHost,
  stopServerProcess, TASK_TERMINAL, textOf, withTimeout,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 90 s). */
const GLOBAL_TIMEOUT_MS = 75_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Bound on one HTTP exchange or one stdio answer. */
const REQUEST_TIMEOUT_MS = 15_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 30_000;
/** How long a check polls for a status. */
const POLL_FOR_MS = 15_000;
/** The longest pause between two polls, whatever pollIntervalMs the server asks for. */
const MAX_POLL_PAUSE_MS = 250;
/** How long the server may take to load a token minted into its token file (a few --tick-ms). */
const TOKEN_RELOAD_WAIT_MS = 5_000;
/** After SIGTERM the server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 10_000;
/** The server's maintenance tick in this test (the token file is reloaded on it). */
const TICK_MS = 200;

// ---- expected server surface (docs/host-server.md, docs/tasks.md, docs/eras.md) --------------------------

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const EXECUTION_META = 'mcpcore/executionId';
/** The host's task ttl when the client names none (--task-ttl-ms, 1 h), and the library's poll interval. */
const TTL_MS = 3_600_000;
const POLL_INTERVAL_MS = 1_000;
const TASK_ID = /^[0-9a-f]{32}$/;
const EXECUTION_ID = /^[0-9a-f]{32}$/;
const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const INVALID_PARAMS = -32602;
const LIST_ROOT = { command: 'list_directory', args: ['/'] };
const LIST_MISSING = { command: 'list_directory', args: ['/nonexistent-mcpcore-host-tasks-v2'] };
const sleepFor = (seconds) => ({ command: 'sleep', args: [String(seconds)] });

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary, allowlist, adminBinary, ...extra] = process.argv.slice(2);
checkArguments('host_tasks_v2.mjs', {
  ok: hostBinary && allowlist && extra.length === 0,
  usage: 'usage: node host_tasks_v2.mjs <mcpcore-host> <allow-list> [<mcpcore-admin>]',
  files: [hostBinary, allowlist, adminBinary],
});

let server;
/** The `--stdio` child, killed at the end if still up. */
let stdioChild;
const { work, portFile, cleanup: cleanupRun } = scratchRun('mcpcore-host-tasks-v2-', () => server, { signals: true });
const dataDir = join(work, 'data');
const cleanup = () => {
  killRunning([stdioChild]);
  cleanupRun();
};
process.on('exit', cleanup);
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);
const { check, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

// ---- the 2026-07-28 wire --------------------------------------------------------------------------------

let nextId = 1;

/** `params` with the 2026-07-28 envelope in its `_meta`; the tasks extension declared when `tasks`. */
function enveloped(params, tasks) {
  return {
    ...params,
    _meta: {
      ...(params._meta ?? {}),
      ...envelope('mcpcore-host-tasks-v2', tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}),
    },
  };
}

/**
 * One enveloped request over HTTP with `bearer` as the bearer token; resolves with `{status, message, request}`:
 * the HTTP status and the JSON-RPC response to it (from the JSON body or the SSE stream).
 */
async function httpRpc(bearer, method, params = {}, { tasks = true } = {}) {
  const id = nextId++;
  const request = { jsonrpc: '2.0', id, method, params: enveloped(params, tasks) };
  const response = await postModern(url, request, { bearer, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const messages = await messagesOf(response);
  // A refusal before the body is read (401, say) answers with id null.
  const message = messages.find((m) => m.method === undefined && (m.id === id || (m.id === null && m.error)));
  expect(message, `no response to ${method} (HTTP ${response.status}): ${fmt(messages)}`);
  return { status: response.status, message, request };
}

/** The result of a request that must succeed (HTTP 200, no JSON-RPC error). */
function resultOf({ status, message }, what) {
  expect(message.error === undefined, `${what}: JSON-RPC error ${fmt(message.error)}`);
  expectEqual(status, 200, `${what}: HTTP status`);
  return message.result;
}

/** A stdio peer: newline-delimited JSON-RPC on a child's stdin/stdout. */
class StdioPeer {
  constructor(child) {
    this.child = child;
    this.waiting = new Map();
    this.lines = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.lines.push(line);
      let m;
      try { m = JSON.parse(line); } catch { return; }
      if (m.method === undefined && this.waiting.has(m.id)) {
        this.waiting.get(m.id)(m);
        this.waiting.delete(m.id);
      }
    });
  }

  /** One enveloped request; resolves with the JSON-RPC response. */
  rpc(method, params = {}, { tasks = true } = {}) {
    const id = nextId++;
    const answered = new Promise((resolve) => this.waiting.set(id, resolve));
    this.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: enveloped(params, tasks) })}\n`);
    return withTimeout(answered, REQUEST_TIMEOUT_MS, `no answer to ${method} over stdio within ${REQUEST_TIMEOUT_MS} ms`
      + ` (output so far: ${fmt(this.lines)})`);
  }
}

// ---- tasks ----------------------------------------------------------------------------------------------

/** Fails unless `created` is a 2026-07-28 CreateTaskResult (flat, resultType task, working); returns it. */
function expectCreated(created) {
  expectEqual([created?.resultType, created?.status, created?.ttlMs, created?.pollIntervalMs],
    ['task', 'working', TTL_MS, POLL_INTERVAL_MS], '[resultType, status, ttlMs, pollIntervalMs] of the answer');
  expect(TASK_ID.test(created.taskId ?? ''), `no task id: ${fmt(created)}`);
  expect(RFC3339_MS.test(created.createdAt ?? '') && RFC3339_MS.test(created.lastUpdatedAt ?? ''),
    `createdAt / lastUpdatedAt: ${fmt(created)}`);
  for (const key of ['task', 'content', 'structuredContent', 'ttl', 'pollInterval']) {
    expect(!(key in created), `"${key}" in a 2026-07-28 CreateTaskResult: ${fmt(created)}`);
  }
  return created;
}

/**
 * tasks/get (through `get(taskId)`, resolving with the result) until `done(task)`; returns the last task read.
 * Fails when the task ends otherwise, or after POLL_FOR_MS; pauses the task's pollIntervalMs, at most
 * MAX_POLL_PAUSE_MS, between polls.
 */
async function pollTask(get, taskId, done, what) {
  const deadline = performance.now() + POLL_FOR_MS;
  for (;;) {
    const task = await get(taskId);
    expectEqual([task?.resultType, task?.taskId], ['complete', taskId], '[resultType, taskId] of tasks/get');
    if (done(task)) return task;
    if (TASK_TERMINAL.includes(task.status)) fail(`${what}: the task ended ${task.status}: ${fmt(task)}`);
    if (performance.now() > deadline) fail(`${what}: not reached within ${POLL_FOR_MS} ms; last: ${fmt(task)}`);
    await sleep(Math.min(task.pollIntervalMs ?? MAX_POLL_PAUSE_MS, MAX_POLL_PAUSE_MS));
  }
}

/**
 * The final of an execute_instruction task as tasks/get inlines it (`result`), checked for `status`, `exit` and
 * `isError`: the terminal snapshot as structuredContent, the same outcome and the output as text, the execution id
 * in `_meta` (and no related-task `_meta`: docs/tasks.md#the-wire). Returns the structuredContent.
 */
function expectFinal(task, { status, exit, isError }) {
  expectEqual(task.status, 'completed', 'the task\'s status (2026-07-28: a tool result completes it, isError or not)');
  expect(task.error === undefined, `an error with the result: ${fmt(task.error)}`);
  const result = task.result;
  const s = result?.structuredContent;
  expectEqual([s?.status, s?.exit_code, result?.isError ?? false], [status, exit, isError],
    '[structuredContent.status, structuredContent.exit_code, isError] of the inlined result');
  expect(EXECUTION_ID.test(s?.execution_id ?? ''), `no execution_id: ${fmt(s)}`);
  expectEqual(result._meta?.[EXECUTION_META], s.execution_id, 'the execution id in the result\'s _meta');
  expect(result._meta?.[RELATED_TASK] === undefined,
    `a related-task _meta on the inlined result: ${fmt(result._meta)}`);
  expect(typeof s.output === 'string', `no output: ${fmt(s)}`);
  const text = textOf(result, 'the inlined result');
  const head = `${status} (exit ${exit})`;  // then a line break and the output, when there is output
  expect(s.output === '' ? text === head : text === `${head}\n${s.output}`, `the result's text: ${fmt(text)}`);
  return s;
}

// ---- HTTP helpers ---------------------------------------------------------------------------------------

let url;
let token;

const call = (who, name, args, { tasks = true } = {}) =>
  httpRpc(who, 'tools/call', { name, arguments: args }, { tasks });
const taskGet = (who) => async (taskId) => resultOf(await httpRpc(who, 'tasks/get', { taskId }), 'tasks/get');

/** execute_instruction `args` as a task (the extension declared); returns the CreateTaskResult. */
async function createTask(args) {
  return expectCreated(resultOf(await call(token, 'execute_instruction', args), 'tools/call'));
}

/** get_execution_status of `executionId` (an operator call without the extension). */
async function executionStatus(executionId) {
  const r = resultOf(await call(token, 'get_execution_status', { execution_id: executionId }, { tasks: false }),
    'get_execution_status');
  return r.structuredContent;
}

/** get_execution_status until the execution is no longer running; returns its structuredContent. */
async function executionWhenTerminal(executionId) {
  const deadline = performance.now() + POLL_FOR_MS;
  for (;;) {
    const s = await executionStatus(executionId);
    if (s?.status !== 'running') return s;
    if (performance.now() > deadline) fail(`the execution still runs after ${POLL_FOR_MS} ms: ${fmt(s)}`);
    await sleep(50);
  }
}

/** The pids of `parent`'s live (not zombie) children whose command line is `argv`, from /proc. */
async function liveChildren(parent, argv) {
  const out = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== parent || state === 'Z') continue;
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0').slice(0, -1);
      if (isDeepStrictEqual(cmdline, argv)) out.push(Number(entry));
    } catch { /* the process ended meanwhile */ }
  }
  return out;
}

/** The host's count of running commands (host://server/health). */
async function runningCommands() {
  const r = resultOf(await httpRpc(token, 'resources/read', { uri: 'host://server/health' }, { tasks: false }),
    'resources/read');
  return JSON.parse(r.contents[0].text).running_commands;
}

// ---- the run over HTTP ----------------------------------------------------------------------------------

let started = false;
await check('first run: mcpcore-host starts in a fresh data directory and prints an operator token', async () => {
  ({ child: server, url } = await startHost(hostBinary,
    { dataDir, portFile, allowlist, tickMs: TICK_MS, waitMs: PORT_FILE_WAIT_MS }));
  ({ token } = await printedOperatorToken(server));
  started = true;
}, { needsSdk: false });

/** A check that needs the server; it fails without running when the server did not start. */
const c = (name, body) => check(name, async () => {
  expect(started, 'not run, the server did not start');
  await body();
}, { needsSdk: false });

await c('server/discover advertises capabilities.extensions["io.modelcontextprotocol/tasks"]', async () => {
  const r = resultOf(await httpRpc(token, 'server/discover'), 'server/discover');
  expect(r.supportedVersions?.includes(MODERN_VERSION), `supportedVersions: ${fmt(r.supportedVersions)}`);
  expectEqual(r.capabilities?.extensions?.[TASKS_EXTENSION], {}, `capabilities.extensions["${TASKS_EXTENSION}"]`);
  expect(r.capabilities?.tasks === undefined, `a 2025-11-25 capabilities.tasks in discover: ${fmt(r.capabilities)}`);
});

let first;
await c('execute_instruction list_directory / with the extension declared answers resultType "task"', async () => {
  const answer = await call(token, 'execute_instruction', LIST_ROOT);
  first = expectCreated(resultOf(answer, 'tools/call'));
});

await c('execute_instruction without the extension declared answers the plain result (no task)', async () => {
  const r = resultOf(await call(token, 'execute_instruction', LIST_ROOT, { tasks: false }), 'tools/call');
  expectEqual(r.resultType, 'complete', 'resultType');
  for (const key of ['taskId', 'task', 'ttlMs']) expect(!(key in r), `"${key}" in the plain answer: ${fmt(r)}`);
  const s = r.structuredContent;
  expect(EXECUTION_ID.test(s?.execution_id ?? ''), `no execution_id in the plain answer: ${fmt(r)}`);
  // Without a progress token the call answers its provisional result (docs/eras.md#detached-work): the command
  // runs on, and get_execution_status follows it to its end.
  expectEqual([s.command, s.status], ['list_directory', 'running'], '[command, status] of the plain answer');
  expectEqual((await executionWhenTerminal(s.execution_id))?.status, 'succeeded', 'the plain call\'s execution');
});

await c('tasks/get polled until completed: the complete final inlined (succeeded, exit 0, the output)', async () => {
  expect(first, 'no task was created');
  const done = await pollTask(taskGet(token), first.taskId, (t) => t.status === 'completed', 'completed');
  expectEqual([done.createdAt, done.ttlMs, done.pollIntervalMs], [first.createdAt, TTL_MS, POLL_INTERVAL_MS],
    '[createdAt, ttlMs, pollIntervalMs] of tasks/get');
  const s = expectFinal(done, { status: 'succeeded', exit: 0, isError: false });
  expect(/\bbin\b/.test(s.output) && /\betc\b/.test(s.output), `the output of ls -la /: ${fmt(s.output)}`);
  expectEqual((await executionStatus(s.execution_id))?.status, 'succeeded', 'get_execution_status of its execution');
});

await c('a failing command as a task: completed, with the isError result (status failed, exit 2)', async () => {
  const created = await createTask(LIST_MISSING);
  const done = await pollTask(taskGet(token), created.taskId, (t) => TASK_TERMINAL.includes(t.status), 'terminal');
  const s = expectFinal(done, { status: 'failed', exit: 2, isError: true });
  expect(/No such file/.test(s.output), `the output of ls: ${fmt(s.output)}`);
});

let cancelledTask;
await c('tasks/cancel of a long command: acknowledged, the task cancelled, the command\'s process stopped',
  async () => {
  const before = await runningCommands();
  const created = await createTask(sleepFor(30));
  expectEqual(await runningCommands(), before + 1, 'running commands after the creation (host://server/health)');
  const sleeping = () => liveChildren(server.pid, ['/bin/sleep', '30']);
  expectEqual((await sleeping()).length, 1, 'the server\'s live `/bin/sleep 30` children before the cancel');
  const startedAt = performance.now();
  const answer = resultOf(await httpRpc(token, 'tasks/cancel', { taskId: created.taskId }), 'tasks/cancel');
  expectEqual(answer.resultType, 'complete', 'resultType of tasks/cancel');
  expect(answer.status === undefined && answer.taskId === undefined,
    `tasks/cancel tells more than an ack: ${fmt(answer)}`);
  const task = await pollTask(taskGet(token), created.taskId, (t) => t.status === 'cancelled', 'cancelled');
  expect(task.result === undefined && task.error === undefined, `a payload on the cancelled task: ${fmt(task)}`);
  // The 2026-07-28 wire of a task carries no execution id (its progress is not sent, and a cancelled task has
  // no result), so get_execution_status cannot be asked: the runner's end is seen in the health document's count
  // of running commands and in the process table (the command's process is gone).
  const deadline = performance.now() + POLL_FOR_MS;
  while (await runningCommands() !== before || (await sleeping()).length !== 0) {
    if (performance.now() > deadline) fail(`the command still runs ${POLL_FOR_MS} ms after the cancel`);
    await sleep(50);
  }
  const took = performance.now() - startedAt;
  expect(took < 10_000, `the command ended ${Math.round(took)} ms after the cancel (it should be stopped at once)`);
  cancelledTask = created;
});

let otherToken;
const otherName =
  'another principal: tasks/get of the task is -32602 exactly as an unknown id; its tasks/cancel changes nothing';
if (!adminBinary) {
  process.stdout.write(`ok - ${otherName} # SKIP no mcpcore-admin given: no second token to mint\n`);
} else {
  await c(otherName, async () => {
    expect(first, 'no task was created');
    const minted = await runAdmin(['token', 'mint', '--id', 'tasks-v2-other', '--tier', 'operator']);
    expectEqual(minted.code, 0, `mcpcore-admin token mint (stderr ${fmt(minted.stderr)})`);
    otherToken = minted.stdout.trim();
    // The server reloads the token file on its tick: wait until the new token is accepted.
    const deadline = performance.now() + TOKEN_RELOAD_WAIT_MS;
    for (;;) {
      const probe = await httpRpc(otherToken, 'server/discover');
      if (probe.status === 200) break;
      if (performance.now() > deadline) fail(`the minted token is still refused (HTTP ${probe.status})`);
      await sleep(TICK_MS);
    }
    const unknownId = randomBytes(16).toString('hex');
    const shape = ({ status, message }) => [status, message.error?.code, message.error?.message, message.result];
    const foreign = await httpRpc(otherToken, 'tasks/get', { taskId: first.taskId });
    const unknown = await httpRpc(otherToken, 'tasks/get', { taskId: unknownId });
    expectEqual(unknown.message.error?.code, INVALID_PARAMS, 'tasks/get of an unknown id: the error code');
    expectEqual(shape(foreign), shape(unknown).map((v) => (v === unknownId ? first.taskId : v)),
      '[HTTP status, code, message, result] of another principal\'s tasks/get vs an unknown id\'s');
    // Its tasks/cancel is acknowledged like any other (it tells nothing) and cancels nothing.
    const victim = await createTask(sleepFor(2));
    const ack = resultOf(await httpRpc(otherToken, 'tasks/cancel', { taskId: victim.taskId }), 'foreign tasks/cancel');
    expectEqual(ack.resultType, 'complete', 'resultType of another principal\'s tasks/cancel');
    const done = await pollTask(taskGet(token), victim.taskId, (t) => TASK_TERMINAL.includes(t.status), 'terminal');
    expectFinal(done, { status: 'succeeded', exit: 0, isError: false });
  });
}

await c('an unknown task id is -32602 for tasks/get', async () => {
  const { status, message } = await httpRpc(token, 'tasks/get', { taskId: randomBytes(16).toString('hex') });
  expectEqual([message.error?.code, message.error?.message], [INVALID_PARAMS, 'Unknown task'], '[code, message]');
  expect(status === 200 || status === 400, `HTTP status ${status}`);
  if (cancelledTask) {
    const again = resultOf(await httpRpc(token, 'tasks/get', { taskId: cancelledTask.taskId }), 'tasks/get');
    expectEqual(again.status, 'cancelled', 'the cancelled task stays cancelled');
  }
});

await c('the server exits 0 on SIGTERM', async () => {
  const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
  expect(!exit.killed, `the server did not exit within ${SERVER_EXIT_WAIT_MS} ms of SIGTERM (killed)`);
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
});

// ---- stdio ----------------------------------------------------------------------------------------------

await c('over stdio (`mcpcore-host --stdio`): a task created with the 2026-07-28 wire, tasks/get reaches completed',
  async () => {
  stdioChild = spawn(hostBinary, ['--stdio', '--data-dir', dataDir, '--no-journal', '--allowlist', allowlist],
    { stdio: ['pipe', 'pipe', 'ignore'] });
  const peer = new StdioPeer(stdioChild);
  const discover = await peer.rpc('server/discover');
  expectEqual(discover.result?.capabilities?.extensions?.[TASKS_EXTENSION], {}, 'the extension over stdio');
  const answer = await peer.rpc('tools/call', { name: 'execute_instruction', arguments: LIST_ROOT });
  const created = expectCreated(answer.result);
  const get = async (taskId) => {
    const m = await peer.rpc('tasks/get', { taskId });
    expect(m.error === undefined, `tasks/get over stdio: ${fmt(m.error)}`);
    return m.result;
  };
  const done = await pollTask(get, created.taskId, (t) => t.status === 'completed', 'completed over stdio');
  const s = expectFinal(done, { status: 'succeeded', exit: 0, isError: false });
  expect(/\betc\b/.test(s.output), `the output over stdio: ${fmt(s.output)}`);
  const unknown = await peer.rpc('tasks/get', { taskId: randomBytes(16).toString('hex') });
  expectEqual(unknown.error?.code, INVALID_PARAMS, 'an unknown id over stdio');
  const exited = new Promise((resolve) => stdioChild.once('exit', (code, signal) => resolve({ code, signal })));
  stdioChild.stdin.end();
  expectEqual(await withTimeout(exited, SERVER_EXIT_WAIT_MS, 'the stdio server did not exit when its input ended'),
    { code: 0, signal: null }, 'the stdio server\'s exit');
});

// ---- mcpcore-admin --------------------------------------------------------------------------------------

/** Runs mcpcore-admin with `args` on the test's data directory; resolves with {code, stdout, stderr}. */
function runAdmin(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(adminBinary, ['--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
