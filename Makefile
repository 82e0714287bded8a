# btcd-electrum build and test entry points.
#
# `make test` is what CI runs (.ci/run) and must work on a fresh machine: it
# installs whatever the tests need (Go modules through the module proxy, the
# npm client libraries used by the Electrum end-to-end tests) before running.

GO        ?= go
GOFLAGS   ?=
PKGS      := ./...
# Packages with goroutines of their own; tested with the race detector.
RACE_PKGS := ./indexers/... ./electrum/... ./rpcext/... ./node/...
BIN       := bin/btcd-electrum
# `make run`: a regtest node with the Electrum server on 127.0.0.1:50001 and
# JSON-RPC (no TLS) on 127.0.0.1:18334, data under ./data (git-ignored).
# Blocks are mined to the regtest address of the well-known test key in the
# README. Extra flags: make run RUN_ARGS="--debuglevel=debug".
RUN_MINING_ADDR := bcrt1ql3e9pgs3mmwuwrh95fecme0s0qtn2880hlwwpw
RUN_ARGS  ?=

# Fuzz targets run for FUZZTIME each as part of `make test`; longer runs:
# make fuzz FUZZTIME=10m.
FUZZTIME  ?= 10s
FUZZ_TARGETS := ./electrum/:FuzzDecodeMessage ./electrum/:FuzzLineFraming \
	./electrum/:FuzzStatusNotification ./rpcext/:FuzzProcessBody

.PHONY: all build test test-unit deps lint bench fmt clean run fuzz

all: build

build:
	$(GO) build -o $(BIN) ./cmd/btcd-electrum
	$(GO) build -o bin/electrum-load ./cmd/electrum-load

deps:
	$(GO) mod download
	npm ci --prefix electrum/testdata/js

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: deps lint
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(MAKE) fuzz

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Benchmarks behind docs/BENCHMARKS.md (about 5 minutes on 2 cores).
bench:
	$(GO) test -run '^$$' -bench 'ConnectBlock' -benchtime 20x -timeout 30m ./indexers/
	CATCHUP_TXS=400000 $(GO) test -run '^$$' -bench 'CatchUp' -benchtime 1x -timeout 30m ./indexers/
	CATCHUP_TXS=1000000 $(GO) test -run '^$$' -bench 'CatchUp' -benchtime 1x -timeout 30m ./indexers/
	$(GO) test -run '^$$' -bench 'Requests' -benchtime 20000x -timeout 30m ./electrum/
	$(GO) test -run '^$$' -bench 'IdleSessionMemory|TenThousandSessions|NotifyLatency' -benchtime 3x -timeout 30m ./electrum/

fmt:
	gofmt -w $$(git ls-files '*.go')

run: build
	$(BIN) --regtest --datadir=data/node --logdir=data/logs \
		--listen=127.0.0.1 --rpclisten=127.0.0.1 --rpcuser=electrum --rpcpass=electrum --notls \
		--electrumindex --electrumlisten=127.0.0.1:50001 \
		--miningaddr=$(RUN_MINING_ADDR) $(RUN_ARGS)

clean:
	rm -rf bin
