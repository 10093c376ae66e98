// SPDX-License-Identifier: Apache-2.0
// The approvals page of mcpcore-host (P = /approvals, docs/host-server.md) in a real browser: headless Chromium
// (Debian `chromium`, driven over CDP by puppeteer-core, pinned in package.json; it never downloads a browser),
// with agents on the official MCP TypeScript SDK 1.x client and mcpcore-admin as a reviewer elsewhere.
//
// Usage: node approvals_page.mjs <mcpcore-host> <mcpcore-admin> <allow-list> <chromium> <screenshot-dir>
// (puppeteer-core needs Node >= 22.12: ctest runs it with the pinned `node` package's Node 22.)
//
// In a fresh data directory: starts mcpcore-host on an ephemeral 127.0.0.1 port and mints, with
// `mcpcore-admin token mint`, an approver (an assured human_interactive principal with the approver role), an agent
// (a supervised service principal) and a principal that is both (supervised, assured human, approver). Then:
//   - not signed in, P answers 303 to P/login; the approver signs in there (the queue page shows #whoami);
//     a wrong token gets the 401 page with #signin-error;
//   - the agent sets a tag and calls delete_tag (-32006 with an approval_id): the ticket's row appears on the
//     already-open queue page without a reload (a window marker survives, no navigation happened);
//   - the approver opens the ticket and approves it: the page says approved; the agent's recall runs the tool
//     once (a tool result; the tag is gone), a second recall is refused (-32003);
//   - a second ticket rejected with a comment: the recall is refused (-32003), the comment shows on the ticket
//     page and in the queue's recent decisions;
//   - a third ticket approved with `mcpcore-admin approve --as`: the open ticket page turns approved (and loses its
//     decide form) and the queue lists the decision, both without a reload;
//   - the dual principal's own ticket, seen signed in as that principal: no section#decide, p#own-ticket;
//   - hostile text (markup, an event handler, a quote breakout, U+202E, U+200B, BEL, ESC) in a ticket's arguments
//     (execute_instruction's free path argument) and in a reject comment: nothing runs (window.__pwned stays
//     undefined), the text shows verbatim, the invisible characters as span.cc escapes, and no
//     Content-Security-Policy violation was needed to stop it (violations are recorded and reported);
//   - a form on another origin that posts P/tickets/<id>/approve (a guessed csrf; none; a guessed csrf from a page
//     whose no-referrer policy makes the browser send `Origin: null`) gets 403 and the ticket stays pending
//     (mcpcore-admin show); a same-origin POST with a wrong csrf gets 403 too;
//   - on a second host started with --approvals-page-fresh-s 1, a decision from a sign-in older than that is sent to
//     P/login?reauth=1 (#reauth-notice) and the ticket stays pending;
//   - the pages' headers (Content-Security-Policy with frame-ancestors 'none', X-Frame-Options, nosniff,
//     Referrer-Policy same-origin, Cache-Control: no-store); the session cookie is HttpOnly and SameSite=Strict; an unknown
//     ticket is the 404 page; logging out clears the session.
// Saves approvals-queue.png, approvals-ticket.png and approvals-hostile.png into <screenshot-dir>.
// Prints one line per check ("ok - ..." / "not ok - ...") and "# N passed, M failed".
// Every process it started (the host, Chromium) is killed by its PID at the end; the run is bounded by a global
// timeout. Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import puppeteer from 'puppeteer-core';

import {
  checkArguments, createChecks, expect, expectEqual, fmt, killRunning, scratchRun, serverMessage,
  startGlobalTimer, startHost, stopServerProcess,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is 180 s). */
const GLOBAL_TIMEOUT_MS = 150_000;
/** The host must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Timeout of every MCP request, every mcpcore-admin run and every page load. */
const REQUEST_TIMEOUT_MS = 20_000;
/** A single check fails when it takes longer than this. */
const CHECK_TIMEOUT_MS = 45_000;
/** Bound on one DevTools protocol call to Chromium. */
const PROTOCOL_TIMEOUT_MS = 30_000;
/** A change (a new ticket, a decision) must reach an open page's live region within this long. */
const LIVE_WAIT_MS = 15_000;
/** The host's maintenance tick: how soon it loads a minted token. */
const TICK_MS = 200;
/** How long a freshly minted token may take to authenticate. */
const TOKEN_RELOAD_WAIT_MS = 5_000;
/** The second host's --approvals-page-fresh-s: a decision needs a sign-in younger than this (seconds). */
const FRESH_S = 1;
/** How long the re-authentication check waits after signing in, so that the sign-in is no longer fresh. */
const STALE_AFTER_MS = FRESH_S * 1000 + 500;
/** A host is given this long to exit on SIGTERM before it is killed. */
const SERVER_EXIT_WAIT_MS = 10_000;

// ---- what the run uses ----------------------------------------------------------------------------------

const APPROVAL_REQUIRED = -32006;
const PERMISSION_DENIED = -32003;
const APPROVER = 'page-approver';
const AGENT = 'page-agent';
const DUAL = 'page-dual';
const ADMIN_REVIEWER = 'console-reviewer';
const PREFIX = '/approvals';
const VIEWPORT = { width: 1280, height: 860 };
/** The Content-Security-Policy every page carries (the page contract), directive by directive. */
const EXPECTED_CSP = {
  'default-src': "'none'", 'script-src': "'self'", 'style-src': "'self'", 'img-src': "'self'",
  'connect-src': "'self'", 'form-action': "'self'", 'frame-ancestors': "'none'", 'base-uri': "'none'",
};
/** Markup that runs script if it is ever parsed as HTML: each sets window.__pwned. */
const MARKUP = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'
  + '"\'><svg onload=window.__pwned=1>';
/** The invisible and control characters, and the escape the page must show for each. */
const INVISIBLE = [['\u202e', '\\u202e'], ['\u200b', '\\u200b'], ['\u0007', '\\u0007'], ['\u001b', '\\u001b']];
/** The hostile text: markup, then each invisible character between letters. */
const HOSTILE = `${MARKUP} a${INVISIBLE.map(([c]) => c).join('b')}c`;

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary, adminBinary, allowlist, chromium, shotDir, ...extra] = process.argv.slice(2);
checkArguments('approvals_page.mjs', {
  ok: hostBinary && adminBinary && allowlist && chromium && shotDir && extra.length === 0,
  usage: 'usage: node approvals_page.mjs <mcpcore-host> <mcpcore-admin> <allow-list> <chromium> <screenshot-dir>',
  files: [hostBinary, adminBinary, allowlist, chromium],
});
mkdirSync(shotDir, { recursive: true });

let host;
/** The second host, whose decisions need a sign-in younger than FRESH_S (the re-authentication check). */
let freshHost;
let browser;
let evilServer;
const { work, portFile, cleanup: cleanupScratch } = scratchRun('mcpcore-approvals-page-', () => host);
const dataDir = join(work, 'data');
const cleanup = () => {
  killRunning([browser?.process(), freshHost].filter(Boolean));
  if (evilServer) {
    evilServer.closeAllConnections();
    evilServer.close();
    evilServer = undefined;
  }
  cleanupScratch();
};
process.on('exit', cleanup);
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);
const { check, checkWith, expectMcpError, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

// ---- mcpcore-admin and the SDK client -------------------------------------------------------------------

/** Runs mcpcore-admin with `args` on the data directory `dir`; resolves with {code, stdout, stderr}. */
function adminIn(dir, ...args) {
  return new Promise((resolve) => {
    execFile(adminBinary, ['--data-dir', dir, ...args], { timeout: REQUEST_TIMEOUT_MS }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs mcpcore-admin with `args` on the test's (first host's) data directory. */
const admin = (...args) => adminIn(dataDir, ...args);

/** Mints a token in data directory `dir` with `mcpcore-admin token mint --id id ...flags`; resolves with it. */
async function mintIn(dir, id, ...flags) {
  const r = await adminIn(dir, 'token', 'mint', '--id', id, ...flags);
  expectEqual(r.code, 0, `mcpcore-admin token mint --id ${id} (stderr ${fmt(r.stderr)})`);
  const token = r.stdout.trim();
  expect(/^[A-Za-z0-9_-]{43}$/.test(token), `the minted token ${fmt(token)}`);
  return token;
}

/** The ticket as `mcpcore-admin show <id> --json` prints it. */
async function showTicket(id) {
  const r = await admin('show', id, '--json');
  expectEqual(r.code, 0, `mcpcore-admin show (stderr ${fmt(r.stderr)})`);
  return JSON.parse(r.stdout);
}

const opts = { timeout: REQUEST_TIMEOUT_MS };
const sdkClients = [];

/** An SDK 1.x client connected with `token` to `url` (the first host by default), retried until the token loads. */
async function sdkClient(name, token, url = mcpUrl) {
  const deadline = Date.now() + TOKEN_RELOAD_WAIT_MS;
  for (;;) {
    const transport = new StreamableHTTPClientTransport(new URL(url),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
    client.onerror = () => { /* the GET stream's end is reported here; the checks look at results */ };
    try {
      await client.connect(transport, opts);
      sdkClients.push(client);
      return client;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(TICK_MS);
    }
  }
}

/** Calls `tool` with `args` through `client`; it must answer a tool result that is not an error. */
async function callOk(client, tool, args) {
  const r = await client.callTool({ name: tool, arguments: args }, undefined, opts);
  expect(!r.isError, `${tool} answered an error: ${fmt(r)}`);
  return r;
}

/** `client` sets tag `key`, then asks to delete it: -32006; resolves with the approval_id. */
async function ticketFor(client, key) {
  await callOk(client, 'set_tag', { key, value: 'to be deleted' });
  return approvalIdOf(client, 'delete_tag', { key });
}

/** `client` calls `tool` with `args`, which must answer -32006; resolves with its approval_id. */
async function approvalIdOf(client, tool, args) {
  const refused = await expectMcpError(client.callTool({ name: tool, arguments: args }, undefined, opts),
    APPROVAL_REQUIRED);
  const id = refused.data?.approval_id;
  expect(/^[0-9a-f]{32}$/.test(id ?? ''), `approval_id ${fmt(refused.data)}`);
  return id;
}

/** The tag keys the agent's get_tags lists. */
async function tagKeys(client) {
  const r = await client.callTool({ name: 'get_tags', arguments: {} }, undefined, opts);
  return (r.structuredContent?.tags ?? []).map((t) => t.key);
}

// ---- the browser ----------------------------------------------------------------------------------------

/** Content-Security-Policy violations reported by any page, as {page, directive, blocked, sample}. */
const cspViolations = [];
/** Uncaught page errors and console errors, for the report. */
const pageProblems = [];

/**
 * A new tab in `context`, named `name` in reports: records CSP violations (a listener installed before any page
 * script), main-frame navigations (`page.navigations`), page errors and console errors.
 */
async function newTab(context, name) {
  const page = await context.newPage();
  await page.setViewport(VIEWPORT);
  page.setDefaultTimeout(REQUEST_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(REQUEST_TIMEOUT_MS);
  await page.exposeFunction('__mcpcoreReportCsp', (v) => { cspViolations.push({ page: name, ...v }); });
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__mcpcoreReportCsp({ url: document.URL, directive: e.violatedDirective, blocked: e.blockedURI,
        sample: e.sample });
    });
  });
  page.navigations = [];
  page.on('framenavigated', (frame) => { if (frame === page.mainFrame()) page.navigations.push(frame.url()); });
  page.on('pageerror', (error) => { pageProblems.push(`${name}: page error: ${error.message}`); });
  page.on('console', (m) => { if (m.type() === 'error') pageProblems.push(`${name}: console error: ${m.text()}`); });
  return page;
}

/**
 * Clicks `selector` on `page` and waits for the navigation it starts; resolves with the final response. The tab is
 * brought to the front first: a click dispatched to a background tab of the context is not delivered.
 */
async function clickAndWait(page, selector) {
  await page.bringToFront();
  const [response] = await Promise.all([page.waitForNavigation(), page.click(selector)]);
  return response;
}

/**
 * Fails unless a decision's POST, answered 303 (one hop), ended on ticket `id`'s page with 200. The contract's
 * Location is P/tickets/<id>; a query after it (a notice of the outcome) is accepted and reported.
 */
function expectDecisionLanded(response, id, what) {
  const url = new URL(response.url());
  const hops = response.request().redirectChain().map((r) => r.response()?.status());
  expectEqual([`${url.origin}${url.pathname}`, response.status(), hops], [`${base}/tickets/${id}`, 200, [303]],
    `${what}: [where it ended, its status, the POST's answer]`);
  if (url.search !== '') {
    process.stdout.write(`# ${what} ended on ${url.pathname}${url.search} (a query after the contract's Location)\n`);
  }
}

/** Signs in on P/login in `page` with `credential`; resolves with the response of the form's POST (redirected). */
async function signIn(page, credential) {
  await page.goto(`${base}/login`);
  await page.waitForSelector('form#signin input#credential[type=password]');
  await page.type('#credential', credential);
  return clickAndWait(page, '#signin-submit');
}

/** What `page` says went wrong (#signin-error or the message page's #error), for a failure message. */
async function pageError(page) {
  return (await textOf(page, '#signin-error')) ?? (await textOf(page, '#error')) ?? '(no error text)';
}

/** The text of `selector` on `page` (null when absent). */
function textOf(page, selector) {
  return page.$eval(selector, (e) => e.textContent).catch(() => null);
}

/**
 * Sets a fresh marker on the window of each of `pages`, runs `wait`, then fails unless every marker is still there
 * and no main-frame navigation happened meanwhile: `wait` was satisfied by the pages' own script, without a reload.
 */
async function withoutReload(pages, what, wait) {
  const marker = randomBytes(8).toString('hex');
  const before = [];
  for (const page of pages) {
    await page.evaluate((m) => { window.__mcpcoreMarker = m; }, marker);
    before.push(page.navigations.length);
  }
  await wait();
  for (const [i, page] of pages.entries()) {
    expectEqual(page.navigations.slice(before[i]), [], `navigations while waiting for ${what}`);
    expectEqual(await page.evaluate(() => window.__mcpcoreMarker), marker, `the window marker after ${what}`);
  }
}

/** Waits (at most LIVE_WAIT_MS) for `selector` on `page`; fails naming `what`. */
async function liveSelector(page, selector, what) {
  try {
    return await page.waitForSelector(selector, { timeout: LIVE_WAIT_MS });
  } catch {
    const live = await page.$eval('#live', (e) => e.innerHTML).catch(() => '(no #live)');
    return expect(false, `${what}: no ${selector} within ${LIVE_WAIT_MS} ms; #live holds ${fmt(live)}`);
  }
}

/**
 * How `page` shows untrusted text inside `selector`: its textContent, the span.cc escapes, whether a raw
 * invisible/control character remains, and the elements the markup would have created.
 */
function shown(page, selector) {
  return page.$eval(selector, (e, raw) => ({
    text: e.textContent,
    cc: [...e.querySelectorAll('span.cc')].map((s) => s.textContent),
    raw: raw.filter((c) => e.textContent.includes(c)).map((c) => c.codePointAt(0)),
    elements: e.querySelectorAll('script, img, svg, iframe, object, embed').length,
  }), INVISIBLE.map(([c]) => c));
}

/**
 * Fails unless `s` (from shown()) shows each of `parts` as text, created no element and kept no raw invisible or
 * control character; with `escapes`, each invisible character must also show as its span.cc escape (a summary
 * such as the queue's may shorten the text, so it is held only to the first three).
 */
function expectInert(s, what, parts, { escapes = true } = {}) {
  for (const part of parts) expect(s.text.includes(part), `${what}: ${fmt(part)} is not shown as text: ${fmt(s.text)}`);
  expectEqual(s.elements, 0, `${what}: elements created from the text`);
  expectEqual(s.raw, [], `${what}: raw invisible/control characters (code points) left in the text`);
  if (!escapes) return;
  for (const [, escape] of INVISIBLE) {
    expect(s.cc.includes(escape), `${what}: no span.cc reading ${fmt(escape)} (span.cc: ${fmt(s.cc)})`);
  }
}

/** The approver's ticket tab (opened on first use). */
async function ticketPage() {
  ticketTab ??= await newTab(context, 'ticket');
  return ticketTab;
}

/** Saves a full-page screenshot of `page` as `file` in the screenshot directory. */
async function screenshot(page, file) {
  const path = join(shotDir, file);
  await page.screenshot({ path, fullPage: true });
  process.stdout.write(`# screenshot ${path}\n`);
}

// ---- the run --------------------------------------------------------------------------------------------

let mcpUrl;
let base;
let origin;
let approverToken;
let agentToken;
let dualToken;
let agent;
let context;
let queue;
let ticketTab;
const key = (n) => `page.t${n}.${process.pid}`;

await check('mcpcore-host starts; mcpcore-admin mints an approver, a supervised agent and a principal that is both', async () => {
  const started = await startHost(hostBinary,
    { dataDir, portFile, allowlist, tickMs: TICK_MS, waitMs: PORT_FILE_WAIT_MS });
  host = started.child;
  mcpUrl = started.url;
  origin = `http://127.0.0.1:${started.port}`;
  base = `${origin}${PREFIX}`;
  approverToken = await mintIn(dataDir, APPROVER, '--tier', 'readonly', '--kind', 'human_interactive',
    '--role', 'approver', '--assured');
  agentToken = await mintIn(dataDir, AGENT, '--tier', 'supervised', '--kind', 'service');
  dualToken = await mintIn(dataDir, DUAL, '--tier', 'supervised', '--kind', 'human_interactive', '--role', 'approver',
    '--assured');
  agent = await sdkClient('mcpcore-approvals-page-agent', agentToken);
}, { needsSdk: false });

await check('headless Chromium starts (puppeteer-core over CDP, the system browser)', async () => {
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    // Chromium's sandbox cannot run as root (CI containers): only then is it turned off.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    userDataDir: join(work, 'chromium'),
    protocolTimeout: PROTOCOL_TIMEOUT_MS,
    timeout: REQUEST_TIMEOUT_MS,
  });
  process.stdout.write(`# ${await browser.version()}\n`);
  context = await browser.createBrowserContext();
  queue = await newTab(context, 'queue');
}, { needsSdk: false });

const withBrowser = checkWith(() => queue && agent, 'the start');

await withBrowser('not signed in, P answers 303 to P/login, which sets the login nonce cookie', async () => {
  const response = await queue.goto(base);
  const chain = response.request().redirectChain();
  const hops = chain.map((r) => [r.url(), r.response()?.status(),
    new URL(r.response()?.headers().location ?? '', r.url()).href]);
  expectEqual(hops, [[base, 303, `${base}/login`]], 'the redirect chain of GET P: [url, status, Location]');
  expectEqual([response.url(), response.status()], [`${base}/login`, 200], 'where GET P ended');
  const nonce = (await context.cookies()).find((c) => c.name === 'mcpcore_signin');
  expectEqual([nonce?.httpOnly, nonce?.sameSite, nonce?.path], [true, 'Strict', PREFIX],
    `the mcpcore_signin cookie's [HttpOnly, SameSite, Path] (${fmt(nonce)})`);
});

let signedIn = false;

await withBrowser('the approver signs in on P/login; the queue page shows #whoami', async () => {
  const response = await signIn(queue, approverToken);
  expectEqual([response.url(), response.status()], [base, 200],
    `where the sign-in ended (the page says ${fmt(await pageError(queue))})`);
  expectEqual(response.request().redirectChain().map((r) => r.response()?.status()), [303],
    'the POST P/login answer');
  expect(await queue.$('main#queue'), 'no main#queue');
  expectEqual(await textOf(queue, '#whoami'), APPROVER, '#whoami');
  expect(await queue.$('form#logout button#logout-submit'), 'no form#logout with #logout-submit');
  const live = await queue.$eval('div#live', (e) => [e.dataset.liveUrl, e.dataset.intervalMs]).catch(() => null);
  expect(live && live[0] && /^[1-9][0-9]*$/.test(live[1] ?? ''),
    `#live's data-live-url, data-interval-ms: ${fmt(live)}`);
  process.stdout.write(`# the queue's live region polls ${live[0]} every ${live[1]} ms\n`);
  signedIn = true;
});

await withBrowser('a wrong token gets the 401 page with #signin-error', async () => {
  const other = await browser.createBrowserContext();
  try {
    const tab = await newTab(other, 'wrong-token');
    const response = await signIn(tab, randomBytes(32).toString('base64url'));
    expectEqual(response.status(), 401,
      `the status of the refused sign-in (the page says ${fmt(await pageError(tab))})`);
    expect(await tab.$('#signin-error'), 'no #signin-error on the 401 page');
    expect(!(await other.cookies()).some((c) => c.name === 'mcpcore_session'), 'a session cookie was set');
  } finally {
    await other.close();
  }
});

const withQueue = checkWith(() => queue && agent && signedIn, 'the sign-in');
let first;

await withQueue('the agent\'s delete_tag (-32006) appears on the open queue page without a reload', async () => {
  await withoutReload([queue], 'the new ticket\'s row', async () => {
    first = await ticketFor(agent, key(1));
    await liveSelector(queue, `table#pending tr.ticket[data-id="${first}"]`, 'the ticket\'s row');
  });
  const row = await queue.$eval(`tr.ticket[data-id="${first}"]`, (tr) => ({
    tool: tr.querySelector('td.tool')?.textContent.trim(),
    submitter: tr.querySelector('td.submitter')?.textContent.trim(),
    cells: ['td.age', 'td.left', 'td.args'].map((s) => tr.querySelector(s) !== null),
    args: tr.querySelector('td.args')?.textContent,
    open: tr.querySelector('a.open')?.getAttribute('href'),
  }));
  expectEqual([row.tool, row.submitter, row.cells], ['delete_tag', AGENT, [true, true, true]],
    'the row\'s [td.tool, td.submitter, td.age/td.left/td.args present]');
  expect(row.args?.includes(key(1)), `td.args does not show the key: ${fmt(row.args)}`);
  expect(new URL(row.open ?? '', base).href === `${base}/tickets/${first}`, `a.open's href ${fmt(row.open)}`);
});

const withFirst = checkWith(() => first && queue, 'the first ticket');

await withFirst('the approver opens the ticket and approves it; the page says approved', async () => {
  await ticketPage();
  const response = await ticketTab.goto(`${base}/tickets/${first}`);
  expectEqual(response.status(), 200, 'GET P/tickets/<id>');
  expectEqual(await ticketTab.$eval('main#ticket-page', (e) => e.dataset.id).catch(() => null), first,
    'main#ticket-page[data-id]');
  expectEqual(await ticketTab.$eval('#ticket-state', (e) => e.dataset.status).catch(() => null), 'pending',
    '#ticket-state[data-status]');
  expectEqual([await textOf(ticketTab, '#ticket-tool'), await textOf(ticketTab, '#ticket-submitter')],
    ['delete_tag', AGENT], '[#ticket-tool, #ticket-submitter]');
  expect((await textOf(ticketTab, '#arguments'))?.includes(key(1)), 'the arguments do not show the key');
  expect(await ticketTab.$('section#decide form#approve button#approve-submit'), 'no #approve-submit');
  expect(await ticketTab.$('section#decide form#reject textarea#comment[name=comment]'), 'no textarea#comment');
  await screenshot(ticketTab, 'approvals-ticket.png');
  const decided = await clickAndWait(ticketTab, '#approve-submit');
  expectDecisionLanded(decided, first, 'the approval');
  expectEqual(await ticketTab.$eval('#ticket-state', (e) => e.dataset.status), 'approved',
    '#ticket-state[data-status] after approving');
  expectEqual(await textOf(ticketTab, '#decision #reviewer'), APPROVER, '#reviewer');
  expect(!(await ticketTab.$('section#decide')), 'section#decide is still shown on a decided ticket');
});

await withFirst('the agent\'s recall runs delete_tag once (the tag is gone); a second recall is refused (-32003)', async () => {
  await callOk(agent, 'delete_tag', { key: key(1), approval_id: first });
  expect(!(await tagKeys(agent)).includes(key(1)), 'the tag is still there after the approved recall');
  const again = await expectMcpError(agent.callTool({ name: 'delete_tag',
    arguments: { key: key(1), approval_id: first } }, undefined, opts), PERMISSION_DENIED);
  expectEqual(serverMessage(again), 'approval already used (one-time ticket)', 'the second recall\'s message');
});

let second;
const COMMENT = 'not this one: the tag is still in use';

await withQueue('a second ticket rejected with a comment: the recall is refused (-32003), the comment shows', async () => {
  second = await ticketFor(agent, key(2));
  await ticketPage();
  await ticketTab.goto(`${base}/tickets/${second}`);
  await ticketTab.type('textarea#comment', COMMENT);
  const decided = await clickAndWait(ticketTab, '#reject-submit');
  expectDecisionLanded(decided, second, 'the rejection');
  expectEqual(await ticketTab.$eval('#ticket-state', (e) => e.dataset.status), 'rejected',
    '#ticket-state[data-status]');
  expectEqual([await textOf(ticketTab, '#reviewer'), await textOf(ticketTab, '#review-comment')], [APPROVER, COMMENT],
    '[#reviewer, #review-comment]');
  const refused = await expectMcpError(agent.callTool({ name: 'delete_tag',
    arguments: { key: key(2), approval_id: second } }, undefined, opts), PERMISSION_DENIED);
  expectEqual(serverMessage(refused), 'approval was rejected', 'the recall\'s message');
  expect((await tagKeys(agent)).includes(key(2)), 'the tag of the rejected request is gone');
  const row = await liveSelector(queue, `table#recent tr.decision[data-id="${second}"][data-status="rejected"]`,
    'the rejection in the queue\'s recent decisions');
  expectEqual(await row.$eval('td.comment', (e) => e.textContent.trim()).catch(() => null), COMMENT,
    'the queue\'s td.comment');
  await liveSelector(queue, `table#recent tr.decision[data-id="${first}"][data-status="approved"]`,
    'the first approval in the queue\'s recent decisions');
});

await withQueue('a ticket approved with mcpcore-admin shows up on the open ticket page and the queue without a reload', async () => {
  const third = await ticketFor(agent, key(3));
  await ticketPage();
  await ticketTab.goto(`${base}/tickets/${third}`);
  expect(await ticketTab.$('section#decide'), 'no section#decide on the pending ticket');
  await withoutReload([ticketTab, queue], 'the decision made elsewhere', async () => {
    const r = await admin('approve', third, '--as', ADMIN_REVIEWER, '--yes');
    expectEqual(r.code, 0, `mcpcore-admin approve (stdout ${fmt(r.stdout)}, stderr ${fmt(r.stderr)})`);
    await liveSelector(ticketTab, '#ticket-state[data-status="approved"]', 'the approved state');
    await liveSelector(queue, `table#recent tr.decision[data-id="${third}"][data-status="approved"]`,
      'the approval in the queue\'s recent decisions');
  });
  expectEqual(await textOf(ticketTab, '#reviewer'), ADMIN_REVIEWER, 'the ticket page\'s #reviewer');
  expect(!(await ticketTab.$('section#decide')), 'the script left section#decide on the approved ticket');
  expectEqual(await queue.$eval(`tr.decision[data-id="${third}"] td.reviewer`, (e) => e.textContent.trim())
    .catch(() => null), ADMIN_REVIEWER, 'the queue\'s td.reviewer');
  expect(!(await queue.$(`tr.ticket[data-id="${third}"]`)), 'the approved ticket is still listed as pending');
});

await withQueue('a submitter who is an approver sees no decide form on their own ticket (p#own-ticket)', async () => {
  const dual = await sdkClient('mcpcore-approvals-page-dual', dualToken);
  const own = await ticketFor(dual, key(4));
  const other = await browser.createBrowserContext();
  try {
    const tab = await newTab(other, 'dual');
    const response = await signIn(tab, dualToken);
    expectEqual([response.url(), await textOf(tab, '#whoami')], [base, DUAL], '[where the sign-in ended, #whoami]');
    await tab.goto(`${base}/tickets/${own}`);
    expectEqual(await tab.$eval('#ticket-state', (e) => e.dataset.status).catch(() => null), 'pending',
      '#ticket-state[data-status]');
    expect(!(await tab.$('section#decide')), 'section#decide is shown to the submitter');
    expect(!(await tab.$('#approve-submit')), '#approve-submit is shown to the submitter');
    expect(await tab.$('p#own-ticket'), 'no p#own-ticket');
  } finally {
    await other.close();
  }
  // The approver sees the form on the same ticket.
  await ticketPage();
  await ticketTab.goto(`${base}/tickets/${own}`);
  expect(await ticketTab.$('section#decide'), 'no section#decide for another approver');
});

let hostile;
const HOSTILE_PATH = `/${HOSTILE}`;
const HOSTILE_COMMENT = `${HOSTILE} \\ end`;

await withQueue('hostile text in a ticket\'s arguments shows as inert text, invisible characters as span.cc', async () => {
  hostile = await approvalIdOf(agent, 'execute_instruction', { command: 'list_directory', args: [HOSTILE_PATH] });
  await liveSelector(queue, `tr.ticket[data-id="${hostile}"]`, 'the hostile ticket\'s row');
  await screenshot(queue, 'approvals-queue.png');
  expectInert(await shown(queue, `tr.ticket[data-id="${hostile}"] td.args`), 'the queue\'s td.args',
    ['<script>window.__pwned=1</script>'], { escapes: false });
  await ticketPage();
  await ticketTab.goto(`${base}/tickets/${hostile}`);
  expectEqual(await textOf(ticketTab, '#ticket-tool'), 'execute_instruction', '#ticket-tool');
  expectInert(await shown(ticketTab, '#arguments'), 'the ticket page\'s #arguments',
    ['<script>window.__pwned=1</script>', '<img src=x onerror=', '<svg onload=window.__pwned=1>']);
  for (const [name, tab] of [['queue', queue], ['ticket', ticketTab]]) {
    expectEqual(await tab.evaluate(() => typeof window.__pwned), 'undefined', `window.__pwned on the ${name} page`);
  }
});

await withQueue('a hostile reject comment shows as inert text on the ticket page and in the queue', async () => {
  expect(hostile, 'no hostile ticket');
  await ticketPage();
  await ticketTab.$eval('textarea#comment', (e, v) => { e.value = v; }, HOSTILE_COMMENT);
  const decided = await clickAndWait(ticketTab, '#reject-submit');
  expectDecisionLanded(decided, hostile, 'the hostile rejection');
  expectEqual(await ticketTab.$eval('#ticket-state', (e) => e.dataset.status), 'rejected',
    '#ticket-state[data-status]');
  const parts = [MARKUP, ' \\\\ end'];
  expectInert(await shown(ticketTab, '#review-comment'), '#review-comment', parts);
  await screenshot(ticketTab, 'approvals-hostile.png');
  const row = `table#recent tr.decision[data-id="${hostile}"]`;
  await liveSelector(queue, row, 'the hostile rejection in the queue');
  expectInert(await shown(queue, `${row} td.comment`), 'the queue\'s td.comment', ['<script>window.__pwned=1</script>'],
    { escapes: false });
  for (const [name, tab] of [['queue', queue], ['ticket', ticketTab]]) {
    expectEqual(await tab.evaluate(() => typeof window.__pwned), 'undefined', `window.__pwned on the ${name} page`);
  }
});

await withQueue('no Content-Security-Policy violation was needed: escaping alone kept the hostile text inert', async () => {
  expectEqual(cspViolations, [], 'the securitypolicyviolation events of every page');
});

let target;

await withQueue('a cross-origin form posting approve gets 403 (guessed csrf, none, Origin: null); the ticket stays pending', async () => {
  target = await ticketFor(agent, key(5));
  const approveUrl = `${base}/tickets/${target}/approve`;
  const guess = `<input type="hidden" name="csrf" value="${randomBytes(32).toString('base64url')}">`;
  // Each form: [its csrf field, a head of its own, the Origin the browser must send with its post]. With
  // Referrer-Policy no-referrer a browser sends `Origin: null` (the Fetch standard), as from a sandboxed frame.
  const forms = {
    '/guess': [guess, '', 'page'],
    '/absent': ['', '', 'page'],
    '/null-origin': [guess, '<meta name="referrer" content="no-referrer">', 'null'],
  };
  evilServer = createServer((req, res) => {
    const form = forms[new URL(req.url, 'http://x').pathname];
    if (form === undefined) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(`<!doctype html>${form[1]}<title>elsewhere</title><form method="post" action="${approveUrl}">${form[0]}`
      + '<input type="hidden" name="comment" value="approved from elsewhere"></form>'
      + '<script>document.forms[0].submit();</script>');
  });
  await new Promise((resolve) => evilServer.listen(0, '127.0.0.1', resolve));
  const evilOrigin = `http://127.0.0.1:${evilServer.address().port}`;
  const tab = await newTab(context, 'elsewhere');
  try {
    for (const path of Object.keys(forms)) {
      const post = tab.waitForResponse((r) => r.url() === approveUrl && r.request().method() === 'POST',
        { timeout: REQUEST_TIMEOUT_MS });
      await tab.goto(`${evilOrigin}${path}`);
      const response = await post;
      const sent = response.request().headers().origin;
      expectEqual([response.status(), sent], [403, forms[path][2] === 'null' ? 'null' : evilOrigin],
        `[status, Origin] of the post from ${evilOrigin}${path}`);
    }
  } finally {
    await tab.close();
  }
  const t = await showTicket(target);
  expectEqual([t.status, t.reviewed_by ?? null], ['pending', null], 'the ticket after the posts (mcpcore-admin show)');
});

await withQueue('a same-origin POST with a wrong csrf gets 403; the ticket stays pending', async () => {
  expect(target, 'no target ticket');
  await ticketPage();
  await ticketTab.goto(`${base}/tickets/${target}`);
  const status = await ticketTab.evaluate(async (url) => {
    const r = await fetch(url, { method: 'POST', body: new URLSearchParams({ csrf: 'A'.repeat(43) }),
      redirect: 'manual' });
    return r.status;
  }, `${base}/tickets/${target}/approve`);
  expectEqual(status, 403, 'the status of the wrong-csrf POST');
  expectEqual((await showTicket(target)).status, 'pending', 'the ticket after the POST (mcpcore-admin show)');
});

await withBrowser('a decision from a sign-in older than the fresh age goes to P/login?reauth=1 (#reauth-notice); nothing is decided', async () => {
  const dir = join(work, 'data-fresh');
  const started = await startHost(hostBinary, { dataDir: dir, portFile: join(work, 'port-fresh'), allowlist,
    tickMs: TICK_MS, waitMs: PORT_FILE_WAIT_MS, extraArgs: ['--approvals-page-fresh-s', String(FRESH_S)] });
  freshHost = started.child;
  const freshBase = `http://127.0.0.1:${started.port}${PREFIX}`;
  const approverFresh = await mintIn(dir, APPROVER, '--tier', 'readonly', '--kind', 'human_interactive',
    '--role', 'approver', '--assured');
  const agentFresh = await sdkClient('mcpcore-approvals-page-fresh-agent',
    await mintIn(dir, AGENT, '--tier', 'supervised', '--kind', 'service'), started.url);
  const id = await ticketFor(agentFresh, key(6));
  const other = await browser.createBrowserContext();
  try {
    const tab = await newTab(other, 'fresh');
    await tab.goto(`${freshBase}/login`);
    await tab.type('#credential', approverFresh);
    const signed = await clickAndWait(tab, '#signin-submit');
    expectEqual(signed.url(), freshBase, `where the sign-in ended (the page says ${fmt(await pageError(tab))})`);
    await tab.goto(`${freshBase}/tickets/${id}`);
    await sleep(STALE_AFTER_MS);
    const response = await clickAndWait(tab, '#approve-submit');
    const hops = response.request().redirectChain().map((r) => r.response()?.status());
    expectEqual([response.url(), hops], [`${freshBase}/login?reauth=1`, [303]], 'where the stale decision ended');
    expect(await tab.$('#reauth-notice'), 'no #reauth-notice on the sign-in page');
  } finally {
    await other.close();
  }
  const t = await adminIn(dir, 'show', id, '--json');
  expectEqual(JSON.parse(t.stdout || '{}').status, 'pending', `the ticket after the stale decision (${fmt(t.stderr)})`);
  const exit = await stopServerProcess(freshHost, SERVER_EXIT_WAIT_MS);
  expectEqual([exit.code, exit.signal], [0, null], 'the second host\'s exit on SIGTERM');
});

await withQueue('the pages carry the contract\'s security headers; the session cookie is HttpOnly and SameSite=Strict', async () => {
  const pages = [['the queue page', base], ['the ticket page', `${base}/tickets/${target ?? first}`]];
  for (const [what, url] of pages) {
    const response = await queue.goto(url);
    expectEqual(response.status(), 200, `${what}'s status`);
    const h = response.headers();
    const csp = Object.fromEntries((h['content-security-policy'] ?? '').split(';').map((d) => d.trim())
      .filter(Boolean).map((d) => { const [name, ...v] = d.split(/\s+/); return [name.toLowerCase(), v.join(' ')]; }));
    expectEqual(csp, EXPECTED_CSP, `${what}'s Content-Security-Policy (${fmt(h['content-security-policy'])})`);
    expectEqual([h['x-frame-options'], h['x-content-type-options'], h['referrer-policy']],
      ['DENY', 'nosniff', 'same-origin'], `${what}'s [X-Frame-Options, X-Content-Type-Options, Referrer-Policy]`);
    expect((h['cache-control'] ?? '').split(',').map((s) => s.trim()).includes('no-store'),
      `${what}'s Cache-Control ${fmt(h['cache-control'])}`);
  }
  const login = await fetch(`${base}/login`, { redirect: 'manual', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  expect(login.status === 200 && (login.headers.get('content-security-policy') ?? '').includes("frame-ancestors 'none'")
    && (login.headers.get('cache-control') ?? '').includes('no-store'),
    `the sign-in page: ${login.status}, CSP ${fmt(login.headers.get('content-security-policy'))}, `
    + `Cache-Control ${fmt(login.headers.get('cache-control'))}`);
  const session = (await context.cookies()).find((c) => c.name === 'mcpcore_session');
  expectEqual([session?.httpOnly, session?.sameSite, session?.path, session?.secure], [true, 'Strict', PREFIX, false],
    `the mcpcore_session cookie's [HttpOnly, SameSite, Path, Secure] over plain HTTP (${fmt(session)})`);
});

await withQueue('an unknown ticket is the 404 page', async () => {
  const response = await queue.goto(`${base}/tickets/${'0'.repeat(32)}`);
  expectEqual(response.status(), 404, 'the status of an unknown ticket');
});

await withQueue('logging out clears the session: P answers 303 to P/login again', async () => {
  await queue.goto(base);
  const response = await clickAndWait(queue, '#logout-submit');
  expectEqual(response.url(), `${base}/login`, 'where the logout ended');
  const session = (await context.cookies()).find((c) => c.name === 'mcpcore_session' && c.value !== '');
  expect(!session, `the session cookie is still set: ${fmt(session)}`);
  const again = await queue.goto(base);
  expectEqual(again.url(), `${base}/login`, 'where GET P ends after the logout');
});

for (const problem of pageProblems) process.stdout.write(`# ${problem}\n`);
for (const v of cspViolations) process.stdout.write(`# CSP violation: ${fmt(v)}\n`);
for (const c of sdkClients) await c.close().catch(() => undefined);
await browser?.close().catch(() => undefined);
const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
