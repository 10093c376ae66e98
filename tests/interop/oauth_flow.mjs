// SPDX-License-Identifier: Apache-2.0
// mcpcore-host as an OAuth 2.1 resource server against a real authorization server: oidc-provider (pinned in
// package.json) on 127.0.0.1 with dynamic client registration, client credentials, resource indicators and JWT
// access tokens, and the official MCP TypeScript SDK 1.x client's authorization flow
// (docs/oauth.md#mcpcore-host-with-an-authorization-server).
//
// Usage: node oauth_flow.mjs <path-to-mcpcore-host>
//
// Starts oidc-provider on an ephemeral port with a fresh ES256 key (login and consent answered headlessly by an
// interaction route: account alice, every requested scope granted), picks a port for mcpcore-host so that its
// audience (http://127.0.0.1:<port>/mcp) is the URL the clients use, and starts it with --oauth-issuer. Then:
// the SDK client's whole flow (401, protected-resource metadata, AS metadata, dynamic registration, authorization
// code with PKCE and resource, tokens) and a tool call; a client-credentials token accepted; a wrong-audience and a
// tampered token refused 401 invalid_token; the bare 401's challenge and the metadata it points at; a key rotation
// at the authorization server picked up without restarting the host; step-up: 403 insufficient_scope naming
// mcp:operate for set_tag with an mcp:read token, success with mcp:operate. Prints one line per check
// ("ok - ..." / "not ok - ...") and a summary.
// Exit status: 0 when every check passed, 1 otherwise (also after the global timeout), 2 on bad usage.

import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Provider, { errors as oidcErrors } from 'oidc-provider';

import {
  bodyText, checkArguments, createChecks, expect, expectEqual, fmt, messagesOf, scratchRun, startGlobalTimer,
  startServerProcess, stopServerProcess,
} from './check.mjs';

// ---- limits (milliseconds) ------------------------------------------------------------------------------

const GLOBAL_TIMEOUT_MS = 150_000;
const PORT_FILE_WAIT_MS = 20_000;
const REQUEST_TIMEOUT_MS = 20_000;
const CHECK_TIMEOUT_MS = 40_000;
const SERVER_EXIT_WAIT_MS = 10_000;
/** The host's --oauth-jwks-min-interval-ms: a token of an unknown key makes it fetch the keys within this. */
const JWKS_MIN_INTERVAL_MS = 100;
/** How long the rotated key may take to be accepted (the first 401 asks the host for a fetch). */
const ROTATION_WAIT_MS = 10_000;
const ROTATION_POLL_MS = 100;
/** Redirects followed through the authorization server's login and consent before giving up. */
const MAX_AUTHORIZATION_HOPS = 12;
/** Attempts at starting the host on a port picked beforehand (another process may take it meanwhile). */
const HOST_START_ATTEMPTS = 3;

const PROTOCOL_VERSION = '2025-11-25';
const SCOPES = ['mcp:read', 'mcp:operate', 'mcp:supervise'];
const ALG = 'ES256';
const ACCOUNT = 'alice';
const REDIRECT_URI = 'http://127.0.0.1/oauth-callback';
const SERVICE_CLIENT = { client_id: 'mcpcore-interop-service', client_secret: randomUUID() };
const OTHER_RESOURCE = 'https://other.example/api';

// ---- arguments, work directory, cleanup -----------------------------------------------------------------

const [hostBinary] = process.argv.slice(2);
checkArguments('oauth_flow.mjs', {
  ok: hostBinary, usage: 'usage: node oauth_flow.mjs <mcpcore-host>', files: [hostBinary],
});

let host;
let as;  // { server, provider, port, issuer }
const { work, portFile, cleanup: cleanupScratch } = scratchRun('mcpcore-host-oauth-', () => host);
const cleanup = () => {
  if (as) {
    as.server.closeAllConnections();
    as.server.close();
  }
  cleanupScratch();
};
const globalTimer = startGlobalTimer(GLOBAL_TIMEOUT_MS, cleanup);
const { check, summary } = createChecks({ timeoutMs: CHECK_TIMEOUT_MS, showCause: true });

// ---- the authorization server ------------------------------------------------------------------------

/** A fresh ES256 key pair as a private JWK with its kid. */
function signingKey(kid) {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: ALG, use: 'sig' };
}

/** A free TCP port on 127.0.0.1 (bound, then released). */
async function freePort() {
  const srv = createNetServer();
  await new Promise((resolve, reject) => srv.listen(0, '127.0.0.1', resolve).once('error', reject));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

let resource;  // http://127.0.0.1:<host port>/mcp, the host's audience

/**
 * Starts oidc-provider on 127.0.0.1:`port` (0: any) with `keys` (the first signs) and resolves with
 * `{server, provider, port, issuer}`. Interactions (/interaction/<uid>) finish at once: login as alice, then a
 * grant of every scope and resource the request asked for.
 */
async function startAuthorizationServer(port, keys) {
  const server = createServer();
  await new Promise((resolve, reject) => server.listen(port, '127.0.0.1', resolve).once('error', reject));
  const bound = server.address().port;
  const issuer = `http://127.0.0.1:${bound}`;
  const provider = new Provider(issuer, {
    jwks: { keys },
    cookies: { keys: [randomUUID()] },
    clients: [{
      ...SERVICE_CLIENT, grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    clientDefaults: { id_token_signed_response_alg: ALG },
    scopes: ['openid', 'offline_access', ...SCOPES],
    ttl: { AccessToken: 600, ClientCredentials: 600, AuthorizationCode: 60, Grant: 600, Interaction: 600, Session: 600 },
    pkce: { required: () => true },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource && indicator !== OTHER_RESOURCE) throw new oidcErrors.InvalidTarget();
          return {
            scope: SCOPES.join(' '), audience: indicator, accessTokenFormat: 'jwt', jwt: { sign: { alg: ALG } },
          };
        },
      },
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (!req.url.startsWith('/interaction/')) {
      callback(req, res);
      return;
    }
    finishInteraction(provider, req, res).catch((error) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  return { server, provider, port: bound, issuer };
}

/** The headless login and consent: alice logs in; every scope of every requested resource is granted. */
async function finishInteraction(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT } }, { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/** Stops the authorization server (its open connections too). */
async function stopAuthorizationServer() {
  const { server } = as;
  as = undefined;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/**
 * fetch to the authorization server. After its restart the first request may go out on a pooled keep-alive
 * connection to the stopped server and fail without an answer ("other side closed"): such a failure is tried
 * once more, on a new connection.
 */
async function asFetch(url, init) {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  }
}

/** The authorization server's metadata (RFC 8414). */
async function asMetadata() {
  const r = await asFetch(`${as.issuer}/.well-known/oauth-authorization-server`, {});
  expectEqual(r.status, 200, 'status of the authorization server metadata');
  return JSON.parse(await bodyText(r));
}

/** A client-credentials access token for `forResource` with `scope`; resolves with the token response. */
async function clientCredentialsToken(scope, forResource = resource) {
  const { token_endpoint: tokenEndpoint } = await asMetadata();
  const basic = Buffer.from(`${SERVICE_CLIENT.client_id}:${SERVICE_CLIENT.client_secret}`).toString('base64');
  const r = await asFetch(tokenEndpoint, {
    method: 'POST',
    headers: { Authorization: `Basic ${basic}`, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: forResource }).toString(),
  });
  const body = JSON.parse(await bodyText(r));
  expectEqual(r.status, 200, `token endpoint status (answer ${fmt(body)})`);
  return body;
}

/** The decoded header and claims of a JWT. */
function decodeJwt(token) {
  const [header, payload] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString('utf8')),
    claims: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')),
  };
}

// ---- a headless browser: cookies and redirects ----------------------------------------------------------

/** A cookie jar: name and path → value; expired cookies dropped. */
class CookieJar {
  constructor() { this.cookies = new Map(); }
  store(url, setCookies) {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = '/';
      let expired = value === '';
      for (const a of attributes) {
        const [k, v = ''] = a.split('=');
        if (k.toLowerCase() === 'path') path = v;
        if (k.toLowerCase() === 'max-age' && Number(v) <= 0) expired = true;
        if (k.toLowerCase() === 'expires' && Date.parse(v) <= Date.now()) expired = true;
      }
      const key = `${name}\u0000${path}`;
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, { name, value, path });
    }
    void url;
  }
  header(url) {
    const path = new URL(url).pathname;
    return [...this.cookies.values()].filter((c) => path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map((c) => `${c.name}=${c.value}`).join('; ');
  }
}

/**
 * Follows an authorization URL the way a browser would, without one: GET with manual redirects and a cookie
 * jar, through the interaction route, until a redirect to REDIRECT_URI; resolves with its `code`.
 */
async function followAuthorization(authorizationUrl) {
  const jar = new CookieJar();
  let url = new URL(authorizationUrl);
  for (let hop = 0; hop < MAX_AUTHORIZATION_HOPS; ++hop) {
    if (url.href.startsWith(REDIRECT_URI)) {
      const code = url.searchParams.get('code');
      expect(code, `the authorization server redirected back without a code: ${url.href}`);
      return code;
    }
    const r = await fetch(url, {
      redirect: 'manual', headers: { cookie: jar.header(url) }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    jar.store(url, r.headers.getSetCookie());
    const location = r.headers.get('location');
    if (r.status < 300 || r.status >= 400 || !location) {
      throw new Error(`${url.href} answered ${r.status}: ${(await r.text()).slice(0, 300)}`);
    }
    await r.body?.cancel();
    url = new URL(location, url);
  }
  throw new Error(`no redirect to ${REDIRECT_URI} after ${MAX_AUTHORIZATION_HOPS} hops`);
}

/** The SDK's OAuthClientProvider, in memory: registration, PKCE verifier and tokens kept here. */
class MemoryOAuthProvider {
  constructor() {
    this.client = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.authorizationUrl = undefined;
    this.code = undefined;
  }
  get redirectUrl() { return REDIRECT_URI; }
  get clientMetadata() {
    return {
      client_name: 'mcpcore-oauth-interop', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code'],
      response_types: ['code'], token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  async redirectToAuthorization(url) {
    this.authorizationUrl = new URL(url);
    this.code = await followAuthorization(url);
  }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
}

// ---- the host ---------------------------------------------------------------------------------------------

/** Starts mcpcore-host with --oauth-issuer on a port picked first (its audience names it). */
async function startHost() {
  let lastError;
  for (let attempt = 0; attempt < HOST_START_ATTEMPTS; ++attempt) {
    const port = await freePort();
    resource = `http://127.0.0.1:${port}/mcp`;
    const args = ['--data-dir', join(work, 'data'), '--port', String(port), '--port-file', portFile, '--no-journal',
      '--oauth-issuer', as.issuer, '--oauth-audience', resource, '--oauth-allow-http',
      '--oauth-jwks-min-interval-ms', String(JWKS_MIN_INTERVAL_MS)];
    try {
      const started = await startServerProcess(hostBinary, args, portFile, { waitMs: PORT_FILE_WAIT_MS, stdout: 'pipe' });
      host = started.child;
      host.stdout.resume();
      expectEqual(started.port, port, 'the port the host bound');
      return;
    } catch (error) {
      lastError = error;  // the port was taken meanwhile: pick another
    }
  }
  throw lastError;
}

/** POSTs one JSON-RPC message to the host with `token` (none when undefined) and `headers`. */
function post(message, { token, headers = {} } = {}) {
  const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers };
  if (token !== undefined) h.Authorization = `Bearer ${token}`;
  return fetch(resource, { method: 'POST', headers: h, body: JSON.stringify(message), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
}

const initializeMessage = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'mcpcore-oauth-raw', version: '1.0.0' } },
};

/** Initializes a session with `token`; resolves with `{status, wwwAuthenticate, session, result}`. */
async function initialize(token) {
  const r = await post(initializeMessage, { token });
  const out = { status: r.status, wwwAuthenticate: r.headers.get('www-authenticate') ?? '', session: r.headers.get('mcp-session-id') };
  if (r.status === 200) {
    out.result = (await messagesOf(r)).find((m) => m.id === 1)?.result;
  } else {
    await r.body?.cancel();
  }
  return out;
}

/** Calls tool `name` in a fresh session of `token`; resolves with `{status, wwwAuthenticate, response}`. */
async function callToolRaw(token, name, args) {
  const init = await initialize(token);
  expectEqual(init.status, 200, `initialize status (challenge ${fmt(init.wwwAuthenticate)})`);
  const headers = { 'MCP-Protocol-Version': PROTOCOL_VERSION };
  if (init.session) headers['Mcp-Session-Id'] = init.session;
  const notified = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { token, headers });
  await notified.body?.cancel();
  const r = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } }, { token, headers });
  const out = { status: r.status, wwwAuthenticate: r.headers.get('www-authenticate') ?? '' };
  out.response = (await messagesOf(r)).find((m) => m.id === 2);
  return out;
}

// ---- the run --------------------------------------------------------------------------------------------

const firstKey = signingKey('mcpcore-interop-key-1');
const secondKey = signingKey('mcpcore-interop-key-2');

await check('oidc-provider and mcpcore-host --oauth-issuer start; the host creates no token file', async () => {
  as = await startAuthorizationServer(0, [firstKey]);
  await startHost();
  expect(!existsSync(join(work, 'data', 'tokens')), 'a token file was created');
}, { needsSdk: false });

let sdkToken;
await check('initialize: the SDK client completes the MCP authorization flow (PRM, AS metadata, registration, code + PKCE, resource) and calls a read tool', async () => {
  const provider = new MemoryOAuthProvider();
  let transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider });
  let client = new Client({ name: 'mcpcore-oauth-interop', version: '1.0.0' }, { capabilities: {} });
  let refused;
  try {
    await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  } catch (error) {
    refused = error;
  }
  expect(refused instanceof UnauthorizedError, `the first connection is not UnauthorizedError: ${fmt(String(refused))}`);
  expect(provider.client?.client_id, `no client was registered dynamically: ${fmt(provider.client)}`);
  const asked = provider.authorizationUrl;
  expectEqual(asked?.searchParams.get('resource'), resource, 'the authorization request\'s resource');
  expectEqual(asked?.searchParams.get('code_challenge_method'), 'S256', 'the authorization request\'s PKCE method');
  expectEqual(asked?.searchParams.get('scope'), 'mcp:read', 'the scope asked for (the challenge\'s)');
  expect(provider.code, 'no authorization code');
  await transport.finishAuth(provider.code);
  sdkToken = provider.saved?.access_token;
  expect(sdkToken, `no access token was saved: ${fmt(provider.saved)}`);
  const { header, claims } = decodeJwt(sdkToken);
  expectEqual([header.alg, header.kid], [ALG, firstKey.kid], 'the token\'s alg and kid');
  expectEqual([claims.iss, claims.aud, claims.sub, claims.scope], [as.issuer, resource, ACCOUNT, 'mcp:read'],
    'the token\'s iss, aud, sub, scope');

  transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider: provider });
  client = new Client({ name: 'mcpcore-oauth-interop', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  try {
    const { tools } = await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS });
    expect(tools.some((t) => t.name === 'get_system_summary'), `get_system_summary is not listed: ${fmt(tools.map((t) => t.name))}`);
    const summaryResult = await client.callTool({ name: 'get_system_summary', arguments: {} }, undefined,
      { timeout: REQUEST_TIMEOUT_MS });
    expect(!summaryResult.isError, `get_system_summary failed: ${fmt(summaryResult)}`);
    expect(typeof summaryResult.structuredContent?.hostname === 'string', `no hostname: ${fmt(summaryResult)}`);
  } finally {
    await client.close();
  }
}, { needsSdk: false });

let serviceToken;
await check('a client-credentials token for the resource is accepted (initialize 200)', async () => {
  const t = await clientCredentialsToken('mcp:read mcp:operate');
  serviceToken = t.access_token;
  const { claims } = decodeJwt(serviceToken);
  expectEqual([claims.aud, claims.client_id, claims.scope], [resource, SERVICE_CLIENT.client_id, 'mcp:read mcp:operate'],
    'the token\'s aud, client_id, scope');
  const init = await initialize(serviceToken);
  expectEqual(init.status, 200, `status (challenge ${fmt(init.wwwAuthenticate)})`);
  expectEqual(init.result?.serverInfo?.name, 'mcpcore-host', 'serverInfo.name');
}, { needsSdk: false });

await check('a token for another resource (wrong audience) is refused 401 invalid_token', async () => {
  const t = await clientCredentialsToken('mcp:read', OTHER_RESOURCE);
  expectEqual(decodeJwt(t.access_token).claims.aud, OTHER_RESOURCE, 'the other token\'s aud');
  const init = await initialize(t.access_token);
  expectEqual(init.status, 401, 'status');
  expect(init.wwwAuthenticate.startsWith('Bearer ') && init.wwwAuthenticate.includes('error="invalid_token"'),
    `WWW-Authenticate: ${fmt(init.wwwAuthenticate)}`);
}, { needsSdk: false });

await check('a tampered token (one payload character flipped) is refused 401 invalid_token', async () => {
  expect(serviceToken, 'no client-credentials token');
  const [h, p, s] = serviceToken.split('.');
  const i = Math.floor(p.length / 2);
  const flipped = `${p.slice(0, i)}${p[i] === 'A' ? 'B' : 'A'}${p.slice(i + 1)}`;
  const init = await initialize(`${h}.${flipped}.${s}`);
  expectEqual(init.status, 401, 'status');
  expect(init.wwwAuthenticate.includes('error="invalid_token"'), `WWW-Authenticate: ${fmt(init.wwwAuthenticate)}`);
}, { needsSdk: false });

await check('no token: 401 whose challenge points at the protected-resource metadata, which names the resource and the issuer', async () => {
  const init = await initialize(undefined);
  expectEqual(init.status, 401, 'status');
  const metadataUrl = `http://127.0.0.1:${new URL(resource).port}/.well-known/oauth-protected-resource/mcp`;
  expect(init.wwwAuthenticate.includes(`resource_metadata="${metadataUrl}"`), `WWW-Authenticate: ${fmt(init.wwwAuthenticate)}`);
  expect(!init.wwwAuthenticate.includes('error='), `an error code without a credential: ${fmt(init.wwwAuthenticate)}`);
  expect(init.wwwAuthenticate.includes('scope="mcp:read"'), `no challenge scope: ${fmt(init.wwwAuthenticate)}`);
  const r = await fetch(metadataUrl, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  expectEqual(r.status, 200, 'metadata status');
  const doc = JSON.parse(await bodyText(r));
  expectEqual([doc.resource, doc.authorization_servers, doc.scopes_supported], [resource, [as.issuer], SCOPES],
    '[resource, authorization_servers, scopes_supported]');
}, { needsSdk: false });

await check('key rotation: oidc-provider restarted with a new key first; its new token is accepted without restarting the host', async () => {
  const port = as.port;
  await stopAuthorizationServer();
  as = await startAuthorizationServer(port, [secondKey, firstKey]);
  const t = await clientCredentialsToken('mcp:read');
  expectEqual(decodeJwt(t.access_token).header.kid, secondKey.kid, 'the new token\'s kid');
  const deadline = Date.now() + ROTATION_WAIT_MS;
  const statuses = [];
  for (;;) {
    const init = await initialize(t.access_token);
    statuses.push(init.status);
    if (init.status === 200) break;
    expectEqual(init.status, 401, `status while the new key is unknown (so far ${fmt(statuses)})`);
    expect(Date.now() < deadline, `not accepted within ${ROTATION_WAIT_MS} ms: ${fmt(statuses)}`);
    await sleep(ROTATION_POLL_MS);
  }
  // The host knew only the first key: the new one can only have come from a fetch the first 401 asked for.
  expectEqual(statuses[0], 401, 'the first answer to the new key\'s token');
  expect(host.exitInfo === undefined, 'the host is no longer running');
  const old = await initialize(serviceToken);
  expectEqual(old.status, 200, 'a token of the old key, still published, after the rotation');
}, { needsSdk: false });

await check('step-up: set_tag with an mcp:read token is 403 insufficient_scope naming mcp:operate; with mcp:operate it succeeds', async () => {
  const readOnly = (await clientCredentialsToken('mcp:read')).access_token;
  const refused = await callToolRaw(readOnly, 'set_tag', { key: 'oauth.interop', value: 'step-up' });
  expectEqual(refused.status, 403, `status (answer ${fmt(refused.response)})`);
  expect(/^Bearer error="insufficient_scope", scope="mcp:read mcp:operate"/.test(refused.wwwAuthenticate),
    `WWW-Authenticate: ${fmt(refused.wwwAuthenticate)}`);
  const operate = (await clientCredentialsToken('mcp:read mcp:operate')).access_token;
  const done = await callToolRaw(operate, 'set_tag', { key: 'oauth.interop', value: 'step-up' });
  expectEqual(done.status, 200, `status (challenge ${fmt(done.wwwAuthenticate)})`);
  expect(done.response?.result && !done.response.result.isError, `set_tag: ${fmt(done.response)}`);
}, { needsSdk: false });

await check('mcpcore-host exits 0 on SIGTERM', async () => {
  const exit = await stopServerProcess(host, SERVER_EXIT_WAIT_MS);
  expect(!exit.killed, 'the host did not exit in time (killed)');
  expectEqual([exit.code, exit.signal], [0, null], '[exit code, signal]');
}, { needsSdk: false });

const status = summary();
clearTimeout(globalTimer);
cleanup();
process.exit(status);
