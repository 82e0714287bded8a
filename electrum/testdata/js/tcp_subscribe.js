// Subscribe-mine-notify flow over TCP with the `electrum-client` npm library.
// Usage: node tcp_subscribe.js <port> <scripthash>
// Prints one line per step; the Go test acts on READY and NOTIFIED.
'use strict';
const ElectrumClient = require('electrum-client');

const [port, scripthash] = process.argv.slice(2);
const fail = (msg) => { console.log('FAIL ' + msg); process.exit(1); };
setTimeout(() => fail('timeout'), 60000);

(async () => {
  const ecl = new ElectrumClient(Number(port), '127.0.0.1', 'tcp');
  await ecl.connect();
  const ver = await ecl.server_version('electrum-client-e2e', '1.4');
  if (ver[1] !== '1.4') fail('negotiated ' + JSON.stringify(ver));
  const tip = await ecl.blockchainHeaders_subscribe();
  const statuses = [];
  let headers = 0;
  let waiter = null;
  ecl.subscribe.on('blockchain.scripthash.subscribe', (params) => {
    if (params[0] !== scripthash) fail('notification for ' + params[0]);
    statuses.push(params[1]);
    if (waiter) { const w = waiter; waiter = null; w(); }
  });
  ecl.subscribe.on('blockchain.headers.subscribe', (params) => { if (params[0].height > tip.height) headers++; });
  const waitFor = (count) => new Promise((resolve) => {
    const check = () => { if (statuses.length >= count) resolve(); else waiter = check; };
    check();
  });

  const initial = await ecl.blockchainScripthash_subscribe(scripthash);
  console.log('READY ' + initial + ' ' + tip.height);

  await waitFor(1);
  const hist1 = await ecl.blockchainScripthash_getHistory(scripthash);
  const bal1 = await ecl.blockchainScripthash_getBalance(scripthash);
  console.log('NOTIFIED ' + statuses[0] + ' ' + JSON.stringify(hist1) + ' ' + JSON.stringify(bal1));

  await waitFor(2);
  const hist2 = await ecl.blockchainScripthash_getHistory(scripthash);
  const utxos = await ecl.blockchainScripthash_listunspent(scripthash);
  const merkle = await ecl.blockchainTransaction_getMerkle(hist2[0].tx_hash, hist2[0].height);
  console.log('CONFIRMED ' + statuses[1] + ' ' + JSON.stringify(hist2) + ' ' + JSON.stringify(utxos) + ' ' + merkle.block_height + ' headers=' + headers);
  ecl.close();
  process.exit(0);
})().catch((e) => fail(e instanceof Error ? e.stack.replace(/\n/g, ' | ') : JSON.stringify(e)));
