# Switchboard — build, test and demo entry points. Every target installs what it needs first.
SWIFT ?= swift
DEBIAN_PACKAGES := libsqlite3-dev pkg-config
BIN := .build/debug/switchboard

.PHONY: deps build test demo conformance clean

deps:
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

build: deps
	$(SWIFT) build

## The whole suite: unit, store contract, engine (including the SIGKILL crash test) and conformance.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

## Runs the engine on the in-memory backend and prints a readable timeline.
demo: deps
	$(SWIFT) build --product switchboard
	@$(BIN) demo

## The conformance kit against the memory backend, for each ID scheme.
conformance: build
	@for scheme in client content server; do $(BIN) conformance --adapter memory --id-scheme $$scheme || exit 1; done

clean:
	rm -rf .build
