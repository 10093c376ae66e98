// SPDX-License-Identifier: Apache-2.0
// The reference server of the HTTP load benchmark (bench/http/run.sh): the official MCP TypeScript
// SDK's Streamable HTTP server with the `echo` tool, the same tool mcpcore's echo_server serves,
// and `progress10` (echo after 10 progress notifications), the same as echo_server's too.
//
// Mode: stateful (one transport and one McpServer per session, sessions keyed by Mcp-Session-Id),
// SSE responses (enableJsonResponse false, the SDK's default), and the SDK's own InMemoryEventStore
// (priming events and event ids): the SDK's fastest stateful mode on this machine
// (docs/performance.md#http-load-wrk-loopback).
//
// Usage: node ts_echo_server.mjs [--port N] [--port-file PATH] [--modules DIR] (server_cli.mjs)
//   --modules     node_modules folder holding @modelcontextprotocol/sdk 1.32.x, express and zod
//                 (default: tests/interop/node_modules of this checkout, installed by `npm ci`)
//
// It binds loopback only and runs until SIGINT or SIGTERM.

import { randomUUID } from 'node:crypto';
import process from 'node:process';
import { serverCli } from './server_cli.mjs';

// The command line, the SDK, express and zod from the --modules folder, and the port file.
const { port, require, sdkVersion, listening } = serverCli('ts_echo_server', '@modelcontextprotocol/sdk');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { createMcpExpressApp } = require('@modelcontextprotocol/sdk/server/express.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { InMemoryEventStore } = require('@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js');
const z = require('zod');

/** Progress notifications that progress10 sends before its result (stream.lua expects this many). */
const PROGRESS_STEPS = 10;

function newServer() {
  const server = new McpServer({ name: 'ts-echo-server', version: sdkVersion });
  server.registerTool(
    'echo',
    {
      description: 'Returns the given text unchanged.',
      inputSchema: { text: z.string().max(4096) },
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  // The streamed call of run.sh's stream targets (stream.lua), as echo_server.cpp's progress10: with
  // a progress token, PROGRESS_STEPS notifications/progress on the call's own SSE stream (the SDK
  // relates them to the request), then the echo result; without one, the echo call.
  server.registerTool(
    'progress10',
    {
      description: 'Reports progress 10 times, then returns the given text unchanged.',
      inputSchema: { text: z.string().max(4096) },
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ text }, extra) => {
      const progressToken = extra._meta?.progressToken;
      if (progressToken !== undefined) {
        for (let progress = 1; progress <= PROGRESS_STEPS; ++progress) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress, total: PROGRESS_STEPS },
          });
        }
      }
      return { content: [{ type: 'text', text }] };
    },
  );
  return server;
}

/** Mcp-Session-Id → transport. A transport leaves it when it closes (DELETE, or shutdown). */
const transports = new Map();
/** Sessions opened and closed so far, reported on exit (run.sh's churn targets check the balance). */
let opened = 0;
let closed = 0;

function jsonRpcError(res, status, code, message) {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

const app = createMcpExpressApp({ host: '127.0.0.1' });

app.post('/mcp', async (req, res) => {
  try {
    const sid = req.headers['mcp-session-id'];
    let transport = sid === undefined ? undefined : transports.get(sid);
    if (sid !== undefined && transport === undefined) {
      jsonRpcError(res, 404, -32001, 'Session not found');
      return;
    }
    if (transport === undefined) {
      if (!isInitializeRequest(req.body)) {
        jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new InMemoryEventStore(),
        onsessioninitialized: (id) => {
          transports.set(id, transport);
          ++opened;
        },
      });
      // The SDK's DELETE handling closes the transport (and with it the McpServer connected to it)
      // after its 200; this drops the last reference to both.
      transport.onclose = () => {
        if (transport.sessionId !== undefined && transports.delete(transport.sessionId)) ++closed;
      };
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  } catch (err) {
    console.error('ts_echo_server: POST failed:', err);
    if (!res.headersSent) jsonRpcError(res, 500, -32603, 'Internal server error');
  }
});

// GET opens the session's standalone SSE stream; DELETE ends the session (the SDK answers 200 and
// closes the transport: onclose above removes it).
async function sessionRequest(req, res) {
  const sid = req.headers['mcp-session-id'];
  const transport = sid === undefined ? undefined : transports.get(sid);
  if (transport === undefined) {
    jsonRpcError(res, sid === undefined ? 400 : 404, sid === undefined ? -32000 : -32001,
                 sid === undefined ? 'Bad Request: Mcp-Session-Id header is required' : 'Session not found');
    return;
  }
  try {
    await transport.handleRequest(req, res);
  } catch (err) {
    console.error(`ts_echo_server: ${req.method} failed:`, err);
    if (!res.headersSent) jsonRpcError(res, 500, -32603, 'Internal server error');
  }
}
app.get('/mcp', sessionRequest);
app.delete('/mcp', sessionRequest);

const listener = app.listen(port, '127.0.0.1', (err) => {
  if (err) {
    console.error('ts_echo_server: listen failed:', err);
    process.exit(1);
  }
  listening(listener);
});
// Idle SSE streams must not be cut by node's own timeouts during the idle-stream measurement.
listener.requestTimeout = 0;
listener.headersTimeout = 60_000;
listener.keepAliveTimeout = 60_000;

function shutdown() {
  console.error(`ts_echo_server: sessions opened ${opened}, closed ${closed}, open ${transports.size}`);
  for (const t of transports.values()) t.close().catch(() => {});
  listener.close();
  listener.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
