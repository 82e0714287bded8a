// Drives real Esplora client libraries for the esplora package's test.
// Arguments: the server's plain HTTP host:port (for @mempool/mempool.js) and
// its HTTPS host:port (for esplora-client, which speaks HTTPS only), both
// serving the API under /api. Reads one JSON command a line from stdin,
// {"lib": "mempool"|"esplora", "group": "addresses", "fn": "getAddress",
// "args": {...}}, calls the library and writes one JSON line: {"ok": result}
// or {"error": text, "status": HTTP status or 0}.
import readline from "node:readline";
import mempoolJS from "@mempool/mempool.js";
import { esploraClient } from "esplora-client";

const [httpHost, httpsHost] = process.argv.slice(2);
const libs = {
  mempool: mempoolJS({ hostname: httpHost, protocol: "http", network: "main" }).bitcoin,
  esplora: esploraClient({ hostnames: [httpsHost], network: "mainnet" }).bitcoin,
};

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const c = JSON.parse(line);
  let out;
  try {
    out = { ok: await libs[c.lib][c.group][c.fn](c.args) };
  } catch (e) {
    const data = e.response?.data;
    out = {
      error: typeof data === "string" ? data : String(e.message),
      status: e.response?.status ?? e.status ?? 0,
    };
  }
  process.stdout.write(JSON.stringify(out === undefined ? { ok: null } : out) + "\n");
}
