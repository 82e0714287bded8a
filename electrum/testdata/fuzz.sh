#!/bin/sh
# Runs each fuzz target of the electrum package for a short time.
# Usage: electrum/testdata/fuzz.sh [fuzztime]   (from the repository root)
set -e
t=${1:-10s}
for f in FuzzDecodeMessage FuzzLineFraming FuzzStatusNotification; do
	go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" ./electrum/
done
