// A wallet test in JavaScript against a bare btcd-electrum regtest binary:
// the node's JSON-RPC (faucet, generatetoaddress) over Node.js's http module
// and its Electrum server with the `electrum-client` npm library.
// Usage: node regtest_faucet.js <rpcport> <rpcuser> <rpcpass> <electrumport> <address> <scripthash> <mineaddress>
// Blocks are mined to <mineaddress>.
// Prints FUNDED <txid> <status> <history> once the faucet payment is seen in
// the mempool, then CONFIRMED <status> <history> <utxos> once a mined block
// confirms it.
'use strict';
const http = require('http');
const ElectrumClient = require('electrum-client');

const [rpcPort, rpcUser, rpcPass, electrumPort, address, scripthash, mineAddress] = process.argv.slice(2);
const fail = (msg) => { console.log('FAIL ' + msg); process.exit(1); };
setTimeout(() => fail('timeout'), 60000);

// rpc sends one JSON-RPC request to the node and resolves with its result.
const rpc = (method, params) => new Promise((resolve, reject) => {
  const body = JSON.stringify({ jsonrpc: '1.0', id: 1, method, params });
  const req = http.request({
    host: '127.0.0.1', port: Number(rpcPort), method: 'POST', path: '/',
    auth: rpcUser + ':' + rpcPass,
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
  }, (res) => {
    let data = '';
    res.on('data', (c) => { data += c; });
    res.on('end', () => {
      try {
        const reply = JSON.parse(data);
        if (reply.error) reject(new Error(method + ': ' + JSON.stringify(reply.error)));
        else resolve(reply.result);
      } catch (e) { reject(new Error(method + ': HTTP ' + res.statusCode + ' ' + data)); }
    });
  });
  req.on('error', reject);
  req.end(body);
});

(async () => {
  const ecl = new ElectrumClient(Number(electrumPort), '127.0.0.1', 'tcp');
  await ecl.connect();
  await ecl.server_version('regtest-faucet-e2e', '1.4');
  const statuses = [];
  let waiter = null;
  ecl.subscribe.on('blockchain.scripthash.subscribe', (params) => {
    if (params[0] !== scripthash) fail('notification for ' + params[0]);
    statuses.push(params[1]);
    if (waiter) { const w = waiter; waiter = null; w(); }
  });
  const waitFor = (count) => new Promise((resolve) => {
    const check = () => { if (statuses.length >= count) resolve(); else waiter = check; };
    check();
  });
  const initial = await ecl.blockchainScripthash_subscribe(scripthash);
  if (initial !== null) fail('initial status ' + initial);

  const txid = await rpc('faucet', [address, 1.5]);
  await waitFor(1);
  const hist1 = await ecl.blockchainScripthash_getHistory(scripthash);
  console.log('FUNDED ' + txid + ' ' + statuses[0] + ' ' + JSON.stringify(hist1));

  const hashes = await rpc('generatetoaddress', [1, mineAddress]);
  if (hashes.length !== 1) fail('generatetoaddress returned ' + JSON.stringify(hashes));
  await waitFor(2);
  const hist2 = await ecl.blockchainScripthash_getHistory(scripthash);
  const utxos = await ecl.blockchainScripthash_listunspent(scripthash);
  console.log('CONFIRMED ' + statuses[1] + ' ' + JSON.stringify(hist2) + ' ' + JSON.stringify(utxos));
  ecl.close();
  process.exit(0);
})().catch((e) => fail(e instanceof Error ? e.stack.replace(/\n/g, ' | ') : JSON.stringify(e)));
