// SPDX-License-Identifier: Apache-2.0
// The scale-out topology of docs/scale-out.md, shared by haproxy_sessions.mjs and haproxy_approvals.mjs: several
// mcpcore-host processes on ephemeral 127.0.0.1 ports, each with its own data directory and all with the first
// one's token file (--token-file: the operator token the first run printed is valid on every server), and a real
// HAProxy in the foreground in front of them with the generated configuration of
// docs/scale-out.md#the-haproxy-configuration, on an ephemeral 127.0.0.1 port with an admin stats socket (the
// servers' states, the stick table). HAProxy adds `X-Served-By: <server name>` to every answer.

import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  envelope, expect, fmt, killRunning, messagesOf, postModern, printedOperatorToken, running, scratchRun, startHost,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

/** A server must write its port file within this long (ASan builds start slowly). */
const PORT_FILE_WAIT_MS = 20_000;
/** HAProxy must create its stats socket, and report the wanted server states on it, within this long. */
const STATE_WAIT_MS = 15_000;
/** One command on the stats socket must be answered within this long. */
const STATS_ANSWER_MS = 5_000;
/** The health check's interval; a server is DOWN after HEALTH_FALL failed checks, UP after HEALTH_RISE good ones. */
const HEALTH_INTER_MS = 300;
const HEALTH_FALL = 2;
const HEALTH_RISE = 1;

// ---- HAProxy --------------------------------------------------------------------------------------------

/** A free 127.0.0.1 port (bound, read, released: HAProxy binds it right after). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * The configuration of docs/scale-out.md#the-haproxy-configuration (each line explained there), for `servers`
 * ({name: port}).
 */
export function haproxyConfig({ port, socket, servers }) {
  return [
    'global',
    `    stats socket ${socket} mode 600 level admin`,
    '    maxconn 1024',
    '',
    'defaults',
    '    mode http',
    '    timeout connect 2s',
    '    timeout client 1h',
    '    timeout server 1h',
    '    timeout tunnel 1h',
    '    timeout http-request 10s',
    '    retries 2',
    '    option redispatch',
    '',
    'frontend mcp_in',
    `    bind 127.0.0.1:${port}`,
    '    default_backend mcp',
    '',
    'backend mcp',
    '    balance roundrobin',
    '    option httpchk GET /readyz HTTP/1.1',
    '    http-check send hdr Host localhost',
    '    http-check expect status 200',
    '    stick-table type string len 64 size 100k expire 35m',
    '    stick match req.hdr(mcp-session-id)',
    '    stick store-response res.hdr(mcp-session-id)',
    '    http-response set-header X-Served-By %[srv_name]',
    ...Object.entries(servers).map(([name, p]) =>
      `    server ${name} 127.0.0.1:${p} check inter ${HEALTH_INTER_MS}ms fall ${HEALTH_FALL} rise ${HEALTH_RISE}`),
    '',
  ].join('\n');
}

// ---- the cluster ----------------------------------------------------------------------------------------

/**
 * One run's cluster: a scratch directory (`work`, named with `prefix`), the mcpcore-host processes `servers`
 * (names; the first one's data directory holds the shared token file) and HAProxy in front of them. Plain
 * 2026-07-28 requests carry the client name `clientName` and are bounded by `requestTimeoutMs`.
 */
export class HaproxyCluster {
  constructor({ prefix, hostBinary, haproxyBinary, allowlist, servers, clientName, requestTimeoutMs }) {
    Object.assign(this, { hostBinary, haproxyBinary, allowlist, servers, clientName, requestTimeoutMs });
    ({ work: this.work, cleanup: this.cleanupRun } = scratchRun(prefix, () => undefined, { signals: false }));
    /** name -> {child, port, dataDir}: the mcpcore-host processes started so far. */
    this.hosts = new Map();
    /** The HAProxy child process, its stats socket and the MCP URL behind it, once started. */
    this.haproxy = undefined;
    this.socket = undefined;
    this.url = undefined;
    this.lastId = 0;
  }

  /** The data directory of server `name`. */
  dataDir(name) {
    return join(this.work, `data-${name}`);
  }

  /** The MCP URL of host `name` (directly, not through the balancer). */
  hostUrl(name) {
    return `http://127.0.0.1:${this.hosts.get(name).port}/mcp`;
  }

  /** A fresh JSON-RPC request id (1, 2, ...). */
  nextId() {
    return ++this.lastId;
  }

  /** SIGKILLs HAProxy and every host that still runs, and removes the scratch directory. */
  cleanup() {
    killRunning([this.haproxy, ...[...this.hosts.values()].map((h) => h.child)]);
    this.cleanupRun();
  }

  /**
   * Starts the hosts one after the other, each with `extraArgs(name)` and, but for the first, the first one's
   * token file; prints "# hosts {name: port}". Resolves with the operator token the first one printed.
   */
  async startHosts(extraArgs = () => []) {
    const [first] = this.servers;
    let token;
    for (const name of this.servers) {
      const dataDir = this.dataDir(name);
      const tokenFile = name === first ? [] : ['--token-file', join(this.dataDir(first), 'tokens')];
      const { child, port } = await startHost(this.hostBinary, { dataDir, portFile: join(this.work, `port-${name}`),
        allowlist: this.allowlist, waitMs: PORT_FILE_WAIT_MS, extraArgs: [...extraArgs(name), ...tokenFile] });
      this.hosts.set(name, { child, port, dataDir });
      if (name === first) ({ token } = await printedOperatorToken(child));
    }
    process.stdout.write(`# hosts ${fmt(this.ports())}\n`);
    return token;
  }

  /** {name: port} of the hosts started so far. */
  ports() {
    return Object.fromEntries([...this.hosts].map(([n, h]) => [n, h.port]));
  }

  /**
   * Starts HAProxy with the generated configuration (printed, each line prefixed "# cfg ", with `printConfig`) and
   * waits until its stats socket reports every server UP; resolves with the MCP URL of the balancer.
   */
  async startHaproxy({ printConfig = false } = {}) {
    const port = await freePort();
    this.socket = join(this.work, 'haproxy.sock');
    const config = haproxyConfig({ port, socket: this.socket, servers: this.ports() });
    const file = join(this.work, 'haproxy.cfg');
    writeFileSync(file, config);
    if (printConfig) process.stdout.write(config.split('\n').map((l) => `# cfg ${l}`).join('\n') + '\n');
    this.haproxy = spawn(this.haproxyBinary, ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    this.haproxy.stderr.setEncoding('utf8');
    this.haproxy.stderr.on('data', (d) => { errors += d; });
    const deadline = performance.now() + STATE_WAIT_MS;
    while (!existsSync(this.socket)) {
      expect(running(this.haproxy), `haproxy exited: ${fmt(errors)}`);
      expect(performance.now() < deadline, `no stats socket within ${STATE_WAIT_MS} ms: ${fmt(errors)}`);
      await sleep(25);
    }
    await this.waitStates(Object.fromEntries(this.servers.map((n) => [n, 'UP'])));
    this.url = `http://127.0.0.1:${port}/mcp`;
    return this.url;
  }

  /** One command on HAProxy's stats socket; resolves with its whole answer. */
  statsCommand(command) {
    return new Promise((resolve, reject) => {
      let out = '';
      const c = createConnection(this.socket, () => c.end(`${command}\n`));
      c.setEncoding('utf8');
      c.on('data', (d) => { out += d; });
      c.on('end', () => resolve(out));
      c.on('error', reject);
      c.setTimeout(STATS_ANSWER_MS, () => c.destroy(new Error(`no answer to "${command}" on the stats socket`)));
    });
  }

  /** {server name: status} of the backend `mcp` ("UP", "DOWN", "UP 1/2", ...), from `show stat`. */
  async serverStates() {
    const lines = (await this.statsCommand('show stat')).split('\n').filter((l) => l !== '');
    const head = lines[0].replace(/^# /, '').split(',');
    const [px, sv, st] = ['pxname', 'svname', 'status'].map((k) => head.indexOf(k));
    const out = {};
    for (const l of lines.slice(1)) {
      const f = l.split(',');
      if (f[px] === 'mcp' && this.servers.includes(f[sv])) out[f[sv]] = f[st];
    }
    return out;
  }

  /** Waits until HAProxy reports `wanted` ({name: status}); fails with the last states otherwise. */
  async waitStates(wanted) {
    const deadline = performance.now() + STATE_WAIT_MS;
    let states;
    for (;;) {
      states = await this.serverStates();
      if (Object.entries(wanted).every(([name, status]) => states[name] === status)) return states;
      if (performance.now() > deadline) break;
      await sleep(50);
    }
    return expect(false, `HAProxy's server states: expected ${fmt(wanted)}, got ${fmt(states)}`);
  }

  /**
   * One plain 2026-07-28 enveloped tools/call of tool `name` with `args` and `bearer`, through the balancer (or to
   * `target`, one host's URL); resolves with {status, servedBy, message}, `message` the response to it (if any).
   */
  async call(bearer, name, args, target = this.url) {
    const id = this.nextId();
    const request = { jsonrpc: '2.0', id, method: 'tools/call',
      params: { name, arguments: args, _meta: envelope(this.clientName) } };
    const response = await postModern(target, request, { bearer, signal: AbortSignal.timeout(this.requestTimeoutMs) });
    const messages = await messagesOf(response);
    return { status: response.status, servedBy: response.headers.get('x-served-by'),
      message: messages.find((m) => m.id === id && m.method === undefined) };
  }
}
