// SPDX-License-Identifier: Apache-2.0
// CORS from a real browser (docs/http.md#cors): headless Chromium loads cors_page.html from a
// static server on one loopback port, and the page calls the mcpcore conformance fixture on
// another loopback port with fetch (initialize, reading Mcp-Session-Id; notifications/initialized;
// tools/list; a 401 reading WWW-Authenticate; DELETE), with a bearer token in Authorization.
//   1. the fixture lists the page's origin (--cors-origin): every step passes;
//   2. the fixture lists another origin only: the first fetch rejects (the browser's CORS refusal).
//
// Usage: node cors_chromium.mjs <mcpcore-conformance-server> [<chromium>]
// Prints "ok - <name>" or "not ok - <name>: <why>" per check; exit 0 when all pass, 1 otherwise
// (also after the global timeout), 2 on bad usage. Only node's own modules; every process it
// starts is killed by its PID at the end.

import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

/** The whole run is killed with exit status 1 after this long (ctest's TIMEOUT is larger). */
const GLOBAL_TIMEOUT_MS = 90_000;
/** The fixture must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** Virtual time the page gets (Chromium waits for the page's fetches while it runs). */
const VIRTUAL_TIME_MS = 15_000;
/** One Chromium run is killed after this long. */
const CHROMIUM_TIMEOUT_MS = 40_000;

const [fixture, chromium = '/usr/bin/chromium'] = process.argv.slice(2);
if (!fixture || !existsSync(fixture) || !existsSync(chromium)) {
  console.error('usage: node cors_chromium.mjs <mcpcore-conformance-server> [<chromium>]');
  process.exit(2);
}

const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mcpcore-browser-'));
const children = new Set();
let failed = 0;

function cleanup() {
  for (const child of children) {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
  rmSync(work, { recursive: true, force: true });
}
const globalTimer = setTimeout(() => {
  console.log(`not ok - the run took longer than ${GLOBAL_TIMEOUT_MS} ms`);
  cleanup();
  process.exit(1);
}, GLOBAL_TIMEOUT_MS);

function check(name, cond, why) {
  if (cond) {
    console.log(`ok - ${name}`);
  } else {
    ++failed;
    console.log(`not ok - ${name}: ${why}`);
  }
}

// The page's origin: a static server answering cors_page.html on every path but /favicon.ico.
const pageHtml = readFileSync(join(here, 'cors_page.html'));
const pages = http.createServer((req, res) => {
  if (req.url === '/favicon.ico') { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(pageHtml);
});
await new Promise((resolve) => pages.listen(0, '127.0.0.1', resolve));
const pageOrigin = `http://127.0.0.1:${pages.address().port}`;

// A bearer token, its digest in a token file (docs/authentication.md#token-file-format).
const token = randomBytes(24).toString('hex');
const tokenFile = join(work, 'tokens');
writeFileSync(tokenFile, `sha256:${createHash('sha256').update(token).digest('hex')}  page-user  -  engine\n`,
              { mode: 0o600 });

/** Starts the fixture listing `corsOrigin`; resolves with `{child, url}` once its port file exists. */
async function startFixture(name, corsOrigin) {
  const portFile = join(work, `${name}.port`);
  const child = spawn(fixture, ['--port', '0', '--port-file', portFile, '--token-file', tokenFile,
                                '--cors-origin', corsOrigin], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.add(child);
  const deadline = Date.now() + PORT_FILE_WAIT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the fixture exited early (${child.exitCode})`);
    if (existsSync(portFile)) {
      const port = Number.parseInt(readFileSync(portFile, 'utf8').trim(), 10);
      if (port > 0) return { child, url: `http://127.0.0.1:${port}/mcp` };
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no port file within ${PORT_FILE_WAIT_MS} ms`);
}

async function stopFixture(child) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try { process.kill(child.pid, 'SIGTERM'); } catch { /* gone */ }
  const timer = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, 8_000);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

/** Loads the page against `server` in headless Chromium; resolves with the page's #result JSON. */
function runPage(name, server) {
  const url = `${pageOrigin}/cors_page.html?server=${encodeURIComponent(server)}&token=${token}`;
  const args = ['--headless=new', '--disable-gpu', '--no-sandbox', '--no-first-run', '--disable-extensions',
                '--disable-background-networking', '--disable-component-update', '--disable-sync',
                `--user-data-dir=${join(work, `chromium-${name}`)}`, `--virtual-time-budget=${VIRTUAL_TIME_MS}`,
                '--dump-dom', url];
  return new Promise((resolve, reject) => {
    const child = execFile(chromium, args, { timeout: CHROMIUM_TIMEOUT_MS, maxBuffer: 4 << 20 }, (err, stdout) => {
      children.delete(child);
      const m = /<pre id="result">([^<]*)<\/pre>/.exec(stdout);
      if (!m) {
        reject(new Error(`no #result in Chromium's output${err ? ` (${err.message})` : ''}: ${stdout.slice(0, 400)}`));
        return;
      }
      const text = m[1].replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new Error(`the page did not finish: ${text}`));
      }
    });
    children.add(child);
  });
}

let status = 1;
try {
  // 1. The page's origin is listed: the whole exchange works from the browser.
  const listed = await startFixture('listed', pageOrigin);
  const seen = await runPage('listed', listed.url);
  const shown = JSON.stringify(seen);
  check('a listed origin: initialize answers 200 and Mcp-Session-Id is readable',
        seen.initStatus === 200 && seen.session === 'exposed' && seen.serverName === 'mcpcore-conformance-server', shown);
  check('a listed origin: notifications/initialized answers 202', seen.initializedStatus === 202, shown);
  check('a listed origin: tools/list answers 200 with the tools', seen.listStatus === 200 && seen.tools > 0, shown);
  check('a listed origin: a 401 is readable with its WWW-Authenticate challenge',
        seen.unauthStatus === 401 && typeof seen.challenge === 'string' && seen.challenge.startsWith('Bearer'), shown);
  check('a listed origin: DELETE ends the session (200)', seen.deleteStatus === 200 && seen.ok === true, shown);
  await stopFixture(listed.child);

  // 2. Another origin is listed, not the page's: the browser refuses the first call.
  const other = await startFixture('other', 'http://127.0.0.1:1');
  const refused = await runPage('other', other.url);
  check("an unlisted origin: the first fetch rejects (no CORS answer for the page)",
        refused.ok === false && refused.step === 'initialize' && /TypeError/.test(refused.error ?? ''),
        JSON.stringify(refused));
  await stopFixture(other.child);
  status = failed === 0 ? 0 : 1;
} catch (e) {
  console.log(`not ok - the run: ${e.message}`);
  status = 1;
} finally {
  clearTimeout(globalTimer);
  pages.close();
  cleanup();
}
process.exit(status);
