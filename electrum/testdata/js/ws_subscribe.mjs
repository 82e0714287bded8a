// Subscribe-mine-notify flow over WebSocket with @electrum-cash/network and
// @electrum-cash/web-socket.
// Usage: node ws_subscribe.mjs <port> <scripthash>
// Prints one line per step; the Go test acts on READY and NOTIFIED.
import { ElectrumClient } from '@electrum-cash/network';
import { ElectrumWebSocket } from '@electrum-cash/web-socket';

const [port, scripthash] = process.argv.slice(2);
const fail = (msg) => { console.log('FAIL ' + msg); process.exit(1); };
setTimeout(() => fail('timeout'), 60000);

const socket = new ElectrumWebSocket('127.0.0.1', Number(port), false);
const client = new ElectrumClient('electrum-cash-e2e', '1.4', socket);
const statuses = [];
let waiter = null;
let headers = 0;
let tip = null;
client.on('notification', (n) => {
  if (n.method === 'blockchain.headers.subscribe') {
    // The subscription's own answer also arrives as a notification; count
    // only tips above the one seen at start.
    if (tip !== null && n.params[0].height > tip.height) headers++;
    return;
  }
  if (n.method !== 'blockchain.scripthash.subscribe') return;
  if (n.params[0] !== scripthash) fail('notification for ' + n.params[0]);
  statuses.push(n.params[1]);
  if (waiter) { const w = waiter; waiter = null; w(); }
});
const waitFor = (count) => new Promise((resolve) => {
  const check = () => { if (statuses.length >= count) resolve(); else waiter = check; };
  check();
});

try {
  await client.connect();
  tip = await client.request('blockchain.headers.subscribe');
  await client.subscribe('blockchain.headers.subscribe');
  // The subscription's first answer arrives as a notification.
  await client.subscribe('blockchain.scripthash.subscribe', scripthash);
  await waitFor(1);
  console.log('READY ' + statuses[0] + ' ' + tip.height);

  await waitFor(2);
  const hist1 = await client.request('blockchain.scripthash.get_history', scripthash);
  const bal1 = await client.request('blockchain.scripthash.get_balance', scripthash);
  console.log('NOTIFIED ' + statuses[1] + ' ' + JSON.stringify(hist1) + ' ' + JSON.stringify(bal1));

  await waitFor(3);
  const hist2 = await client.request('blockchain.scripthash.get_history', scripthash);
  const utxos = await client.request('blockchain.scripthash.listunspent', scripthash);
  const merkle = await client.request('blockchain.transaction.get_merkle', hist2[0].tx_hash, hist2[0].height);
  console.log('CONFIRMED ' + statuses[2] + ' ' + JSON.stringify(hist2) + ' ' + JSON.stringify(utxos) + ' ' + merkle.block_height + ' headers=' + headers);
  await client.disconnect(true);
  process.exit(0);
} catch (e) {
  fail(e instanceof Error ? e.stack.replace(/\n/g, ' | ') : JSON.stringify(e));
}
