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

# `make fuzz` runs each fuzz target for FUZZTIME (make fuzz FUZZTIME=10m;
# docs/RELIABILITY.md, "Fuzzing", says what each covers). `make test` runs
# each for the number of executions after its name here (a few seconds
# each on 2 cores): a count, not a duration, because with a duration Go
# 1.26's fuzzing coordinator can fail a target with "context deadline
# exceeded" at the deadline when the machine is busy.
FUZZTIME  ?= 10s
FUZZ_TARGETS := ./electrum/:FuzzDecodeMessage:30000 ./electrum/:FuzzLineFraming:20000 \
	./electrum/:FuzzStatusNotification:50000 ./electrum/:FuzzFastJSON:30000 \
	./electrum/:FuzzTCPSession:4000 ./electrum/:FuzzWebSocketFrames:4000 \
	./electrum/:FuzzDispatch:5000 ./electrum/:FuzzMethodParams:10000 \
	./rpcext/:FuzzProcessBody:10000 \
	./indexers/:FuzzSchemaDecoders:50000 ./indexers/:FuzzIndexReads:5000 \
	./esplora/:FuzzScriptForms:20000

# `make bench-e2e`: the built node end to end on a generated mainnet-shaped
# chain (cmd/e2ebench), beside btcd v0.26.2's --addrindex and --txindex. The
# chain is generated into E2E_CHAIN (git-ignored under bin/) when missing;
# results go to E2E_OUT (tables on stdout, JSON, an SVG chart and a Markdown
# section for docs/BENCHMARKS.md). A chain generated elsewhere:
# make bench-e2e E2E_CHAIN=/path/to/chain.
BTCD_BIN  := bin/btcd-v0.26.2/btcd
E2E_TXS   ?= 1000000
E2E_CHAIN ?= bin/chains/mainnet-$(E2E_TXS)
E2E_RUNS  ?= 2
E2E_OUT   ?= bin/e2e
CHAINGEN  ?= $(GO) run ./cmd/chaingen

.PHONY: all build test test-unit test-neutrino deps lint bench bench-chain bench-e2e bench-load bench-hostile btcd-v0.26.2 fmt clean run fuzz fuzz-short soak

all: build

build:
	$(GO) build -o $(BIN) ./cmd/btcd-electrum
	$(GO) build -o bin/btcd-electrum-ctl ./cmd/btcd-electrum-ctl
	$(GO) build -o bin/electrum-load ./cmd/electrum-load

deps:
	$(GO) mod download
	cd $(NEUTRINO_DIR) && $(GO) mod download
	npm ci --prefix electrum/testdata/js
	npm ci --prefix esplora/testdata/js

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: deps lint
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	$(MAKE) test-neutrino
	$(MAKE) fuzz-short

# A real BIP 157 light client (Lightning Labs' Neutrino, a module of its own
# on an older btcd) syncing headers, filter headers and filters from the
# built node on regtest, and following a reorg (about 10 seconds).
NEUTRINO_DIR := integration/neutrino
test-neutrino: build
	cd $(NEUTRINO_DIR) && $(GO) vet ./... && \
		BTCD_ELECTRUM_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 5m ./...

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; name=$${name%%:*}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

fuzz-short:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; name=$${name%%:*}; n=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $$n executions"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $${n}x $$pkg; \
	done

# The long forms of the reliability tests (docs/RELIABILITY.md): 200 SIGKILLs
# of the node binary, 1,000 reorganizations under subscribed sessions and
# 10,000 blocks at the tip with the store checked against a build from
# scratch (make test runs 11, 50 and 1,000). SOAK_SEED repeats a run's random choices.
SOAK_KILLS  ?= 200
SOAK_REORGS ?= 1000
soak:
	CRASH_KILLS=$(SOAK_KILLS) $(if $(SOAK_SEED),CRASH_SEED=$(SOAK_SEED)) \
		$(GO) test -count=1 -timeout 4h -run '^TestCrashKillRestart$$' -v ./integration/
	STORM_REORGS=$(SOAK_REORGS) $(if $(SOAK_SEED),STORM_SEED=$(SOAK_SEED)) \
		$(GO) test -count=1 -timeout 4h -run '^TestReorgStorm$$' -v ./integration/
	TIP_BLOCKS=10000 $(GO) test -count=1 -timeout 1h -run '^TestTipGrowth$$' -v ./indexers/

# Benchmarks behind docs/BENCHMARKS.md: the in-process ones (about 5 minutes
# on 2 cores), then the built binary end to end on a generated mainnet-shaped
# chain (bench-e2e, bench-load: about 25 minutes with the default 1,000,000
# transactions; the chain is generated once into E2E_CHAIN).
bench:
	$(GO) test -run '^$$' -bench 'ConnectBlock' -benchtime 20x -timeout 30m ./indexers/
	CATCHUP_TXS=400000 $(GO) test -run '^$$' -bench 'CatchUp' -benchtime 1x -timeout 30m ./indexers/
	CATCHUP_TXS=1000000 $(GO) test -run '^$$' -bench 'CatchUp' -benchtime 1x -timeout 30m ./indexers/
	$(GO) test -run '^$$' -bench 'Requests' -benchtime 20000x -timeout 30m ./electrum/
	$(GO) test -run '^$$' -bench 'IdleSessionMemory|TenThousandSessions|NotifyLatency' -benchtime 3x -timeout 30m ./electrum/
	$(GO) test -run '^$$' -bench 'StartNode' -benchtime 10x ./integration/
	$(MAKE) bench-chain
	CATCHUP_GENCHAIN=$(E2E_CHAIN) $(GO) test -run '^$$' -bench 'CatchUp' -benchtime 1x -timeout 30m ./indexers/
	CATCHUP_GENCHAIN=$(E2E_CHAIN) CATCHUP_MEM=1000 $(GO) test -run '^$$' -bench 'CatchUp' -benchtime 1x -timeout 30m ./indexers/
	SINKS_CHAIN=$(E2E_CHAIN) $(GO) test -run '^$$' -bench 'RowSinks' -benchtime 1x -timeout 30m ./indexers/
	$(MAKE) bench-e2e bench-load

# btcd v0.26.2 itself, for the end-to-end comparison.
btcd-v0.26.2: $(BTCD_BIN)

$(BTCD_BIN):
	GOBIN=$(CURDIR)/bin/btcd-v0.26.2 $(GO) install github.com/btcsuite/btcd@v0.26.2

# The generated mainnet-shaped chain the end-to-end benchmarks run on.
bench-chain:
	@test -f $(E2E_CHAIN)/chain.json || $(CHAINGEN) -out $(E2E_CHAIN) -txs $(E2E_TXS)

bench-e2e: build $(BTCD_BIN) bench-chain
	$(GO) build -o bin/e2ebench ./cmd/e2ebench
	mkdir -p $(E2E_OUT)
	bin/e2ebench catchup -chain $(E2E_CHAIN) -runs $(E2E_RUNS) -svg $(E2E_OUT)/catchup.svg \
		-json $(E2E_OUT)/catchup.json -md $(E2E_OUT)/e2e.md
	bin/e2ebench ibd -chain $(E2E_CHAIN) -runs $(E2E_RUNS) -json $(E2E_OUT)/ibd.json -md $(E2E_OUT)/e2e.md

# The Electrum server under wallet load on the generated chain: the node on a
# copy of it, then bin/electrum-load's request mix at 20 and 100 sessions and
# single requests of the heaviest scripts.
bench-load: build bench-chain
	$(GO) build -o bin/e2ebench ./cmd/e2ebench
	mkdir -p $(E2E_OUT)
	bin/e2ebench load -chain $(E2E_CHAIN) -restart -sessions 20,100 -duration 20s -single 5 \
		-loadargs "-single-order subscribe,get_history,listunspent,get_balance" -json $(E2E_OUT)/load.json
	bin/e2ebench load -esplora -restart -chain $(E2E_CHAIN) -sessions 20,100 -duration 20s -single 6 -json $(E2E_OUT)/load-esplora.json

# The hostile-clients benchmark (docs/RELIABILITY.md, "Hostile clients"):
# the node on a copy of the generated chain, a well-behaved wallet measured
# without and with each attack in turn (5,000 idle connections, 1,000 slow
# readers, 2 MB lines, 10,000-request batches, subscription floods, invalid
# JSON, half-open TLS, bad WebSocket frames, 2,000 connections a second),
# three rounds of each, and the node's memory. About 20 minutes; make test
# runs the short form (TestHostileClients in integration/).
HOSTILE_ARGS ?=
bench-hostile: build bench-chain
	$(GO) build -o bin/e2ebench ./cmd/e2ebench
	mkdir -p $(E2E_OUT)
	bin/e2ebench hostile -chain $(E2E_CHAIN) -json $(E2E_OUT)/hostile.json -md $(E2E_OUT)/hostile.md $(HOSTILE_ARGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

run: build
	$(BIN) --regtest --datadir=data/node --logdir=data/logs \
		--listen=127.0.0.1 --rpclisten=127.0.0.1 --rpcuser=electrum --rpcpass=electrum --notls \
		--electrumindex --electrumlisten=127.0.0.1:50001 \
		--miningaddr=$(RUN_MINING_ADDR) $(RUN_ARGS)

clean:
	rm -rf bin
