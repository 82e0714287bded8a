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

.PHONY: all build test test-unit deps lint bench fmt clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/btcd-electrum

deps:
	$(GO) mod download

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: deps lint
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 20x -timeout 30m ./indexers/

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
