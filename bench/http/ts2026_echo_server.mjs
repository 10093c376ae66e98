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
// Usage: node ts2026_echo_server.mjs [--port N] [--port-file PATH] [--modules DIR] (server_cli.mjs)
//   --modules     node_modules folder holding @modelcontextprotocol/server 2.4.x, @hono/node-server
//                 and zod (default: tests/interop/node_modules of this checkout, installed by `npm ci`)
//
// It binds loopback only and runs until SIGINT or SIGTERM.

import { createServer } from 'node:http';
import process from 'node:process';
import { serverCli } from './server_cli.mjs';

// The command line, the SDK, the Node adapter and zod from the --modules folder, and the port file.
const { port, require, sdkVersion, listening } = serverCli('ts2026_echo_server', '@modelcontextprotocol/server');
const { McpServer, createMcpHandler } = require('@modelcontextprotocol/server');
const { getRequestListener } = require('@hono/node-server');
const z = require('zod');

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
listener.listen(port, '127.0.0.1', () => listening(listener));

function shutdown() {
  handler.close().catch(() => {});
  listener.close();
  listener.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
