// SPDX-License-Identifier: Apache-2.0
// A resource update raised by the host reaches a subscribed client over Streamable HTTP
// (docs/http.md#server-notifications), with the official MCP TypeScript SDK client against the
// mcpcore conformance fixture (examples/conformance_server). The host's update is raised by the
// fixture's tool test_trigger_resource_update (the server publishes resource_updated for
// test://static-text); two clients are connected, one subscribed to that URI and one not: the
// subscribed one gets notifications/resources/updated on its GET stream, the other gets nothing.
//
// Usage: node resource_updated.mjs <path-to-mcpcore-conformance-server>
//
// Prints one line per check, "ok - <name>" or "not ok - <name>: <why>"; the server is always
// killed by its PID at the end. Exit status: 0 when every check passed, 1 otherwise (also after
// the global timeout), 2 on bad usage.

import { existsSync } from 'node:fs';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  createChecks, expect, expectEqual, scratchRun, startGlobalTimer, startServerProcess, stopServerProcess, textOf, withTimeout,
} from './check.mjs';

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is larger). */
const GLOBAL_TIMEOUT_MS = 60_000;
/** The server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout handed to every SDK request. */
const REQUEST_TIMEOUT_MS = 15_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 20_000;
/** How long the subscribed client may wait for its notification after the trigger answered. */
const NOTIFICATION_WAIT_MS = 5_000;
/** How long the unsubscribed client is watched for a notification it must not get. */
const QUIET_WAIT_MS = 500;
/** After SIGTERM the server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 8_000;

const RESOURCE = 'test://static-text';
const TRIGGER = 'test_trigger_resource_update';

const serverBinary = process.argv[2];
if (!serverBinary) {
  process.stderr.write('usage: node resource_updated.mjs <path-to-mcpcore-conformance-server>\n');
  process.exit(2);
}
if (!existsSync(serverBinary)) {
  process.stderr.write(`resource_updated: no such file: ${serverBinary}\n`);
  process.exit(2);
}

const { check, describe, markInitialized, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

let server;
const { portFile, cleanup } = scratchRun('mcpcore-resource-updated-', () => server);
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);

let mcpUrl;
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

/** A connected SDK client (MCP 2025-11-25, a session and its GET stream) and the updates it received. */
async function connect(name) {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl));
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => { /* stream ends are reported here; the checks look at what arrived */ };
  const updates = [];
  let wake = () => {};
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    wake();
  });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  /** Resolves once an update arrived (or after `ms`). */
  const arrival = (ms) => new Promise((resolve) => {
    if (updates.length > 0) return resolve();
    wake = resolve;
    setTimeout(resolve, ms);
  });
  return { client, transport, updates, arrival };
}

let watcher;
let bystander;
// Named 'initialize': the other SDK checks run only once it passed (check.mjs).
await check('initialize', async () => {
  watcher = await connect('mcpcore-interop-watcher');
  bystander = await connect('mcpcore-interop-bystander');
  expect(watcher.transport.sessionId && bystander.transport.sessionId, 'a client has no session id');
  expect(watcher.transport.sessionId !== bystander.transport.sessionId, 'the two clients share a session');
  const caps = watcher.client.getServerCapabilities();
  expectEqual(caps?.resources?.subscribe, true, 'capabilities.resources.subscribe');
  markInitialized();
});

await check(`the watcher subscribes to ${RESOURCE}`, async () => {
  const r = await watcher.client.subscribeResource({ uri: RESOURCE }, { timeout: REQUEST_TIMEOUT_MS });
  expectEqual(JSON.stringify(r), '{}', 'resources/subscribe result');
  // The SDK opens the GET stream after initialization without waiting for it: give it a moment.
  await sleep(200);
});

await check('the host raises the update: the subscribed client gets notifications/resources/updated', async () => {
  const answer = await watcher.client.callTool({ name: TRIGGER, arguments: {} }, undefined,
                                               { timeout: REQUEST_TIMEOUT_MS });
  expectEqual(textOf(answer, TRIGGER), `${RESOURCE} updated`, 'the trigger\'s answer');
  await withTimeout(watcher.arrival(NOTIFICATION_WAIT_MS), NOTIFICATION_WAIT_MS + 1_000, 'no update');
  expectEqual(JSON.stringify(watcher.updates), JSON.stringify([RESOURCE]), 'the watcher\'s updates');
});

await check('the client that did not subscribe gets none', async () => {
  await bystander.arrival(QUIET_WAIT_MS);
  expectEqual(bystander.updates.length, 0, 'updates received by the bystander');
});

await check('after resources/unsubscribe the next update is not sent', async () => {
  await watcher.client.unsubscribeResource({ uri: RESOURCE }, { timeout: REQUEST_TIMEOUT_MS });
  watcher.updates.length = 0;
  await watcher.client.callTool({ name: TRIGGER, arguments: {} }, undefined, { timeout: REQUEST_TIMEOUT_MS });
  await watcher.arrival(QUIET_WAIT_MS);
  expectEqual(watcher.updates.length, 0, 'updates after unsubscribing');
});

for (const c of [watcher, bystander]) {
  if (c) await c.client.close();
}

await check('the server exits 0 on SIGTERM', async () => {
  const exit = await stopServerProcess(server, SERVER_EXIT_WAIT_MS);
  expect(!exit.killed, `the server did not exit within ${SERVER_EXIT_WAIT_MS} ms of SIGTERM (killed)`);
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
}, { needsSdk: false });

const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
