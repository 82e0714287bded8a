#!/bin/bash
# Times Esplora requests against a running node, one curl (one connection)
# per request: the longest histories of a scripts file (cmd/chaingen's
# scripts.txt: Electrum script hashes, longest first), with the spenders of
# their first page's transactions as a wallet's address page asks for them,
# and a sample of ordinary scripts after them.
#
#   esplora/testdata/measure.sh http://127.0.0.1:3000 bin/chains/mainnet-1000000/scripts.txt [heavy] [sample]
set -e
B=$1 S=$2 HEAVY=${3:-10} SAMPLE=${4:-300}
rev() { python3 -c "import sys;print(bytes.fromhex(sys.argv[1])[::-1].hex())" "$1"; }
t() { curl -s -o /tmp/esplora-measure.json -w '%{http_code} %{time_total}s\n' "$B$1"; }
grep -v '^#' "$S" | head -"$HEAVY" | while read -r esh hist uns kind; do
	sh=$(rev "$esh")
	echo "$kind: history $hist, unspent $uns"
	echo -n "  txs/chain first page: "; t "/scripthash/$sh/txs/chain"
	txids=$(python3 -c "import json;print(' '.join(t['txid'] for t in json.load(open('/tmp/esplora-measure.json'))))")
	last=${txids##* }
	echo -n "  txs/chain next page:  "; t "/scripthash/$sh/txs/chain/$last"
	echo -n "  stats, first time:    "; t "/scripthash/$sh"
	echo -n "  stats, again:         "; t "/scripthash/$sh"
	echo -n "  utxo:                 "; t "/scripthash/$sh/utxo"
	echo -n "  outspends of the first page's transactions, one after another: "
	for txid in $txids; do
		curl -s -o /dev/null -w '%{time_total}\n' "$B/tx/$txid/outspends"
	done | sort -n | awk '{v[NR]=$1; s+=$1} END {printf "%d requests, %.1f ms in all, median %.1f ms\n", NR, 1000*s, 1000*v[int((NR+1)/2)]}'
done
for ep in "" /txs/chain /utxo; do
	grep -v '^#' "$S" | tail -n +101 | head -"$SAMPLE" | while read -r esh _; do
		curl -s -o /dev/null -w '%{time_total}\n' "$B/scripthash/$(rev "$esh")$ep"
	done | sort -n | awk -v ep="/scripthash/:hash$ep" '{v[NR]=$1; s+=$1} END {
		printf "%s, %d scripts: mean %.1f ms, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			ep, NR, 1000*s/NR, 1000*v[int(NR*0.5)], 1000*v[int(NR*0.99)], 1000*v[NR]}'
done
