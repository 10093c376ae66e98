// SPDX-License-Identifier: Apache-2.0
// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
// against the mcpcore conformance fixture server over Streamable HTTP.
//
// Usage: node run_conformance.mjs <path-to-mcpcore-conformance-server> [--requirements <revision>
//                                  [--score-extension tasks]] [--keep-results <dir>]
//
// Without --requirements: the `latest` suite (package `@modelcontextprotocol/conformance`, 0.1.16),
// `--suite all`, every scenario must pass. With --requirements <revision> (2025-11-25 or 2026-07-28):
// the prerelease suite (package alias `conformance-next`, 0.2.0-alpha.12) runs exactly the scenarios
// that revision's frozen requirements file lists, each at that revision's wire version; every scored
// scenario (the file's `server:` list) must pass with no FAILURE check; the not-scored ones (the
// tasks extension, pending scenarios) run and are reported but do not decide the verdict, as the
// suite itself scores them (docs/conformance.md). With --score-extension tasks, every not-scored
// scenario of the tasks extension (`tasks-*`) is held to the scored rule as well: it must pass with no
// FAILURE check (and no SKIPPED one, except tasks-status-notifications, which the suite itself skips).
//
// Starts the server on an ephemeral 127.0.0.1 port (it writes the port to a port file), runs
//   <node 22> node_modules/@modelcontextprotocol/conformance/dist/index.js server
//       --url http://127.0.0.1:<port>/mcp --suite all -o <results dir>
// (the CLI needs Node 22: the pinned `node` package provides it), always kills the server by its PID
// (also on failure and on SIGINT/SIGTERM), prints the suite's summary and then its own verdict.
// It passes only when: the CLI exits 0; the summary says `0 failed`; every scenario of `--suite all`
// (as `conformance list --server` names them) ran and wrote its checks.json; and the
// `server-sse-polling` scenario produced no WARNING check; and the server exited 0 on SIGTERM (a
// sanitizer report or a crash fails the run). There is no expected-failures file.
// Exit status: 0 pass, 1 fail (also after the global timeout), 2 bad usage.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** The whole run is abandoned (server and CLI killed, exit 1) after this long; ctest's TIMEOUT is larger. */
const GLOBAL_TIMEOUT_MS = 360_000;
/** The server must write its port file within this long of being spawned (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** After SIGTERM the server has this long to exit before it is sent SIGKILL. */
const SERVER_EXIT_WAIT_MS = 8_000;
/** Bound on `conformance list --server`. */
const LIST_TIMEOUT_MS = 30_000;

/** The scenario whose checks must contain no WARNING (SEP-1699 polling: all its checks are warnings or info). */
const NO_WARNING_SCENARIO = 'server-sse-polling';

/**
 * The extensions `--score-extension` can score: the prefix of their scenario names, and the scenarios
 * whose SKIPPED checks are allowed (the suite skips them itself: tasks-status-notifications waits for a
 * rewrite against subscriptions/listen and records one SKIPPED check, sending nothing).
 */
const EXTENSIONS = {
  tasks: { prefix: 'tasks-', mayBeSkipped: ['tasks-status-notifications'] },
};

// ---- arguments and paths --------------------------------------------------------------------------------

const args = process.argv.slice(2);
const serverBinary = args[0];
let keepResults;
let requirements;
/** The extensions scored with --score-extension (names of EXTENSIONS). */
const scoredExtensions = [];
let badUsage = !serverBinary;
for (let i = 1; i < args.length; i += 2) {
  if (args[i] === '--keep-results' && args[i + 1]) keepResults = resolve(args[i + 1]);
  else if (args[i] === '--requirements' && /^\d{4}-\d{2}-\d{2}$/.test(args[i + 1] ?? '')) requirements = args[i + 1];
  else if (args[i] === '--score-extension' && Object.hasOwn(EXTENSIONS, args[i + 1] ?? '') &&
           !scoredExtensions.includes(args[i + 1])) scoredExtensions.push(args[i + 1]);
  else badUsage = true;
}
// Extensions are listed only in a requirements file (not_scored, reason extension).
if (scoredExtensions.length > 0 && !requirements) badUsage = true;
if (badUsage) {
  process.stderr.write('usage: node run_conformance.mjs <path-to-mcpcore-conformance-server> ' +
    `[--requirements <revision> [--score-extension ${Object.keys(EXTENSIONS).join('|')}]...] [--keep-results <dir>]\n`);
  process.exit(2);
}

const here = dirname(fileURLToPath(import.meta.url));
const node22 = join(here, 'node_modules', 'node', 'bin', 'node');
const packageDir = requirements
  ? join(here, 'node_modules', 'conformance-next')
  : join(here, 'node_modules', '@modelcontextprotocol', 'conformance');
const cli = join(packageDir, 'dist', 'index.js');
const requirementsFile = requirements ? join(packageDir, 'requirements', `${requirements}.yaml`) : undefined;
for (const [what, path] of [['Node 22 (npm package node@22)', node22], ['the conformance CLI', cli],
  ['the server binary', serverBinary], ...(requirementsFile ? [['the requirements file', requirementsFile]] : [])]) {
  if (!existsSync(path)) {
    process.stderr.write(`run_conformance: ${what} is missing: ${path} (run \`npm ci\` in ${here})\n`);
    process.exit(2);
  }
}

const work = mkdtempSync(join(tmpdir(), 'mcpcore-conformance-'));
const portFile = join(work, 'port');
const resultsDir = keepResults ?? join(work, 'results');

// ---- process management: every child is killed by its PID, whatever happens ------------------------------

/** @type {Set<import('node:child_process').ChildProcess>} */
const children = new Set();

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Synchronous last resort (process 'exit' handlers cannot wait). */
function killAllNow() {
  for (const child of children) {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
  children.clear();
}

/** SIGTERM, then SIGKILL after SERVER_EXIT_WAIT_MS; resolves with the exit {code, signal}. */
async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode };
  const exited = new Promise((resolveExit) => child.once('exit', (code, signal) => resolveExit({ code, signal })));
  try { process.kill(child.pid, 'SIGTERM'); } catch { /* gone */ }
  const timer = setTimeout(() => {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
  }, SERVER_EXIT_WAIT_MS);
  const exit = await exited;
  clearTimeout(timer);
  return exit;
}

function cleanup() {
  killAllNow();
  try { rmSync(work, { recursive: true, force: true }); } catch { /* best effort */ }
}

process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stderr.write(`run_conformance: ${sig}, killing the server and the suite\n`);
    cleanup();
    process.exit(1);
  });
}
const globalTimer = setTimeout(() => {
  process.stderr.write(`run_conformance: FAIL: the run took longer than ${GLOBAL_TIMEOUT_MS} ms; killed\n`);
  cleanup();
  process.exit(1);
}, GLOBAL_TIMEOUT_MS);

function fail(why) {
  process.stdout.write(`run_conformance: FAIL: ${why}\n`);
  return false;
}

// ---- the run ----------------------------------------------------------------------------------------------

/**
 * The server scenarios of a frozen requirements file: `scored` (its top-level `server:` list) and
 * `unscored` (its `not_scored:` entries whose `leg` is `server`).
 */
function requiredScenarios() {
  const text = readFileSync(requirementsFile, 'utf8');
  const section = (key) => {
    const m = new RegExp(`^${key}:\\n((?:[ \\t].*\\n|\\n)*)`, 'm').exec(text);
    return m ? m[1] : '';
  };
  const scored = [...section('server').matchAll(/^\s+-\s+(\S+)\s*$/gm)].map((m) => m[1]);
  const unscored = [];
  for (const m of section('not_scored').matchAll(/-\s+scenario:\s+(\S+)\s*\n\s+leg:\s+(\S+)/g)) {
    if (m[2] === 'server') unscored.push(m[1]);
  }
  if (scored.length === 0) throw new Error(`${requirementsFile} lists no server scenarios`);
  return { scored, unscored };
}

/** The scenario names `--suite all` runs, from `conformance list --server` (the same list). */
function expectedScenarios() {
  const r = spawnSync(node22, [cli, 'list', '--server'], { encoding: 'utf8', timeout: LIST_TIMEOUT_MS });
  if (r.status !== 0) {
    throw new Error(`\`conformance list --server\` failed (status ${r.status}, signal ${r.signal}): ${r.stderr}`);
  }
  const names = [...r.stdout.matchAll(/^\s+-\s+(\S+)/gm)].map((m) => m[1]);
  if (names.length === 0) throw new Error(`\`conformance list --server\` listed nothing:\n${r.stdout}`);
  return names;
}

async function startServer() {
  const server = track(spawn(serverBinary, ['--port', '0', '--port-file', portFile], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env },
  }));
  let spawnError;
  server.once('error', (error) => { spawnError = error; });
  const deadline = Date.now() + PORT_FILE_WAIT_MS;
  for (;;) {
    if (spawnError) throw new Error(`cannot start ${serverBinary}: ${spawnError.message}`);
    if (server.exitCode !== null || server.signalCode !== null) {
      throw new Error(`the server exited before listening (code ${server.exitCode}, signal ${server.signalCode})`);
    }
    if (existsSync(portFile)) {
      const port = Number.parseInt(readFileSync(portFile, 'utf8').trim(), 10);
      if (Number.isInteger(port) && port > 0 && port < 65536) return { server, port };
    }
    if (Date.now() > deadline) throw new Error(`no port file ${portFile} within ${PORT_FILE_WAIT_MS} ms`);
    await sleep(25);
  }
}

/** Runs the CLI, echoing its output; resolves with {code, signal, stdout}. */
function runSuite(url) {
  return new Promise((resolveRun, rejectRun) => {
    const selection = requirements ? ['--requirements', requirements] : ['--suite', 'all'];
    const suite = track(spawn(node22, [cli, 'server', '--url', url, ...selection, '-o', resultsDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env },
    }));
    let stdout = '';
    suite.stdout.setEncoding('utf8');
    suite.stdout.on('data', (chunk) => { stdout += chunk; process.stdout.write(chunk); });
    suite.stderr.setEncoding('utf8');
    suite.stderr.on('data', (chunk) => process.stderr.write(chunk));
    suite.once('error', rejectRun);
    suite.once('close', (code, signal) => resolveRun({ code, signal, stdout }));
  });
}

/** The `=== SUMMARY ===` section: per-scenario lines and the total. */
function parseSummary(stdout) {
  const at = stdout.lastIndexOf('=== SUMMARY ===');
  if (at < 0) return undefined;
  const text = stdout.slice(at);
  const scenarios = new Map();
  for (const m of text.matchAll(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed$/gmu)) {
    scenarios.set(m[2], { ok: m[1] === '✓', passed: Number(m[3]), failed: Number(m[4]), line: m[0] });
  }
  const total = /^Total: (\d+) passed, (\d+) failed$/m.exec(text);
  return {
    text: text.trimEnd(),
    scenarios,
    total: total ? { passed: Number(total[1]), failed: Number(total[2]), line: total[0] } : undefined,
  };
}

/** checks.json of every scenario directory the CLI wrote: Map<scenario, checks[]>. */
function readChecks(names) {
  const dirs = existsSync(resultsDir) ? readdirSync(resultsDir) : [];
  const byScenario = new Map();
  for (const name of names) {
    // The CLI names the directory `server-<scenario>-<ISO timestamp with ':' and '.' replaced>`.
    const prefix = `server-${name}-`;
    const matches = dirs.filter((d) => d.startsWith(prefix) && /^\d{4}-\d{2}-\d{2}T/.test(d.slice(prefix.length)));
    if (matches.length !== 1) continue;
    const file = join(resultsDir, matches[0], 'checks.json');
    if (!existsSync(file)) continue;
    byScenario.set(name, JSON.parse(readFileSync(file, 'utf8')));
  }
  return byScenario;
}

async function main() {
  const required = requirements ? requiredScenarios() : undefined;
  const names = required ? [...required.scored, ...required.unscored] : expectedScenarios();
  const scored = required ? required.scored : names;
  // The not-scored scenarios of each --score-extension, held to the scored rule by this script.
  const extensionScenarios = [];
  for (const extension of scoredExtensions) {
    const matching = required.unscored.filter((n) => n.startsWith(EXTENSIONS[extension].prefix));
    if (matching.length === 0) {
      throw new Error(`--score-extension ${extension}: ${requirementsFile} lists no not-scored ` +
        `${EXTENSIONS[extension].prefix}* server scenario`);
    }
    extensionScenarios.push(...matching);
  }
  const mayBeSkipped = scoredExtensions.flatMap((e) => EXTENSIONS[e].mayBeSkipped);
  process.stdout.write(required
    ? `run_conformance: requirements ${requirements}: ${required.scored.length} scored and ` +
      `${required.unscored.length} not-scored server scenarios\n`
    : `run_conformance: ${names.length} server scenarios in --suite all\n`);
  for (const extension of scoredExtensions) {
    const mine = extensionScenarios.filter((n) => n.startsWith(EXTENSIONS[extension].prefix));
    process.stdout.write(`run_conformance: scoring the ${extension} extension: ${mine.length} scenarios ` +
      `(${mine.join(', ')}) must pass with no FAILURE check\n`);
  }
  const { server, port } = await startServer();
  const url = `http://127.0.0.1:${port}/mcp`;
  process.stdout.write(`run_conformance: server pid ${server.pid} on ${url}\n`);
  let run;
  let exit;
  try {
    run = await runSuite(url);
  } finally {
    exit = await stop(server);
    process.stdout.write(`run_conformance: server stopped (code ${exit.code}, signal ${exit.signal})\n`);
  }

  let ok = true;
  // A clean SIGTERM exit is 0; anything else (a sanitizer report, a crash, SIGKILL) fails the run.
  if (exit.code !== 0) ok = fail(`the server did not exit 0 on SIGTERM (code ${exit.code}, signal ${exit.signal})`);
  if (run.code !== 0) ok = fail(`the conformance CLI exited with code ${run.code}${run.signal ? ` (signal ${run.signal})` : ''}`);
  const summary = parseSummary(run.stdout);
  if (!summary) return fail('the CLI printed no "=== SUMMARY ===" section') && false;
  if (!summary.total) ok = fail('the summary has no "Total: N passed, M failed" line');
  else if (!required && summary.total.failed !== 0) ok = fail(`the summary says ${summary.total.failed} failed`);

  const missing = names.filter((n) => !summary.scenarios.has(n));
  if (missing.length > 0) ok = fail(`scenarios missing from the summary: ${missing.join(', ')}`);
  const extra = [...summary.scenarios.keys()].filter((n) => !names.includes(n));
  if (extra.length > 0) ok = fail(`scenarios in the summary that \`list --server\` does not name: ${extra.join(', ')}`);
  for (const [name, s] of summary.scenarios) {
    if (scored.includes(name)) {
      if (!s.ok || s.failed !== 0) ok = fail(`scenario ${name}: ${s.line}`);
    } else if (extensionScenarios.includes(name)) {
      if (!s.ok || s.failed !== 0) ok = fail(`scenario ${name} (scored extension): ${s.line}`);
    } else if (!s.ok) {
      process.stdout.write(`run_conformance: note: not scored for ${requirements}: ${s.line}\n`);
    }
  }

  const checks = readChecks(names);
  const noChecks = names.filter((n) => !checks.has(n));
  if (noChecks.length > 0) ok = fail(`no checks.json for: ${noChecks.join(', ')}`);
  for (const [name, list] of checks) {
    if (!Array.isArray(list) || list.length === 0) ok = fail(`scenario ${name}: checks.json holds no checks`);
  }
  // A scored extension scenario: no FAILURE check (the summary counts them too, but the CLI's exit code
  // ignores not-scored scenarios, so the checks are read here), and no SKIPPED one unless allowed.
  const extensionCounts = new Map();
  for (const name of extensionScenarios) {
    for (const c of Array.isArray(checks.get(name)) ? checks.get(name) : []) {
      extensionCounts.set(c.status, (extensionCounts.get(c.status) ?? 0) + 1);
      if (c.status === 'FAILURE') ok = fail(`${name}: FAILURE ${c.id}: ${c.errorMessage ?? c.description}`);
      else if (c.status === 'SKIPPED' && !mayBeSkipped.includes(name)) {
        ok = fail(`${name}: SKIPPED ${c.id}: ${c.errorMessage ?? c.description}`);
      }
    }
  }
  if (extensionScenarios.length > 0) {
    const counts = [...extensionCounts].map(([status, n]) => `${n} ${status}`).join(', ');
    process.stdout.write(`run_conformance: scored extension checks (${extensionScenarios.length} scenarios): ` +
      `${counts || '(none)'}\n`);
  }
  const polling = scored.includes(NO_WARNING_SCENARIO) ? checks.get(NO_WARNING_SCENARIO) : undefined;
  if (polling) {
    const warnings = polling.filter((c) => c.status === 'WARNING');
    for (const w of warnings) {
      ok = fail(`${NO_WARNING_SCENARIO}: WARNING ${w.id}: ${w.errorMessage ?? w.description}`);
    }
    const scored = polling.filter((c) => c.status === 'SUCCESS' || c.status === 'FAILURE').map((c) => `${c.id}=${c.status}`);
    process.stdout.write(`run_conformance: ${NO_WARNING_SCENARIO} checks: ${scored.join(', ') || '(none scored)'}; ` +
      `${warnings.length} warnings\n`);
  } else if (!required && !noChecks.includes(NO_WARNING_SCENARIO)) {
    ok = fail(`${NO_WARNING_SCENARIO} is not among the scenarios`);
  }
  // Warnings elsewhere do not fail the run (they are SHOULDs the suite does not score), but are shown.
  for (const [name, list] of checks) {
    if (name === NO_WARNING_SCENARIO) continue;
    for (const w of list.filter((c) => c.status === 'WARNING')) {
      process.stdout.write(`run_conformance: note: ${name}: WARNING ${w.id}: ${w.errorMessage ?? w.description}\n`);
    }
  }

  process.stdout.write(`\n${summary.text}\n\n`);
  process.stdout.write(ok
    ? (required
      ? `run_conformance: PASS: requirements ${requirements}: all ${scored.length} scored scenarios passed ` +
        (extensionScenarios.length > 0
          ? `and all ${extensionScenarios.length} of the ${scoredExtensions.join(', ')} extension `
          : '') +
        `(${names.length} ran), ${summary.total.line}\n`
      : `run_conformance: PASS: ${names.length} scenarios ran, ${summary.total.line}, ${NO_WARNING_SCENARIO} without warnings\n`)
    : 'run_conformance: FAIL (see the lines above)\n');
  return ok;
}

let passed = false;
try {
  passed = await main();
} catch (error) {
  process.stdout.write(`run_conformance: FAIL: ${error instanceof Error ? error.message : String(error)}\n`);
}
clearTimeout(globalTimer);
if (keepResults) process.stdout.write(`run_conformance: results kept in ${keepResults}\n`);
cleanup();
process.exit(passed ? 0 : 1);
