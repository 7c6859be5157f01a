# Switchboard — build, test and demo entry points. Every target installs what it needs first.
SWIFT ?= swift
DEBIAN_PACKAGES := libsqlite3-dev pkg-config libcurl4-openssl-dev libcivetweb-dev libuv1-dev libhttp-parser-dev libssl-dev python3-venv libpq-dev postgresql
BIN := .build/debug/switchboard
VENV := .venv
PYTHON_PACKAGES := websockets==15.0.1 supabase==2.34.1 postgrest==2.34.1 realtime==2.34.1 storage3==2.34.1 \
                   xmtp-bindings==0.1.8 cryptography==50.0.2 python-socketio==5.18.1 python-engineio==4.15.1 \
                   websocket-client==1.9.2 aiohttp==3.14.5

.PHONY: deps build test sanitize demo conformance bench clean

deps: $(VENV)/.installed
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

## Python peers the interop tests talk to: the real `websockets` package, the official Supabase clients,
## libxmtp's codecs (xmtp-bindings), `cryptography` as an independent AES-GCM/HKDF implementation, and
## `python-socketio` (client over websocket-client, server on aiohttp) as the Socket.IO peer.
$(VENV)/.installed: Makefile
	@python3 -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check $(PYTHON_PACKAGES)
	@touch $@

build: deps
	$(SWIFT) build

## The whole suite: unit, store contract, engine (including the SIGKILL crash test), conformance, bridge, the
## Supabase-like server with the official clients, the XMTP-like node, codecs and adapter. Each group runs in a
## process of its own so the timing-sensitive engine tests do not compete with the servers for two cores; the
## network suites run alone because their leak checks count the process's threads and descriptors, and so do the
## store's executor suites, which time unrelated async work while the store waits on a lock.
TEST_ENV := SWITCHBOARD_PYTHON=$(CURDIR)/$(VENV)/bin/python
## Each test process gets this many seconds (a few minutes is normal); one still running then is a hang, and
## scripts/watchdog.sh prints its threads' stacks and fails the run.
TEST_WATCHDOG_SECONDS ?= 900
WATCHDOG := scripts/watchdog.sh $(TEST_WATCHDOG_SECONDS)
TEST_GROUPS := \
	'^(SwitchboardCoreTests|SwitchboardFuzzTests|SwitchboardStoreTests|SwitchboardPostgresTests|MemoryAdapterTests|SwitchboardEngineTests|SwitchboardConformanceTests|SwitchboardNetTests|SwitchboardBenchTests)\.' \
	'^(SupabaseProtocolTests|SupabaseServerTests|SupabaseAdapterTests)\.' \
	'^(XMTPCodecTests|XMTPCryptoTests|XMTPNodeTests|XMTPAdapterTests)\.' \
	'^(SocketIOProtocolTests|SocketIOServerTests|SocketIOAdapterTests)\.' \
	'^SwitchboardBridgeTests\.' \
	'^CommandLineTests\.'
test: deps
	$(SWIFT) build --build-tests
	@for group in $(TEST_GROUPS); do \
		echo "== swift test --filter $$group"; \
		$(TEST_ENV) $(WATCHDOG) $(SWIFT) test --skip-build --filter "$$group" --skip 'NetworkSuites|StoreExecutorTests' || exit 1; \
	done
	@echo "== swift test --filter NetworkSuites (isolated)"
	$(TEST_ENV) SWITCHBOARD_ISOLATED=1 $(WATCHDOG) $(SWIFT) test --skip-build --filter NetworkSuites
	@echo "== swift test --filter StoreExecutorTests (isolated)"
	$(TEST_ENV) $(WATCHDOG) $(SWIFT) test --skip-build --filter StoreExecutorTests
	@echo "== the chaos soak, short (scripts/soak/soak.py: 2 pairs, 20 s of traffic and chaos)"
	SOAK_SECONDS=20 SOAK_PAIRS=2 SOAK_RATE=6 SOAK_HALF_OPEN_SECONDS=10 SOAK_SETTLE_SECONDS=120 $(WATCHDOG) $(VENV)/bin/python scripts/soak/soak.py

## `make test`'s groups under AddressSanitizer and then ThreadSanitizer (where `Locked` is an NSLock, which TSan
## understands), each in a build folder of its own (.build-asan, .build-tsan); fails on any report and says how
## long each build and run took. `make sanitize SANITIZERS=thread` runs one of them.
SANITIZERS ?= address thread
sanitize: deps
	@status=0; for sanitizer in $(SANITIZERS); do \
		$(TEST_ENV) SWIFT=$(SWIFT) scripts/sanitize.sh $$sanitizer $(TEST_GROUPS) || status=1; \
	done; exit $$status

## Both reference servers on loopback, bridged; the bridge is SIGKILLed mid-burst and restarted; prints both
## timelines side by side, the ID map and a summary counted from the backends. (`switchboard demo --memory`
## runs the engine-only demo on the in-memory backend.)
demo: deps
	$(SWIFT) build --product switchboard
	@$(BIN) demo

## The conformance kit against the memory backend, for each ID scheme.
conformance: build
	@for scheme in client content server; do $(BIN) conformance --adapter memory --id-scheme $$scheme || exit 1; done

## Benchmarks in a release build: every scenario at quick sizes (about 80 s); see BENCHMARKS.md for the full run.
bench: deps
	$(SWIFT) build -c release --product switchboard
	.build/release/switchboard bench all --quick

## Fuzzing: libFuzzer + AddressSanitizer on every parser (`Fuzz/`, built in .build-fuzz so the normal build never
## sees fuzzer flags); each target runs FUZZ_SECONDS from its committed corpus and stops at the first finding.
## `make fuzz-minimize` merges what the runs found into the committed corpora. `make test` replays those corpora.
FUZZ_SECONDS ?= 60
.PHONY: fuzz fuzz-build fuzz-minimize
fuzz-build: deps
	$(SWIFT) build --package-path Fuzz --scratch-path $(CURDIR)/.build-fuzz -Xswiftc -sanitize=fuzzer,address
fuzz: fuzz-build
	@scripts/fuzz.sh run $(FUZZ_SECONDS)
fuzz-minimize: fuzz-build
	@scripts/fuzz.sh minimize

## The chaos soak on the debug build (scripts/soak/soak.py; SOAK_SECONDS, SOAK_PAIRS, SOAK_RATE, SOAK_SEED: 5 minutes,
## 8 pairs by default), then the connection load test, a measurement, on a release build like the benchmarks
## (scripts/soak/connload.py; LOAD_SOCKETS, LOAD_STREAMS, LOAD_SLOWLORIS). Each prints its figures and the time it
## took; either failing fails the target.
.PHONY: soak
soak: deps
	$(SWIFT) build --product switchboard
	$(SWIFT) build -c release --product switchboard
	@status=0; \
	$(VENV)/bin/python scripts/soak/soak.py || status=1; \
	SOAK_SWITCHBOARD=.build/release/switchboard $(VENV)/bin/python scripts/soak/connload.py || status=1; \
	exit $$status

clean:
	rm -rf .build .build-fuzz .build-asan .build-tsan $(VENV)
