// SPDX-License-Identifier: Apache-2.0
// What the TypeScript reference servers of the HTTP load benchmark (ts_echo_server.mjs,
// ts2026_echo_server.mjs; bench/http/run.sh) share: their command line, where they load the SDK
// from, and the port file the harness waits for.
//
// Command line: [--port N] [--port-file PATH] [--modules DIR]
//   --port        TCP port on 127.0.0.1 (default 0: an ephemeral port)
//   --port-file   write the bound port there once listening (the harness waits for it)
//   --modules     node_modules folder holding the server's SDK and its other packages
//                 (default: tests/interop/node_modules of this checkout, installed by `npm ci`)

import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * serverCli(name, sdkPackage): parses the command line of the server `name` (the prefix of its
 * messages), exiting 2 on an option without a value. Returns
 *   port        the port to listen on
 *   require     a require() that resolves from the --modules folder (bench/http has no
 *               node_modules of its own)
 *   sdkVersion  the version of the package `sdkPackage` there (e.g. '@modelcontextprotocol/sdk')
 *   listening(listener)  to call once `listener` (a node:http server) listens: writes the port
 *               file and says where the server listens
 */
export function serverCli(name, sdkPackage) {
  const args = process.argv.slice(2);
  function option(key, fallback) {
    const i = args.indexOf(key);
    if (i < 0) return fallback;
    if (i + 1 >= args.length) {
      console.error(`${name}: ${key} needs a value`);
      process.exit(2);
    }
    return args[i + 1];
  }
  const port = Number(option('--port', '0'));
  const portFile = option('--port-file', '');
  const modules = resolve(option('--modules', join(here, '..', '..', 'tests', 'interop', 'node_modules')));

  const require = createRequire(join(modules, 'package.json'));
  // Read the file: the SDK packages' export maps do not serve it (@modelcontextprotocol/sdk sends
  // its package.json to dist/cjs, @modelcontextprotocol/server does not expose it).
  const sdkVersion = JSON.parse(readFileSync(join(modules, sdkPackage, 'package.json'), 'utf8')).version;

  function listening(listener) {
    const bound = listener.address().port;
    if (portFile) writeFileSync(portFile, `${bound}\n`);
    console.error(`${name}: SDK ${sdkVersion} listening on http://127.0.0.1:${bound}/mcp (pid ${process.pid})`);
  }
  return { port, require, sdkVersion, listening };
}
