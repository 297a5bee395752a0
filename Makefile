# Convoy — the two commands: `make demo` and `make test`. Both install what is
# missing first (scripts/setup is idempotent).
SWIFT ?= swift
CONVOY_DEBUG := .build/debug/convoy
CONVOY_RELEASE := .build/release/convoy
DEMO_OUT := results/demo-$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: all setup build release test demo bench tracks vectors clean

all: build

setup:
	@scripts/setup

build: setup
	$(SWIFT) build

release: setup
	$(SWIFT) build -c release --product convoy

# The whole test suite. CONVOY_REQUIRE_PYTHON_TOOLS and CONVOY_REQUIRE_POSTGRES
# make the PyNaCl interop, supabase-py and PostgreSQL tests fail, not skip, if
# what they need (installed by scripts/setup) is missing.
test: setup
	scripts/check-imports
	CONVOY_REQUIRE_PYTHON_TOOLS=1 CONVOY_REQUIRE_POSTGRES=1 \
	  scripts/pg-test-cluster run /tmp/convoy-pg-test-$$$$ $(SWIFT) test

# The main job. Until `convoy run` lands (issue 4) it shows what ships today:
# a synthetic track, inspection of shipped and real tracks, NMEA for gpsfake.
demo: release
	@mkdir -p $(DEMO_OUT)
	$(CONVOY_RELEASE) --version
	$(CONVOY_RELEASE) gpx synth --profile cycle --duration 20m --seed 7 --origin 52.3731,4.8922 --urban-canyon 5m..9m --out $(DEMO_OUT)/cycle.gpx
	$(CONVOY_RELEASE) gpx inspect $(DEMO_OUT)/cycle.gpx gpx/transit-tokyo.gpx
	@if [ -d ../shared/data ]; then $(CONVOY_RELEASE) gpx inspect ../shared/data/gpx/cerknicko-jezero.gpx ../shared/data/nmea/haicom-305N.log; fi
	$(CONVOY_RELEASE) gpx nmea $(DEMO_OUT)/cycle.gpx --out $(DEMO_OUT)/cycle.nmea
	@echo "demo output in $(DEMO_OUT)/ (replay the NMEA into gpsd: gpsfake -c 1 $(DEMO_OUT)/cycle.nmea)"

# Benchmarks in release mode; figures recorded in docs/performance.md.
# The server bench starts `convoy serve` (release) as its own process.
bench: setup
	$(SWIFT) build -c release --product convoy
	$(SWIFT) run -c release convoy-bench
	$(SWIFT) run -c release convoy-bench server
	CONVOY_PG_FSYNC=on scripts/pg-test-cluster run /tmp/convoy-pg-bench-$$$$ \
	  sh -c '$(SWIFT) run -c release convoy-bench server --database "$$CONVOY_TEST_POSTGRES_URL"'

# Regenerate gpx/ from gpx/tracks.tsv (byte-identical; a test checks it).
tracks: build
	scripts/make-tracks

# Regenerate the PyNaCl test vectors (new random ciphertexts, same keys).
vectors: setup
	scripts/.venv/bin/python3 scripts/make_crypto_vectors.py > Tests/ConvoyCryptoTests/Vectors/pynacl-vectors.json

clean:
	rm -rf .build
