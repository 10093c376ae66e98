// SPDX-License-Identifier: Apache-2.0
// The reference server of the HTTP load benchmark's per-request era (bench/http/run.sh, target
// ts2026): the official MCP TypeScript SDK v2's `createMcpHandler` with one `echo` tool, the same
// tool mcpcore's echo_server serves, for MCP revision 2026-07-28 (no initialize, no session).
//
// Mode: the handler's defaults (legacy 'stateless', responseMode 'auto': a call that emits nothing
// before its result is answered with one application/json body). The factory builds a fresh
// McpServer for every HTTP request, as the SDK requires (an instance serves one request); that cost
// is part of what is measured. Node's http server carries it, through @hono/node-server's
// getRequestListener (Node request → fetch Request), as the SDK's notes suggest for node:http.
//
// Usage: node ts2026_echo_server.mjs [--port N] [--port-file PATH] [--modules DIR]
//   --port        TCP port on 127.0.0.1 (default 0: an ephemeral port)
//   --port-file   write the bound port there once listening (the harness waits for it)
//   --modules     node_modules folder holding @modelcontextprotocol/server 2.4.x, @hono/node-server
//                 and zod (default: tests/interop/node_modules of this checkout, installed by `npm ci`)
//
// It binds loopback only and runs until SIGINT or SIGTERM.

import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  if (i + 1 >= args.length) {
    console.error(`ts2026_echo_server: ${name} needs a value`);
    process.exit(2);
  }
  return args[i + 1];
}
const port = Number(option('--port', '0'));
const portFile = option('--port-file', '');
const modules = resolve(option('--modules', join(here, '..', '..', 'tests', 'interop', 'node_modules')));

// Resolve the SDK, the Node adapter and zod from that node_modules folder (bench/http has none of its own).
const require = createRequire(join(modules, 'package.json'));
const { McpServer, createMcpHandler } = require('@modelcontextprotocol/server');
const { getRequestListener } = require('@hono/node-server');
const z = require('zod');
// (read the file: the package's export map does not expose its package.json)
const sdkVersion = JSON.parse(readFileSync(join(modules, '@modelcontextprotocol', 'server', 'package.json'), 'utf8')).version;

function newServer() {
  const server = new McpServer({ name: 'ts2026-echo-server', version: sdkVersion });
  server.registerTool(
    'echo',
    {
      description: 'Returns the given text unchanged.',
      inputSchema: z.object({ text: z.string().max(4096) }),
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

const handler = createMcpHandler(newServer, {
  onerror: (err) => console.error('ts2026_echo_server: handler error:', err),
});

const listener = createServer(getRequestListener((request) => handler.fetch(request)));
listener.on('error', (err) => {
  console.error('ts2026_echo_server: listen failed:', err);
  process.exit(1);
});
listener.listen(port, '127.0.0.1', () => {
  const bound = listener.address().port;
  if (portFile) writeFileSync(portFile, `${bound}\n`);
  console.error(`ts2026_echo_server: SDK ${sdkVersion} listening on http://127.0.0.1:${bound}/mcp (pid ${process.pid})`);
});

function shutdown() {
  handler.close().catch(() => {});
  listener.close();
  listener.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
