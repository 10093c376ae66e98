// SPDX-License-Identifier: Apache-2.0
// The check harness shared by the interop scripts (stdio_client.mjs, http_client.mjs, v2_client.mjs,
// host_e2e.mjs, host_v2.mjs, host_tasks*.mjs, haproxy_*.mjs): the scripts' argument check, assertions that throw
// CheckFailure, a runner that prints one line per check, "ok - <name>" or "not ok - <name>: <why>", and the
// "# N passed, M failed" summary, the global timeout and the run's guard, the tap transport that records the raw
// JSON-RPC, the recording fetch for the v2 client, plain 2026-07-28 requests (the envelope and the headers of
// docs/eras.md), starting server processes (mcpcore-host among them), and raw-HTTP reading: whole bodies and SSE
// events, bounded in time.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect, isDeepStrictEqual } from 'node:util';

import { McpError } from '@modelcontextprotocol/sdk/types.js';

// ---- arguments ------------------------------------------------------------------------------------------

/**
 * The check of a script's arguments: unless `ok`, prints `usage` (one line) on stderr and exits with status 2;
 * then, for the first of `files` (falsy ones left out: optional arguments) that does not exist, prints
 * "<script>: no such file: <file>" and exits with status 2.
 */
export function checkArguments(script, { ok, usage, files }) {
  if (!ok) {
    process.stderr.write(`${usage}\n`);
    process.exit(2);
  }
  for (const f of files.filter(Boolean)) {
    if (!existsSync(f)) {
      process.stderr.write(`${script}: no such file: ${f}\n`);
      process.exit(2);
    }
  }
}

// ---- assertions -----------------------------------------------------------------------------------------

/** A check's own failure: reported with its message alone. */
export class CheckFailure extends Error {}

/** A value for a failure message: compact JSON (inspect where JSON has none), cut at 400 characters. */
export function fmt(value) {
  let s;
  try {
    s = JSON.stringify(value);
  } catch {
    s = undefined;
  }
  if (s === undefined) s = inspect(value, { depth: 6, breakLength: Infinity });
  return s.length > 400 ? `${s.slice(0, 400)}...` : s;
}

/** Fails the running check with `why`. */
export function fail(why) {
  throw new CheckFailure(why);
}

/** Fails the running check with `why` unless `condition` holds. */
export function expect(condition, why) {
  if (!condition) fail(why);
}

/** Fails the running check unless `actual` deep-strict-equals `expected`; `what` names the value. */
export function expectEqual(actual, expected, what) {
  if (!isDeepStrictEqual(actual, expected)) fail(`${what}: expected ${fmt(expected)}, got ${fmt(actual)}`);
}

/** The JSON-RPC error message as the server sent it (McpError prefixes "MCP error <code>: "). */
export function serverMessage(error) {
  const prefix = `MCP error ${error.code}: `;
  return error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
}

/** The text of content[0] of a tool result; fails when it is not a text item. */
export function textOf(result, what) {
  const first = result?.content?.[0];
  expect(first?.type === 'text' && typeof first.text === 'string', `${what}: content[0] is not text: ${fmt(result)}`);
  return first.text;
}

/** Awaits `promise`; rejects with a CheckFailure(`why`) when it has not settled within `ms`. */
export async function withTimeout(promise, ms, why) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailure(why)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---- the runner -----------------------------------------------------------------------------------------

/**
 * A check runner: counts and prints the checks of one run.
 *
 * `timeoutMs` bounds each check. With `showCause`, an Error's `cause` is appended to its description (fetch
 * errors keep their reason there). Until `markInitialized()` is called, every check but the one named
 * "initialize" fails without running, unless it is run with `{ needsSdk: false }`.
 *
 * @param {{timeoutMs: number, showCause?: boolean}} options
 */
export function createChecks({ timeoutMs, showCause = false }) {
  let failed = 0;
  let passed = 0;
  let initialized = false;

  /** A one-line reason for a failed check: CheckFailure, McpError, a zod error (the SDK's), or anything. */
  function describe(error) {
    if (error instanceof CheckFailure) return error.message;
    if (error instanceof McpError) return `unexpected JSON-RPC error ${error.code}: ${error.message}`;
    if (Array.isArray(error?.issues)) {
      // A zod error: the SDK rejected the shape of a result.
      const issues = error.issues.map((i) => `${(i.path ?? []).join('.') || '(root)'}: ${i.message}`);
      return `the SDK rejected the result: ${issues.join('; ')}`;
    }
    if (error instanceof Error) {
      return `${error.name}: ${error.message}${showCause && error.cause ? ` (cause: ${error.cause})` : ''}`;
    }
    return `thrown: ${fmt(error)}`;
  }

  /** Awaits `promise`, which must reject with a JSON-RPC error of `code`; returns the McpError. */
  async function expectMcpError(promise, code) {
    let result;
    try {
      result = await promise;
    } catch (error) {
      if (!(error instanceof McpError)) fail(`expected JSON-RPC error ${code}, got ${describe(error)}`);
      expect(error.code === code, `expected JSON-RPC error ${code}, got ${error.code}: ${serverMessage(error)}`);
      return error;
    }
    return fail(`expected JSON-RPC error ${code}, got a result: ${fmt(result)}`);
  }

  /** Runs `body` as the check `name` (bounded by `timeoutMs`) and prints its "ok" or "not ok" line. */
  async function check(name, body, { needsSdk = true } = {}) {
    let why;
    if (needsSdk && name !== 'initialize' && !initialized) {
      ++failed;
      process.stdout.write(`not ok - ${name}: not run, initialize failed\n`);
      return;
    }
    try {
      await withTimeout(Promise.resolve().then(body), timeoutMs, `timed out after ${timeoutMs} ms`);
    } catch (error) {
      why = describe(error).replace(/\s*\n\s*/g, ' | ');
    }
    if (why === undefined) {
      ++passed;
      process.stdout.write(`ok - ${name}\n`);
    } else {
      ++failed;
      process.stdout.write(`not ok - ${name}: ${why}\n`);
    }
  }

  /** A check that needs `needs()` to be truthy (a connected client); otherwise it fails without running. */
  function checkWith(needs, what) {
    return (name, body) => check(name, async () => {
      if (!needs()) throw new CheckFailure(`not run, ${what} failed`);
      await body();
    }, { needsSdk: false });
  }

  /** The initialize handshake completed: the other checks run from now on. */
  function markInitialized() {
    initialized = true;
  }

  /** Prints "# N passed, M failed"; returns the exit status (0 when every check passed, 1 otherwise). */
  function summary() {
    process.stdout.write(`# ${passed} passed, ${failed} failed\n`);
    return failed === 0 ? 0 : 1;
  }

  return { check, checkWith, describe, expectMcpError, markInitialized, summary };
}

/**
 * After `ms`, prints "not ok - global timeout: ...", calls `onTimeout` (kill the server, clean up) and exits
 * with status 1. Returns the timer, for clearTimeout at the end of the run.
 */
export function startGlobalTimer(ms, onTimeout) {
  return setTimeout(() => {
    process.stdout.write(`not ok - global timeout: the run took longer than ${ms} ms\n`);
    onTimeout();
    process.exit(1);
  }, ms);
}

/**
 * Guards a run that ends with "PASS" or "FAIL": `cleanup` (kill what the run started, remove its files) runs on
 * exit; SIGINT and SIGTERM print "not ok - interrupted by <signal>" and "FAIL", clean up and exit with status 1;
 * after `timeoutMs` the global timer (startGlobalTimer) prints its line and "FAIL", cleans up and exits with
 * status 1. Returns the global timer, for clearTimeout at the end of the run.
 */
export function guardRun(cleanup, timeoutMs) {
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      process.stdout.write(`not ok - interrupted by ${sig}\nFAIL\n`);
      cleanup();
      process.exit(1);
    });
  }
  return startGlobalTimer(timeoutMs, () => {
    process.stdout.write('FAIL\n');
    cleanup();
  });
}

// ---- transport tap --------------------------------------------------------------------------------------

/**
 * A Transport that forwards to an SDK client transport and records each message with its arrival time, so the
 * checks can look at the raw JSON-RPC (exact schemas, ids, notifications the SDK drops after a cancellation).
 * The scripts extend it with what their transport needs.
 */
export class TapTransport {
  constructor(inner) {
    this.inner = inner;
    /** @type {{at: number, message: any}[]} messages from the server */
    this.received = [];
    /** @type {{at: number, message: any}[]} messages to the server */
    this.sent = [];
    inner.onmessage = (message, extra) => {
      this.received.push({ at: performance.now(), message });
      if (message.method === undefined && (message.result !== undefined || message.error !== undefined)) {
        // The pinned SDK dispatches notifications one microtask late but responses at once, and a response
        // retires its request's progress handler. So progress the server wrote just before its result, and
        // that arrives in the same chunk, reaches onprogress after the handler is gone and is dropped with
        // "unknown token" (typescript-sdk issue #2580). Handing responses on one microtask later restores
        // wire order: notifications that arrived earlier are dispatched first, later ones are not. Wire
        // order itself is checked on `received`, independently of that.
        queueMicrotask(() => this.onmessage?.(message, extra));
      } else {
        this.onmessage?.(message, extra);
      }
    };
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
  }
  async start() { await this.inner.start(); }
  send(message, options) {
    this.sent.push({ at: performance.now(), message });
    return this.inner.send(message, options);
  }
  close() { return this.inner.close(); }
  /** The last request sent with this method (optionally also matching a predicate on it). */
  lastSent(method, predicate = () => true) {
    for (let i = this.sent.length - 1; i >= 0; --i) {
      const m = this.sent[i].message;
      if (m.method === method && m.id !== undefined && predicate(m)) return m;
    }
    return undefined;
  }
  /** The index in `received` of the server's response (result or error) to the request with this id, or -1. */
  responseIndex(id) {
    return this.received.findIndex((r) => r.message.id === id && r.message.method === undefined);
  }
}

// ---- the wire: a recording fetch (the v2 client's HTTP transport) ----------------------------------------

/** Bound on reading a recorded response body (a copy of what the client read). */
const READ_TIMEOUT_MS = 10_000;

/** The JSON-RPC messages of a recorded response body: the JSON body, or every SSE `data` event. */
export function messagesOfBody(contentType, text) {
  if (text === undefined || text === '') return [];
  if ((contentType ?? '').startsWith('application/json')) return [JSON.parse(text)];
  const out = [];
  for (const block of text.split(/\r\n\r\n|\n\n|\r\r/)) {
    const data = block.split(/\r\n|\n|\r/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, ''));
    if (data.length > 0) {
      try { out.push(JSON.parse(data.join('\n'))); } catch { /* not JSON: ignored */ }
    }
  }
  return out;
}

/**
 * A fetch for the v2 transport that records every exchange in `log`:
 * `{at, method, headers, body, status, contentType, messages(), aborted}`. The response is cloned and the
 * copy read in the background; `messages()` resolves with the JSON-RPC messages it carried.
 */
export function recordingFetch(log) {
  return async (url, init = {}) => {
    const entry = { at: performance.now(), method: init.method ?? 'GET', headers: {}, body: undefined, aborted: false };
    new Headers(init.headers).forEach((value, key) => { entry.headers[key] = value; });
    if (typeof init.body === 'string') {
      try { entry.body = JSON.parse(init.body); } catch { entry.body = init.body; }
    }
    let text = Promise.resolve(undefined);
    entry.messages = async () => messagesOfBody(entry.contentType,
      await Promise.race([text, sleep(READ_TIMEOUT_MS).then(() => { throw new CheckFailure('a recorded body did not end'); })]));
    log.push(entry);
    init.signal?.addEventListener('abort', () => { entry.aborted = true; }, { once: true });
    let response;
    try {
      response = await fetch(url, init);
    } catch (error) {
      entry.fetchError = error;
      throw error;
    }
    entry.status = response.status;
    entry.contentType = response.headers.get('content-type') ?? '';
    text = response.clone().text().catch((error) => { entry.readError = error; return undefined; });
    return response;
  };
}

/** The recorded POSTs of JSON-RPC method `method` (optionally matching `predicate` on the body). */
export function posts(log, method, predicate = () => true) {
  return log.filter((e) => e.method === 'POST' && e.body?.method === method && predicate(e.body));
}

/** The response (result or error) to the recorded POST `entry`, as it came over the wire. */
export async function wireResponse(entry) {
  const messages = await entry.messages();
  const response = messages.find((m) => m.id === entry.body.id && m.method === undefined);
  if (!response) throw new CheckFailure(`no response on the wire to ${entry.body.method} id ${fmt(entry.body.id)}`);
  return response;
}

// ---- raw HTTP bodies and SSE ----------------------------------------------------------------------------

/** Bound on reading one SSE event or one whole response body, unless the caller gives another. */
export const DEFAULT_READ_TIMEOUT_MS = 10_000;

/** Reads a whole body as text, bounded in time. */
export function bodyText(response, timeoutMs = DEFAULT_READ_TIMEOUT_MS) {
  return withTimeout(response.text(), timeoutMs, `the response body did not end within ${timeoutMs} ms`);
}

/**
 * An incremental text/event-stream reader (WHATWG parsing rules: `data` lines joined with LF, one
 * leading space removed, comments and unknown fields ignored, an event is dispatched only when it had
 * a data line; an id-only block just moves the last event id).
 */
export class SseReader {
  constructor(response) {
    this.reader = response.body.getReader();
    this.decoder = new TextDecoder();
    this.buffer = '';
    this.queue = [];
    this.ended = false;
    this.pending = undefined;
    this.retry = undefined;
    this.lastEventId = undefined;
  }

  _parse() {
    for (;;) {
      const m = /\r\n\r\n|\n\n|\r\r/.exec(this.buffer);
      if (!m) return;
      const block = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      const data = [];
      const event = { id: undefined, event: undefined, retry: undefined, data: undefined };
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'id') event.id = value;
        else if (field === 'event') event.event = value;
        else if (field === 'retry' && /^\d+$/.test(value)) event.retry = Number(value);
      }
      if (event.retry !== undefined) this.retry = event.retry;
      if (event.id !== undefined) this.lastEventId = event.id;
      if (data.length === 0) continue;
      event.data = data.join('\n');
      try {
        event.json = event.data === '' ? undefined : JSON.parse(event.data);
      } catch {
        event.json = undefined;
      }
      this.queue.push(event);
    }
  }

  /** The next event, or null when the stream ended; throws a CheckFailure after `timeoutMs`. */
  async next(timeoutMs = DEFAULT_READ_TIMEOUT_MS) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.queue.length > 0) return this.queue.shift();
      if (this.ended) return null;
      this.pending ??= this.reader.read();
      const left = deadline - performance.now();
      if (left <= 0) throw new CheckFailure(`no SSE event within ${timeoutMs} ms`);
      let timer;
      const timedOut = new Promise((resolve) => { timer = setTimeout(() => resolve('timeout'), left); });
      const got = await Promise.race([this.pending, timedOut]);
      clearTimeout(timer);
      if (got === 'timeout') throw new CheckFailure(`no SSE event within ${timeoutMs} ms`);
      this.pending = undefined;
      if (got.done) {
        this.buffer += this.decoder.decode();
        this._parse();
        this.ended = true;
      } else {
        this.buffer += this.decoder.decode(got.value, { stream: true });
        this._parse();
      }
    }
  }

  /** Every event until the stream ends (bounded per event). */
  async rest(timeoutMs = DEFAULT_READ_TIMEOUT_MS) {
    const out = [];
    for (let e = await this.next(timeoutMs); e !== null; e = await this.next(timeoutMs)) out.push(e);
    return out;
  }

  async cancel() {
    try { await this.reader.cancel(); } catch { /* already closed */ }
  }
}

/** The JSON-RPC messages of a response: the one JSON body, or every SSE data event. */
export async function messagesOf(response) {
  const type = response.headers.get('content-type') ?? '';
  if (type.startsWith('application/json')) return [JSON.parse(await bodyText(response))];
  expect(type.startsWith('text/event-stream'), `unexpected Content-Type ${fmt(type)}`);
  const events = await new SseReader(response).rest();
  return events.filter((e) => e.json !== undefined).map((e) => e.json);
}

// ---- plain 2026-07-28 requests (docs/eras.md) -------------------------------------------------------------

export const MODERN_VERSION = '2026-07-28';
/** The keys of the envelope every 2026-07-28 request carries in its params._meta. */
export const ENVELOPE_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const ENVELOPE_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const ENVELOPE_CLIENT = 'io.modelcontextprotocol/clientInfo';

/** The 2026-07-28 envelope of a request's params._meta: the version, `capabilities`, the client `clientName` 1.0.0. */
export function envelope(clientName, capabilities = {}) {
  return { [ENVELOPE_VERSION]: MODERN_VERSION, [ENVELOPE_CAPABILITIES]: capabilities,
    [ENVELOPE_CLIENT]: { name: clientName, version: '1.0.0' } };
}

/** The Mcp-Name a request names (docs/eras.md#the-checks): the tool, the URI or the task id; none otherwise. */
export function mcpName(method, params) {
  if (method === 'tools/call' || method === 'prompts/get') return params.name;
  if (method === 'resources/read') return params.uri;
  if (method.startsWith('tasks/')) return params.taskId;
  return undefined;
}

/**
 * POSTs the 2026-07-28 JSON-RPC `request` (its params already enveloped) to `url` with the headers of the
 * per-request era: MCP-Protocol-Version, Mcp-Method, Mcp-Name when the request names something, and
 * `Authorization: Bearer <bearer>` when `bearer` is given; `signal` bounds or aborts it. Resolves with the
 * fetch Response.
 */
export function postModern(url, request, { bearer, signal }) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  if (bearer !== undefined) headers.Authorization = `Bearer ${bearer}`;
  headers['MCP-Protocol-Version'] = MODERN_VERSION;
  headers['Mcp-Method'] = request.method;
  const name = mcpName(request.method, request.params ?? {});
  if (name !== undefined) headers['Mcp-Name'] = name;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(request), signal });
}

// ---- waiting ------------------------------------------------------------------------------------------

/** Waits up to `ms` for `predicate()` to hold; returns whether it does. */
export async function waitFor(predicate, ms) {
  const deadline = performance.now() + ms;
  while (!predicate() && performance.now() < deadline) await sleep(20);
  return predicate();
}

/** The statuses a task never leaves (docs/tasks.md#status). */
export const TASK_TERMINAL = ['completed', 'failed', 'cancelled'];

/**
 * Polls tasks/get (the 1.x client's task API) until `done(task)`; returns every task read, the last
 * one last. Fails when the task ends otherwise, or after `pollForMs`; pauses the task's
 * `pollInterval`, at most `maxPauseMs`, between polls. `requestOptions` go with every tasks/get.
 */
export async function pollTask(client, taskId, done, what, { pollForMs, maxPauseMs, requestOptions }) {
  const seen = [];
  const deadline = performance.now() + pollForMs;
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId, requestOptions);
    seen.push(task);
    if (done(task)) return seen;
    if (TASK_TERMINAL.includes(task.status)) fail(`${what}: the task ended ${task.status}: ${fmt(task)}`);
    if (performance.now() > deadline) fail(`${what}: not reached within ${pollForMs} ms; last: ${fmt(task)}`);
    await sleep(Math.min(task.pollInterval ?? maxPauseMs, maxPauseMs));
  }
}

// ---- server processes -----------------------------------------------------------------------------------

/**
 * A scratch directory for one run (its port file inside), and the cleanup that SIGKILLs the server
 * `current()` returns (while it still runs) and removes the directory. The cleanup runs on exit and, with
 * `signals`, on SIGINT / SIGTERM (printing "not ok - interrupted by <signal>" and exiting 1).
 */
export function scratchRun(prefix, current, { signals = false } = {}) {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const cleanup = () => {
    const server = current();
    if (server && server.exitInfo === undefined) {
      try { process.kill(server.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    try { rmSync(work, { recursive: true, force: true }); } catch { /* best effort */ }
  };
  process.on('exit', cleanup);
  if (signals) {
    for (const sig of ['SIGINT', 'SIGTERM']) {
      process.on(sig, () => {
        process.stdout.write(`not ok - interrupted by ${sig}\n`);
        cleanup();
        process.exit(1);
      });
    }
  }
  return { work, portFile: join(work, 'port'), cleanup };
}

/**
 * Starts `binary` with `args`, which must make it write its port to `portFile` once it listens; resolves with
 * `{child, port}` when the file holds a port, rejects when the process fails to start, exits first, or writes
 * no port within `waitMs`. `child.exitInfo` is set to `{code, signal}` when it exits. `stdout` is 'inherit' or
 * 'pipe' (the caller then reads `child.stdout`).
 */
export async function startServerProcess(binary, args, portFile, { waitMs, stdout = 'inherit', env = process.env }) {
  const child = spawn(binary, args, { stdio: ['ignore', stdout, 'inherit'], env });
  let spawnError;
  child.once('error', (error) => { spawnError = error; });
  child.once('exit', (code, signal) => { child.exitInfo = { code, signal }; });
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (spawnError) throw new Error(`cannot start ${binary}: ${spawnError.message}`);
    if (child.exitInfo) throw new Error(`${binary} exited before listening: ${fmt(child.exitInfo)}`);
    if (existsSync(portFile)) {
      const port = Number.parseInt(readFileSync(portFile, 'utf8').trim(), 10);
      if (Number.isInteger(port) && port > 0 && port < 65536) return { child, port };
    }
    if (Date.now() > deadline) throw new Error(`no port file within ${waitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Whether the child process `child` was started and still runs. */
export function running(child) {
  return Boolean(child) && child.exitCode === null && child.signalCode === null;
}

/** SIGKILLs each of `children` (child processes; unset ones left out) that still runs. */
export function killRunning(children) {
  for (const child of children) {
    if (running(child)) {
      try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
}

/** SIGTERM, then SIGKILL after `waitMs`; resolves with the exit `{code, signal, killed}`. */
export async function stopServerProcess(child, waitMs) {
  if (!child) return undefined;
  if (child.exitInfo) return child.exitInfo;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  try { process.kill(child.pid, 'SIGTERM'); } catch { /* gone */ }
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
  }, waitMs);
  const exit = await exited;
  clearTimeout(timer);
  return { ...exit, killed };
}

// ---- mcpcore-host ----------------------------------------------------------------------------------------

/**
 * Starts mcpcore-host (`binary`) on an ephemeral 127.0.0.1 port with the data directory `dataDir`, writing its
 * port to `portFile`, without the journal as a log source, with `--allowlist` and `--tick-ms` when given, then
 * `extraArgs`; resolves with `{child, port, url}` (`url` the MCP endpoint). Its stdout is collected:
 * `child.printed()` returns what it printed so far.
 */
export async function startHost(binary, { dataDir, portFile, allowlist, tickMs, waitMs, extraArgs = [] }) {
  rmSync(portFile, { force: true });
  const args = ['--data-dir', dataDir, '--port', '0', '--port-file', portFile];
  if (allowlist) args.push('--allowlist', allowlist);
  if (tickMs !== undefined) args.push('--tick-ms', String(tickMs));
  args.push('--no-journal', ...extraArgs);
  const { child, port } = await startServerProcess(binary, args, portFile, { waitMs, stdout: 'pipe' });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.printed = () => out;
  return { child, port, url: `http://127.0.0.1:${port}/mcp` };
}

/**
 * The operator token a first run of mcpcore-host prints once ("Authorization: Bearer <token>"), waited for up
 * to 5 s in `child.printed()`; resolves with `{token, printed}` (all it printed by then). Fails the running
 * check when no token is printed.
 */
export async function printedOperatorToken(child) {
  let printed = '';
  for (let i = 0; i < 100 && !/Authorization: Bearer (\S+)/.test(printed); ++i) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    printed = child.printed();
  }
  const match = /Authorization: Bearer (\S+)/.exec(printed);
  expect(match, `no token in the server's output: ${fmt(printed)}`);
  return { token: match[1], printed };
}
