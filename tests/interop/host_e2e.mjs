// SPDX-License-Identifier: Apache-2.0
// End-to-end test of the example host server (examples/host_server) driven by the official MCP TypeScript SDK
// client over Streamable HTTP, with mcpcore-admin acting as the human approver.
//
// Usage: node host_e2e.mjs <path-to-mcpcore-host> <path-to-mcpcore-admin> <allow-list file>
//
// In a fresh data directory: starts mcpcore-host on an ephemeral 127.0.0.1 port (first run: it creates the
// token file and prints an operator token once), mints a supervised token with `mcpcore-admin token mint`,
// lists the tools, reads host state and checks it against /proc, sets a tag, calls execute_instruction as the
// supervised agent (-32006), approves the ticket with `mcpcore-admin approve --as <human> --yes`, recalls with a
// progress token and receives the output lines as progress then the final result (its state, exit code and output),
// runs a failing command (an error result), replays the recall (the anti-oracle refusal), reads get_execution_status,
// runs both commands over `mcpcore-host --stdio` (the call is answered its final), then restarts the server on the
// same data directory and checks that the tag and the audit trail persisted. Prints one line per check ("ok - ..." / "not ok - ...").
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { promisify } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {
  checkArguments, createChecks, expect, expectEqual, fmt, printedOperatorToken, scratchRun, serverMessage,
  startGlobalTimer, startHost as startHostProcess, stopServerProcess, TapTransport,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

const GLOBAL_TIMEOUT_MS = 180_000;
const PORT_FILE_WAIT_MS = 20_000;
const REQUEST_TIMEOUT_MS = 20_000;
const CHECK_TIMEOUT_MS = 40_000;
const SERVER_EXIT_WAIT_MS = 10_000;
/** The server's maintenance tick in this test: a minted token is loaded within one tick. */
const TICK_MS = 200;
/** How long to wait for a freshly minted token to authenticate. */
const TOKEN_RELOAD_WAIT_MS = 5_000;

const APPROVAL_REQUIRED = -32006;
const FORBIDDEN = -32003;
const AGENT_ID = 'e2e-agent';
const HUMAN = 'e2e-human-approver';
const EXPECTED_TOOLS = [
  'approve_request', 'delete_tag', 'execute_instruction', 'get_execution_status', 'get_memory', 'get_system_summary',
  'get_tags', 'list_filesystems', 'list_listening_sockets', 'list_network_interfaces', 'list_top_processes',
  'reject_request', 'set_tag',
];

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary, adminBinary, allowlist] = process.argv.slice(2);
checkArguments('host_e2e.mjs', {
  ok: hostBinary && adminBinary && allowlist,
  usage: 'usage: node host_e2e.mjs <mcpcore-host> <mcpcore-admin> <allow-list>',
  files: [hostBinary, adminBinary, allowlist],
});

let server;
const { work, portFile, cleanup } = scratchRun('mcpcore-host-e2e-', () => server);
const dataDir = join(work, 'data');
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);
const { check, describe, expectMcpError, markInitialized, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS });

/** Runs mcpcore-admin with `args` on the test's data directory; resolves with {code, stdout, stderr}. */
async function admin(...args) {
  try {
    const { stdout, stderr } = await promisify(execFile)(adminBinary, ['--data-dir', dataDir, ...args],
      { timeout: REQUEST_TIMEOUT_MS });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return { code: error.code ?? 1, stdout: error.stdout ?? '', stderr: error.stderr ?? '' };
  }
}

/** Starts the host server; resolves with its URL. */
async function startHost() {
  const started = await startHostProcess(hostBinary,
    { dataDir, portFile, allowlist, tickMs: TICK_MS, waitMs: PORT_FILE_WAIT_MS });
  server = started.child;
  return started.url;
}

const opts = (extra = {}) => ({ timeout: REQUEST_TIMEOUT_MS, ...extra });

/** A connected SDK client with a bearer token. */
async function sdkClient(url, name, token) {
  const http = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const tap = new TapTransport(http);
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => { /* stream ends are reported here; the checks look at results */ };
  await client.connect(tap, opts());
  return { client, tap, http };
}

/** A number from /proc/meminfo, in bytes. */
function meminfoBytes(field) {
  const line = readFileSync('/proc/meminfo', 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Number.parseInt(line.split(/\s+/)[1], 10) * 1024;
}

// ---- the run --------------------------------------------------------------------------------------------

let url;
let operatorToken;
let agentToken;
let operator;
let agent;
let executionId;
const tagKey = 'e2e.owner';
const tagValue = `team-${process.pid}`;

await check('first run: the server starts, creates the token file and prints an operator token once', async () => {
  url = await startHost();
  let printed;
  ({ token: operatorToken, printed } = await printedOperatorToken(server));
  expect(printed.includes(`listening on ${url}`), `the URL is not printed: ${fmt(printed)}`);
  const tokens = readFileSync(join(dataDir, 'tokens'), 'utf8');
  expect(!tokens.includes(operatorToken), 'the token file holds the token itself, not only its digest');
}, { needsSdk: false });

await check('initialize (operator token) and tools/list', async () => {
  operator = await sdkClient(url, 'mcpcore-host-e2e-operator', operatorToken);
  markInitialized();
  const { tools } = await operator.client.listTools(undefined, opts());
  const names = tools.map((t) => t.name).sort();
  expectEqual(names.filter((n) => EXPECTED_TOOLS.includes(n)), EXPECTED_TOOLS, 'tools');
  for (const t of tools.filter((x) => x.name.startsWith('get_') || x.name.startsWith('list_'))) {
    expect(t.outputSchema?.type === 'object', `${t.name} has no object outputSchema`);
    expect(t.annotations?.readOnlyHint === true, `${t.name} is not annotated read-only`);
  }
}, { needsSdk: false });

await check('get_system_summary and get_memory agree with /proc', async () => {
  const summaryResult = await operator.client.callTool({ name: 'get_system_summary', arguments: {} }, undefined, opts());
  const s = summaryResult.structuredContent;
  expectEqual(s?.hostname, readFileSync('/proc/sys/kernel/hostname', 'utf8').trim(), 'hostname');
  expectEqual(s?.hostname, hostname(), 'hostname (os.hostname)');
  const uptime = Number.parseFloat(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  expect(Math.abs(s.uptime_seconds - uptime) < 30, `uptime ${s.uptime_seconds} vs /proc/uptime ${uptime}`);
  expectEqual(s.kernel, readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(), 'kernel release');
  const memory = (await operator.client.callTool({ name: 'get_memory', arguments: {} }, undefined, opts())).structuredContent;
  expectEqual(memory?.total_bytes, meminfoBytes('MemTotal'), 'total_bytes vs MemTotal');
});

await check('set_tag and get_tags (operator tier)', async () => {
  const set = await operator.client.callTool({ name: 'set_tag', arguments: { key: tagKey, value: tagValue } },
    undefined, opts());
  expect(!set.isError, `set_tag failed: ${fmt(set)}`);
  const tags = (await operator.client.callTool({ name: 'get_tags', arguments: {} }, undefined, opts())).structuredContent;
  expect(tags?.tags?.some((t) => t.key === tagKey && t.value === tagValue), `the tag is not listed: ${fmt(tags)}`);
});

await check('delete_tag at the operator tier needs approval (-32006)', async () => {
  const refused = await expectMcpError(
    operator.client.callTool({ name: 'delete_tag', arguments: { key: tagKey } }, undefined, opts()), APPROVAL_REQUIRED);
  expect(/^[0-9a-f]{32}$/.test(refused.data?.approval_id ?? ''), `approval_id ${fmt(refused.data)}`);
});

await check('mcpcore-admin mints a supervised token; the server loads it', async () => {
  const minted = await admin('token', 'mint', '--id', AGENT_ID, '--tier', 'supervised');
  expectEqual(minted.code, 0, `mcpcore-admin token mint (stderr ${fmt(minted.stderr)})`);
  agentToken = minted.stdout.trim();
  expect(/^[A-Za-z0-9_-]{43}$/.test(agentToken), `the minted token ${fmt(agentToken)}`);
  const deadline = Date.now() + TOKEN_RELOAD_WAIT_MS;
  for (;;) {
    try {
      agent = await sdkClient(url, 'mcpcore-host-e2e-agent', agentToken);
      break;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
  }
});

const command = { command: 'list_directory', args: ['/'] };
let ticket;

await check('execute_instruction as the supervised agent answers -32006 with an approval_id', async () => {
  const refused = await expectMcpError(
    agent.client.callTool({ name: 'execute_instruction', arguments: command }, undefined, opts()), APPROVAL_REQUIRED);
  ticket = refused.data?.approval_id;
  expect(/^[0-9a-f]{32}$/.test(ticket ?? ''), `approval_id ${fmt(refused.data)}`);
  expectEqual(refused.data?.retry_after_ms, 30000, 'retry_after_ms');
});

await check('mcpcore-admin lists the pending ticket with its tool and canonical arguments', async () => {
  const pending = await admin('pending', '--json');
  expectEqual(pending.code, 0, `mcpcore-admin pending (stderr ${fmt(pending.stderr)})`);
  const list = JSON.parse(pending.stdout);
  const mine = list.find((t) => t.id === ticket || t.approval_id === ticket);
  expect(mine, `the ticket is not listed: ${fmt(list)}`);
  expect(JSON.stringify(mine).includes('execute_instruction'), `the tool is not named: ${fmt(mine)}`);
  expect(JSON.stringify(mine).includes('list_directory'), `the arguments are not shown: ${fmt(mine)}`);
});

await check('a recall before approval still answers -32006 with the same ticket', async () => {
  const early = await expectMcpError(agent.client.callTool({ name: 'execute_instruction',
    arguments: { ...command, approval_id: ticket } }, undefined, opts()), APPROVAL_REQUIRED);
  expectEqual(early.data?.approval_id, ticket, 'approval_id');
});

await check('mcpcore-admin approves as a named human', async () => {
  const approved = await admin('approve', ticket, '--as', HUMAN, '--yes');
  expectEqual(approved.code, 0, `mcpcore-admin approve (stdout ${fmt(approved.stdout)}, stderr ${fmt(approved.stderr)})`);
});

await check('the recall streams the output lines as progress, then the final result: succeeded, exit code and output', async () => {
  const progress = [];
  const result = await agent.client.callTool({ name: 'execute_instruction', arguments: { ...command, approval_id: ticket } },
    undefined, opts({ onprogress: (p) => progress.push(p) }));
  // The final is the command's complete result (docs/host-server.md#execute_instruction): what a client shows
  // (content, structuredContent) says how it ended, never "running".
  const s = result.structuredContent;
  executionId = s?.execution_id;
  expect(/^[0-9a-f]{32}$/.test(executionId ?? ''), `execution_id ${fmt(result)}`);
  expectEqual([s?.status, s?.exit_code, result.isError ?? false], ['succeeded', 0, false], '[status, exit_code, isError] of the final');
  expectEqual(result._meta?.['mcpcore/executionId'], executionId, 'the execution id in the final\'s _meta');
  expect(typeof s?.output === 'string' && /\bbin\b/.test(s.output) && /\betc\b/.test(s.output),
    `the output of ls -la / ${fmt(s?.output)}`);
  const text = result.content?.[0]?.text ?? '';
  expect(text.startsWith('succeeded (exit 0)\n') && /\betc\b/.test(text), `the final's text ${fmt(text)}`);
  expect(result.status === undefined && result.execution_id === undefined, `top-level members on the final: ${fmt(result)}`);
  expect(progress.length >= 2, `progress notifications: ${fmt(progress)}`);
  expect(progress.some((p) => typeof p.message === 'string' && /\betc\b/.test(p.message)),
    `no progress message carries an output line: ${fmt(progress)}`);
  for (let i = 1; i < progress.length; ++i) {
    expect(progress[i].progress > progress[i - 1].progress, `progress not increasing: ${fmt(progress)}`);
  }
  const wire = agent.tap.received.map((r) => r.message);
  const last = wire.findLastIndex((m) => m.method === 'notifications/progress');
  const final = wire.findIndex((m) => m.result?.structuredContent?.execution_id === executionId
    && m.result?.structuredContent?.status === 'succeeded');
  expect(final > last, 'the final result came before the last progress notification');
});

await check('a failing command\'s final is an error result: failed, its exit code and output', async () => {
  const result = await operator.client.callTool({ name: 'execute_instruction',
    arguments: { command: 'list_directory', args: ['/nonexistent-mcpcore-e2e'] } }, undefined, opts({ onprogress: () => {} }));
  const s = result.structuredContent;
  expectEqual([result.isError, s?.status, s?.exit_code], [true, 'failed', 2], '[isError, status, exit_code] of the final');
  expect(/No such file/.test(s?.output ?? ''), `the output of ls ${fmt(s?.output)}`);
  expect((result.content?.[0]?.text ?? '').startsWith('failed (exit 2)\n'), `the final's text ${fmt(result.content)}`);
});

await check('replaying the recall gets the anti-oracle refusal', async () => {
  const replay = await expectMcpError(agent.client.callTool({ name: 'execute_instruction',
    arguments: { ...command, approval_id: ticket } }, undefined, opts()), FORBIDDEN);
  expectEqual(serverMessage(replay), 'approval already used (one-time ticket)', 'message');
  expectEqual(replay.data?.retry_after_ms, null, 'retry_after_ms');
});

await check('get_execution_status by execution id: terminal, no poll hint; hidden from another principal', async () => {
  const status = await agent.client.callTool({ name: 'get_execution_status', arguments: { execution_id: executionId } },
    undefined, opts());
  const s = status.structuredContent;
  expectEqual([s?.execution_id, s?.status, s?.exit_code], [executionId, 'succeeded', 0], '[id, status, exit_code]');
  expect(!('retry_after_ms' in s), `a poll hint on a terminal execution: ${fmt(s)}`);
  const foreign = await operator.client.callTool({ name: 'get_execution_status', arguments: { execution_id: executionId } },
    undefined, opts());
  expect(foreign.isError === true, `another principal read the execution: ${fmt(foreign)}`);
});

await check('a second execute_instruction without a progress token answers at once; polling carries retry_after_ms', async () => {
  const started = await operator.client.callTool({ name: 'execute_instruction', arguments: { command: 'sleep', args: ['1'] } },
    undefined, opts());
  const id = started.structuredContent?.execution_id;
  expectEqual(started.structuredContent?.status, 'running', 'status at the answer');
  const poll = (await operator.client.callTool({ name: 'get_execution_status', arguments: { execution_id: id } },
    undefined, opts())).structuredContent;
  expectEqual([poll?.status, poll?.retry_after_ms], ['running', 2000], '[status, retry_after_ms] while it runs');
});

await check('cancelling a streamed execute_instruction detaches the response; the command keeps running', async () => {
  const abort = new AbortController();
  const call = operator.client.callTool({ name: 'execute_instruction', arguments: { command: 'sleep', args: ['2'] } },
    undefined, opts({ signal: abort.signal, onprogress: () => {} }));
  call.catch(() => {});
  // The first progress frame announces the start and carries the execution id in _meta.
  const seen = operator.tap.received.length;
  let id;
  for (const until = Date.now() + REQUEST_TIMEOUT_MS; !id && Date.now() < until;) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    id = operator.tap.received.slice(seen).map((r) => r.message)
      .find((m) => m.method === 'notifications/progress')?.params?._meta?.['mcpcore/executionId'];
  }
  expect(/^[0-9a-f]{32}$/.test(id ?? ''), 'no progress frame carried the execution id');
  abort.abort();
  let cancelled = false;
  try { await call; } catch { cancelled = true; }
  expect(cancelled, 'the call was not cancelled');
  const poll = async () => (await operator.client.callTool({ name: 'get_execution_status',
    arguments: { execution_id: id } }, undefined, opts())).structuredContent;
  const first = await poll();
  expectEqual(first?.status, 'running', 'status right after the cancel');
  let last = first;
  for (const until = Date.now() + REQUEST_TIMEOUT_MS; last?.status === 'running' && Date.now() < until;) {
    await new Promise((resolve) => setTimeout(resolve, first.retry_after_ms / 10));
    last = await poll();
  }
  expectEqual([last?.status, last?.exit_code], ['succeeded', 0], '[status, exit_code] once sleep 2 is over');
});

if (operator) await operator.client.close();
if (agent) await agent.client.close();

await check('over stdio (`mcpcore-host --stdio`) the call is answered its final: succeeded, or failed as isError', async () => {
  const transport = new StdioClientTransport({ command: hostBinary,
    args: ['--stdio', '--data-dir', dataDir, '--no-journal', '--allowlist', allowlist], stderr: 'ignore' });
  const client = new Client({ name: 'mcpcore-host-e2e-stdio', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport, opts());
    const progress = [];
    const ok = await client.callTool({ name: 'execute_instruction', arguments: command }, undefined,
      opts({ onprogress: (p) => progress.push(p) }));
    expectEqual([ok.structuredContent?.status, ok.structuredContent?.exit_code, ok.isError ?? false], ['succeeded', 0, false],
      '[status, exit_code, isError] of the final over stdio');
    expect(/\betc\b/.test(ok.structuredContent?.output ?? ''), `the output over stdio ${fmt(ok.structuredContent)}`);
    expect((ok.content?.[0]?.text ?? '').startsWith('succeeded (exit 0)\n'), `the text over stdio ${fmt(ok.content)}`);
    // The first notification announces the start (the output lines of a command this quick may all come before it).
    expectEqual(progress[0]?._meta?.['mcpcore/executionId'], ok.structuredContent?.execution_id,
      'the execution id of the first progress over stdio');
    const failed = await client.callTool({ name: 'execute_instruction',
      arguments: { command: 'list_directory', args: ['/nonexistent-mcpcore-e2e'] } }, undefined, opts());
    expectEqual([failed.isError, failed.structuredContent?.status], [true, 'failed'], '[isError, status] of a failing command');
  } finally {
    await client.close();
  }
});

await check('the server exits 0 on SIGTERM', async () => {
  const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
  expect(!exit.killed, 'the server did not exit in time (killed)');
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
}, { needsSdk: false });

await check('after a restart the tag and the audit trail persisted', async () => {
  url = await startHost();
  const again = await sdkClient(url, 'mcpcore-host-e2e-restart', operatorToken);
  try {
    const tags = (await again.client.callTool({ name: 'get_tags', arguments: {} }, undefined, opts())).structuredContent;
    expect(tags?.tags?.some((t) => t.key === tagKey && t.value === tagValue), `the tag after a restart: ${fmt(tags)}`);
  } finally {
    await again.client.close();
  }
  const audit = await admin('audit', '--tail', '500', '--json');
  expectEqual(audit.code, 0, `mcpcore-admin audit (stderr ${fmt(audit.stderr)})`);
  const rows = JSON.parse(audit.stdout);
  const text = JSON.stringify(rows);
  expect(rows.some((r) => JSON.stringify(r).includes('set_tag') && JSON.stringify(r).includes('success')),
    `no audit row of set_tag: ${fmt(text)}`);
  expect(rows.some((r) => JSON.stringify(r).includes('execute_instruction') && JSON.stringify(r).includes('approved')),
    `no audit row of the approved execute_instruction: ${fmt(text)}`);
  expect(text.includes(HUMAN), `no audit row names the human approver: ${fmt(text)}`);
  const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal] of the second run');
}, { needsSdk: false });

void describe;
void hostname;
const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
