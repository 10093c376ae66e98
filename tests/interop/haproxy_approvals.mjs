// SPDX-License-Identifier: Apache-2.0
// Three mcpcore-host processes behind a real HAProxy, all keeping approvals and audit rows in ONE PostgreSQL
// database (--approvals-db, --audit-db; docs/scale-out.md#what-is-shared), reviewed by one mcpcore-admin (--db,
// --audit-db; docs/host-server.md#several-hosts-on-postgresql).
//
// Usage: node haproxy_approvals.mjs <mcpcore-host> <mcpcore-admin> <haproxy> <allow-list>
// Environment: MCPCORE_TEST_PG, the libpq connection string of the database (the ctest fixture's cluster).
//
// Starts three hosts (--server-id s1, s2, s3, each its own data directory, all with s1's token file), HAProxy with
// the configuration of docs/scale-out.md (both set up by haproxy_cluster.mjs), and mints a supervised token with
// mcpcore-admin. Checks, with plain 2026-07-28 requests (round robin, no session): a supervised delete_tag answers
// -32006 with an approval_id on one server; `mcpcore-admin --db ... pending` and `show` list it with the server it
// came from (the ticket's own `server`, with no audit database given); `approve --as alice` approves it;
// the recall lands on another server and runs (a tool result, not an error); a second recall is refused as used
// (-32003); the audit rows (`mcpcore-admin --audit-db ... audit --json`) hold exactly one consume of the ticket,
// each row with its server=; a second ticket approved the same way, recalled by 8 concurrent requests through the
// balancer, runs exactly once (one result, seven -32003, one consume row).
// The hosts also share events (--events-db, docs/scale-out.md#events-across-hosts): a 2026-07-28
// subscriptions/listen on host://tags held open on s1 (directly, not through the balancer) gets exactly one
// notifications/resources/updated when set_tag runs on s2 (directly). Approval decisions cross too
// (docs/host-server.md#approval-tickets-as-resources): the submitter reads host://approvals/<id> on s1 and s2 with the
// 2025-11-25 SDK client (another principal gets the unknown resource's -32002), subscribes to it on both, and
// `mcpcore-admin approve --events-db` makes each subscription get exactly one notifications/resources/updated, after
// which the read says approved; a third ticket rejected through s3's HTTP approval route (POST
// /api/v1/approvals/<id>/reject by an assured approver) reaches a subscription on s1 once, and the refused second
// reject (409) sends nothing.
//
// Prints one line per check ("ok - ..." / "not ok - ..."), then "# N passed, M failed" and "PASS" or "FAIL".
// Every process it started is killed at the end; the whole run is bounded by a global timeout.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  CheckFailure, checkArguments, createChecks, envelope, expect, expectEqual, fmt, guardRun, postModern, SseReader,
} from './check.mjs';
import { HaproxyCluster } from './haproxy_cluster.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 120 s). */
const GLOBAL_TIMEOUT_MS = 100_000;
/** Timeout of every request and of every mcpcore-admin run. */
const REQUEST_TIMEOUT_MS = 20_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 40_000;
/** The hosts' maintenance tick: how soon they load the minted token. */
const TICK_MS = 200;
/** Concurrent recalls of one approved ticket. */
const RACERS = 8;
/** An event raised on one host must reach a listen on another within this long. */
const NOTIFY_WITHIN_MS = 10_000;
/** After the first notification, how long the listen is watched for a duplicate. */
const QUIET_MS = 1_500;
/** After a decision reached every subscription, how long they are watched for a duplicate. */
const DECISION_QUIET_MS = 500;

const APPROVAL_REQUIRED = -32006;
const PERMISSION_DENIED = -32003;
const SERVERS = ['s1', 's2', 's3'];
const TAGS_URI = 'host://tags';
const RESOURCE_NOT_FOUND = -32002;
const CONFLICT = 409;
/** The approval ticket `id` as a resource (docs/host-server.md#approval-tickets-as-resources). */
const approvalUri = (id) => `host://approvals/${id}`;
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary, adminBinary, haproxyBinary, allowlist, ...extra] = process.argv.slice(2);
const pg = process.env.MCPCORE_TEST_PG ?? '';
checkArguments('haproxy_approvals.mjs', {
  ok: hostBinary && adminBinary && haproxyBinary && allowlist && extra.length === 0 && pg !== '',
  usage: 'usage: MCPCORE_TEST_PG=<conninfo> node haproxy_approvals.mjs <mcpcore-host> <mcpcore-admin> <haproxy> '
    + '<allow-list>',
  files: [hostBinary, adminBinary, haproxyBinary, allowlist],
});

/** The hosts and HAProxy (haproxy_cluster.mjs), in a scratch directory. */
const cluster = new HaproxyCluster({ prefix: 'mcpcore-haproxy-approvals-', hostBinary, haproxyBinary, allowlist,
  servers: SERVERS, clientName: 'mcpcore-haproxy-approvals', requestTimeoutMs: REQUEST_TIMEOUT_MS });
const globalTimer = guardRun(() => cluster.cleanup(), GLOBAL_TIMEOUT_MS);
const { check, checkWith, expectMcpError, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });
/** The SDK clients connected during the run (closed at the end). */
const sdkClients = [];

// ---- mcpcore-host and mcpcore-admin ---------------------------------------------------------------------

/** The arguments of host `name` on top of the cluster's: its server id and the shared database. */
const hostArgs = (name) => ['--tick-ms', String(TICK_MS), '--server-id', name, '--approvals-db', pg, '--audit-db', pg,
  '--events-db', pg];

/** Runs mcpcore-admin with `args`; resolves with {code, stdout, stderr}. */
function admin(...args) {
  return new Promise((resolve) => {
    execFile(adminBinary, args, { timeout: REQUEST_TIMEOUT_MS }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

// ---- clients --------------------------------------------------------------------------------------------

/** The audit rows (mcpcore-admin --audit-db audit --json) that record a consume of ticket `id`. */
async function consumeRows(id) {
  const r = await admin('--data-dir', cluster.dataDir('s1'), '--audit-db', pg, 'audit', '--tail', '5000', '--json');
  expectEqual(r.code, 0, `mcpcore-admin audit (stderr ${fmt(r.stderr)})`);
  const rows = JSON.parse(r.stdout);
  return rows.filter((row) => (row.detail ?? '').includes(`consumed approval_id=${id}`));
}

/** Mints a ticket with the supervised delete_tag: {id, server}. */
async function mintTicket(key) {
  const r = await cluster.call(agentToken, 'delete_tag', { key });
  expectEqual(r.message?.error?.code, APPROVAL_REQUIRED, `the supervised delete_tag's answer (${fmt(r.message)})`);
  const id = r.message.error.data?.approval_id;
  expect(/^[0-9a-f]{32}$/.test(id ?? ''), `approval_id ${fmt(r.message.error.data)}`);
  return { id, server: r.servedBy };
}

/** Approves ticket `id` with the shared mcpcore-admin as alice, telling the hosts (--events-db). */
async function approve(id) {
  const r = await admin('--data-dir', cluster.dataDir('s2'), '--db', pg, '--audit-db', pg, 'approve', id, '--as',
    'alice', '--yes', '--events-db', pg);
  expectEqual(r.code, 0, `mcpcore-admin approve (stdout ${fmt(r.stdout)}, stderr ${fmt(r.stderr)})`);
  expect(!r.stderr.includes('warning'), `mcpcore-admin approve warned: ${fmt(r.stderr)}`);
}


/**
 * A 2025-11-25 SDK 1.x client connected directly to host `name` with `bearer` (a session and its GET stream):
 * {client, updates}, `updates` the URIs of the notifications/resources/updated it received.
 */
async function sdkClient(name, bearer) {
  const transport = new StreamableHTTPClientTransport(new URL(cluster.hostUrl(name)),
    { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } });
  const client = new Client({ name: `mcpcore-haproxy-approvals-${name}`, version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => { /* the GET stream's end is reported here; the checks look at what arrived */ };
  const updates = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updates.push(n.params.uri); });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  sdkClients.push(client);
  return { client, updates };
}

/** Ticket `id` as host://approvals/<id> reads it through `client` (the ticket JSON). */
async function readTicket(client, id) {
  const r = await client.readResource({ uri: approvalUri(id) }, { timeout: REQUEST_TIMEOUT_MS });
  expectEqual([r.contents?.length, r.contents?.[0]?.uri, r.contents?.[0]?.mimeType],
    [1, approvalUri(id), 'application/json'], 'the read\'s [contents, uri, mimeType]');
  return JSON.parse(r.contents[0].text);
}

/**
 * Waits until every watcher got an update (at most NOTIFY_WITHIN_MS after `started`, a performance.now()), then
 * DECISION_QUIET_MS more for duplicates; returns how long after `started` the last first update came (ms).
 */
async function settle(watchers, started) {
  while (watchers.some((w) => w.updates.length === 0) && performance.now() - started < NOTIFY_WITHIN_MS) {
    await sleep(10);
  }
  const took = performance.now() - started;
  await sleep(DECISION_QUIET_MS);
  return took;
}

// ---- the run --------------------------------------------------------------------------------------------

let token;
let agentToken;
let url;
const tagKey = `k${randomBytes(6).toString('hex')}`;

await check('three mcpcore-host processes start on one PostgreSQL database, sharing the first one\'s token file', async () => {
  token = await cluster.startHosts(hostArgs);
}, { needsSdk: false });

await check('HAProxy starts and marks every server UP by GET /readyz', async () => {
  expect(cluster.hosts.size === SERVERS.length && token, 'the servers did not start');
  url = await cluster.startHaproxy();
}, { needsSdk: false });

let approverToken;

await check('mcpcore-admin mints a supervised token and an approver\'s; every server loads them', async () => {
  expect(url, 'the balancer did not start');
  // The approver first: once every server answers the agent's token, the file they loaded holds both.
  const approver = await admin('--data-dir', cluster.dataDir('s1'), 'token', 'mint', '--id', 'carol', '--tier',
    'supervised', '--kind', 'human_interactive', '--role', 'approver', '--assured');
  expectEqual(approver.code, 0, `mcpcore-admin token mint (stderr ${fmt(approver.stderr)})`);
  approverToken = approver.stdout.trim();
  const minted = await admin('--data-dir', cluster.dataDir('s1'), 'token', 'mint', '--id', 'agent', '--tier',
    'supervised');
  expectEqual(minted.code, 0, `mcpcore-admin token mint (stderr ${fmt(minted.stderr)})`);
  agentToken = minted.stdout.trim();
  // Every server answers the token (round robin: SERVERS.length calls in a row reach each).
  const deadline = performance.now() + 10_000;
  let loaded = new Set();
  while (loaded.size < SERVERS.length) {
    expect(performance.now() < deadline, `servers that accept the token: ${fmt([...loaded])}`);
    const r = await cluster.call(agentToken, 'get_memory', {});
    if (r.status === 200 && r.message?.result) loaded.add(r.servedBy);
    else await sleep(TICK_MS);
  }
}, { needsSdk: false });

await check('a listen on s1 gets one resources/updated when set_tag runs on s2 (--events-db)', async () => {
  expect(cluster.hosts.size === SERVERS.length && token, 'the servers did not start');
  const id = cluster.nextId();
  const listen = new AbortController();
  const request = { jsonrpc: '2.0', id, method: 'subscriptions/listen',
    params: { notifications: { resourceSubscriptions: [TAGS_URI] }, _meta: envelope(cluster.clientName) } };
  const response = await postModern(cluster.hostUrl('s1'), request, { bearer: token, signal: listen.signal });
  const stream = new SseReader(response);
  try {
    expectEqual([response.status, (response.headers.get('content-type') ?? '').split(';')[0]],
      [200, 'text/event-stream'], '[status, Content-Type] of the listen on s1');
    const ack = (await stream.next(REQUEST_TIMEOUT_MS))?.json;
    expectEqual([ack?.method, ack?.params?.notifications], ['notifications/subscriptions/acknowledged',
      { resourceSubscriptions: [TAGS_URI] }], `the listen's first frame (${fmt(ack)})`);
    const set = await cluster.call(token, 'set_tag', { key: `${tagKey}e`, value: 'v1' }, cluster.hostUrl('s2'));
    expect(set.message?.result !== undefined && !set.message.result.isError, `set_tag on s2: ${fmt(set.message)}`);
    const got = [];
    const started = performance.now();
    let firstAt;
    for (;;) {
      const wait = got.length === 0 ? NOTIFY_WITHIN_MS - (performance.now() - started) : QUIET_MS;
      let e;
      try {
        e = await stream.next(Math.max(1, wait));
      } catch (err) {
        if (!(err instanceof CheckFailure)) throw err;
        break;  // nothing more within the wait
      }
      expect(e !== null, `the listen ended after ${fmt(got)}`);
      if (e.json?.method === 'notifications/resources/updated') {
        got.push(e.json);
        firstAt ??= performance.now() - started;
      }
    }
    expectEqual(got.map((n) => [n.params?.uri, n.params?._meta?.[SUBSCRIPTION_ID]]), [[TAGS_URI, id]],
      `[uri, subscriptionId] of the resources/updated notifications on s1 within ${NOTIFY_WITHIN_MS} ms`);
    process.stdout.write(`# s1 got the update of ${TAGS_URI} in ${Math.round(firstAt)} ms\n`);
  } finally {
    listen.abort();
    await stream.cancel();
  }
}, { needsSdk: false });

const withAgent = checkWith(() => agentToken && url, 'the start');
let first;

await withAgent('a supervised delete_tag through the balancer answers -32006 with an approval_id', async () => {
  first = await mintTicket(tagKey);
  expect(SERVERS.includes(first.server), `minted on ${fmt(first.server)}`);
  process.stdout.write(`# ticket ${first.id} minted on ${first.server}\n`);
});

const withTicket = checkWith(() => first, 'the mint');

await withTicket('mcpcore-admin --db pending and show list the ticket with the server it came from, read from the ticket', async () => {
  // No --audit-db: the server is the ticket's own (approval_options::server_id of the minting host).
  const r = await admin('--data-dir', cluster.dataDir('s3'), '--db', pg, 'pending', '--json');
  expectEqual(r.code, 0, `mcpcore-admin pending (stderr ${fmt(r.stderr)})`);
  const mine = JSON.parse(r.stdout).find((t) => t.approval_id === first.id);
  expect(mine, `the ticket is not pending: ${fmt(r.stdout)}`);
  expectEqual(mine.server, first.server, 'the pending ticket\'s server');
  const text = await admin('--data-dir', cluster.dataDir('s3'), '--db', pg, 'pending');
  expect(text.stdout.includes(`from server ${first.server}`), `the text listing: ${fmt(text.stdout)}`);
  const shown = await admin('--data-dir', cluster.dataDir('s3'), '--db', pg, 'show', first.id, '--json');
  expectEqual(shown.code, 0, `mcpcore-admin show (stderr ${fmt(shown.stderr)})`);
  expectEqual(JSON.parse(shown.stdout).server, first.server, 'show --json: the ticket\'s server');
});

let watchers;
let firstApproved = false;

await withTicket('the submitter reads host://approvals/<id> on s1 and s2 (2025 SDK client), another principal gets -32002', async () => {
  watchers = [await sdkClient('s1', agentToken), await sdkClient('s2', agentToken)];
  for (const w of watchers) {
    const t = await readTicket(w.client, first.id);
    expectEqual([t.approval_id, t.status, t.tool, t.submitted_by], [first.id, 'pending', 'delete_tag', 'agent'],
      'the ticket [approval_id, status, tool, submitted_by]');
  }
  // The operator's token is neither the submitter nor an approver: the unknown resource's answer.
  const other = await sdkClient('s3', token);
  const foreign = await expectMcpError(other.client.readResource({ uri: approvalUri(first.id) },
    { timeout: REQUEST_TIMEOUT_MS }), RESOURCE_NOT_FOUND);
  const unknown = await expectMcpError(other.client.readResource({ uri: approvalUri('0'.repeat(32)) },
    { timeout: REQUEST_TIMEOUT_MS }), RESOURCE_NOT_FOUND);
  expectEqual(foreign.message.replace(first.id, '<id>'), unknown.message.replace('0'.repeat(32), '<id>'),
    'another principal\'s ticket and an unknown one: the same message');
});

const withWatchers = checkWith(() => first && watchers, 'the reads');

await withWatchers('mcpcore-admin approve --events-db: subscriptions on s1 and s2 each get one resources/updated, then read approved', async () => {
  for (const w of watchers) {
    const r = await w.client.subscribeResource({ uri: approvalUri(first.id) }, { timeout: REQUEST_TIMEOUT_MS });
    expectEqual(JSON.stringify(r), '{}', 'resources/subscribe result');
  }
  await sleep(200);  // the SDK opens its GET stream after initialization without waiting for it
  const started = performance.now();
  await approve(first.id);
  firstApproved = true;
  const took = await settle(watchers, started);
  expectEqual(watchers.map((w) => w.updates), [[approvalUri(first.id)], [approvalUri(first.id)]],
    `the updates on [s1, s2] within ${NOTIFY_WITHIN_MS} ms (+${DECISION_QUIET_MS} ms for duplicates)`);
  process.stdout.write(`# s1 and s2 got the decision ${Math.round(took)} ms after mcpcore-admin approve started\n`);
  const t = await readTicket(watchers[0].client, first.id);
  expectEqual([t.status, t.reviewed_by], ['approved', 'alice'], 'the ticket read on s1 after the approval');
});

await withWatchers('a reject through s3\'s HTTP approval route reaches a subscription on s1 once; the refused second reject nothing', async () => {
  const third = await mintTicket(`${tagKey}r`);
  const [watcher] = watchers;
  watcher.updates.length = 0;
  await watcher.client.subscribeResource({ uri: approvalUri(third.id) }, { timeout: REQUEST_TIMEOUT_MS });
  const route = `http://127.0.0.1:${cluster.hosts.get('s3').port}/api/v1/approvals/${third.id}/reject`;
  const reject = () => fetch(route, {
    method: 'POST', headers: { Authorization: `Bearer ${approverToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ comment: 'not now' }), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const started = performance.now();
  const once = await reject();
  expectEqual(once.status, 200, `the reject on s3 (${fmt(await once.text())})`);
  const again = await reject();
  expectEqual(again.status, CONFLICT, `the second reject on s3 (${fmt(await again.text())})`);
  await settle([watcher], started);
  expectEqual(watcher.updates, [approvalUri(third.id)], 'the updates on s1');
  const t = await readTicket(watcher.client, third.id);
  expectEqual([t.status, t.reviewed_by, t.review_comment], ['rejected', 'carol', 'not now'], 'the ticket read on s1');
});

await withTicket('the approved ticket\'s recall lands on another server and runs', async () => {
  if (!firstApproved) await approve(first.id);
  const r = await cluster.call(agentToken, 'delete_tag', { key: tagKey, approval_id: first.id });
  expect(r.servedBy !== first.server, `the recall was served by the minting server ${first.server}`);
  expect(r.message?.result !== undefined, `the recall did not run: ${fmt(r.message)}`);
  // The tags are each host's own: the tool ran and says so ("no tag ... on this host" is its answer).
  process.stdout.write(`# recalled on ${r.servedBy}: ${fmt(r.message.result.content?.[0]?.text)}\n`);
});

await withTicket('a second recall is refused as used (-32003); the audit rows hold one consume, with its server', async () => {
  const r = await cluster.call(agentToken, 'delete_tag', { key: tagKey, approval_id: first.id });
  expectEqual(r.message?.error?.code, PERMISSION_DENIED, `the second recall (${fmt(r.message)})`);
  const rows = await consumeRows(first.id);
  expectEqual(rows.length, 1, `consume rows of the ticket (${fmt(rows)})`);
  expect(/ server=s[123]$/.test(rows[0].detail) && !rows[0].detail.endsWith(`server=${first.server}`),
    `the consume row's server: ${fmt(rows[0].detail)}`);
});

await withAgent(`${RACERS} concurrent recalls of one approved ticket through the balancer run it once`, async () => {
  const second = await mintTicket(`${tagKey}x`);
  await approve(second.id);
  const answers = await Promise.all(Array.from({ length: RACERS },
    () => cluster.call(agentToken, 'delete_tag', { key: `${tagKey}x`, approval_id: second.id })));
  const ran = answers.filter((a) => a.message?.result !== undefined);
  const refused = answers.filter((a) => a.message?.error?.code === PERMISSION_DENIED);
  expect(ran.length === 1 && refused.length === RACERS - 1,
    `ran ${ran.length}, refused ${refused.length}: ${fmt(answers.map((a) => [a.servedBy, a.message]))}`);
  const servers = new Set(answers.map((a) => a.servedBy));
  expect(servers.size > 1, `the recalls all reached ${fmt([...servers])}`);
  expectEqual((await consumeRows(second.id)).length, 1, 'consume rows of the raced ticket');
});

for (const c of sdkClients) await c.close().catch(() => undefined);
const status = summary();
process.stdout.write(status === 0 ? 'PASS\n' : 'FAIL\n');
clearTimeout(globalTimer);
cluster.cleanup();
process.exit(status);
