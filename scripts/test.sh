#!/usr/bin/env bash
# The test command (npm test): type-check, start private test servers, compile the tests to
# JavaScript once (scripts/build-tests.mjs, into .build/), run every test file (tap test files,
# each in a plain node process: scripts/run-tests.mjs), and end with one plain "N passed, N failed"
# line.
#   npm test                                 all tests
#   npm test -- test/foo.test.ts test/edge   some files, or every file of a folder
#   TEST_JOBS=1 SKIP_TYPECHECK=1 npm test -- ...   one file at a time, no type-check
set -uo pipefail
cd "$(dirname "$0")/.."
export METADATA_SERVER_DETECTION=none CORTADO_STRICT=1 CORTADO_LOG_LEVEL=${CORTADO_LOG_LEVEL:-silent}

if [ -z "${SKIP_TYPECHECK:-}" ]; then
  echo "# type-check"
  if ! npx tsc --noEmit -p tsconfig.json; then echo "0 passed, 1 failed (type-check)"; exit 1; fi
fi

started_here=0
if [ -z "${DATABASE_URL:-}" ]; then
  eval "$(bash scripts/services-up.sh)" || { echo "0 passed, 1 failed (test services did not start)"; exit 1; }
  started_here=1
fi
cleanup=()
on_exit() { for c in "${cleanup[@]}"; do eval "$c"; done; }
trap on_exit EXIT
[ $started_here = 1 ] && cleanup+=('bash scripts/services-down.sh "$SVC_DIR"')

# tap builds its Test class with the configured plugins (.taprc) on the first run after an
# install, but that run has already read the loaders of the prebuilt default set, so each of its
# test files would also load @tapjs/typescript (ts-node) beside tsx: build it first when the
# installed class still has that plugin (a fresh `npm ci`)
built=node_modules/@tapjs/test/test-built/dist/esm/index.js
if [ ! -f "$built" ] || grep -q '@tapjs/typescript' "$built"; then npx tap build >/dev/null; fi

files=("$@")
if [ ${#files[@]} -eq 0 ]; then mapfile -t files < <(find test -name '*.test.ts' | sort); fi
# compiled once (scripts/build-tests.mjs): tap runs test/x.test.ts as .build/test/x.test.js
node scripts/build-tests.mjs >/dev/null || { echo "0 passed, 1 failed (the tests did not compile)"; exit 1; }
build=.build
run=()
for f in "${files[@]}"; do
  if [ -d "$f" ]; then mapfile -t -O ${#run[@]} run < <(find "$f" -name '*.test.ts' | sort | sed "s#^\(.*\)\.ts\$#$build/\1.js#"); continue; fi
  case "$f" in
    *.ts) rel=$(realpath -m --relative-to=. "$f"); run+=("$build/${rel%.ts}.js") ;;
    *) run+=("$f") ;;
  esac
done
# TEST_SHARED_BROWSER=1: one Chromium for the whole run (test/helpers/browser.ts), when a file of it
# drives a browser: the files connect to it instead of each starting and stopping their own. Off by
# default for now: in its first clean-clone run one widget subtest waited 30 s for its question box
# (not explained; it passed alone), and a browser per file has a long record of green runs
if [ "${TEST_SHARED_BROWSER:-0}" = 1 ] && grep -lq launchBrowser "${run[@]}" 2>/dev/null; then
  ws_file=$(mktemp)
  node "$build/test/helpers/browser-server.js" >"$ws_file" </dev/null &
  browser_pid=$!
  cleanup+=('kill -TERM $browser_pid 2>/dev/null; wait $browser_pid 2>/dev/null; rm -f "$ws_file"')
  for _ in $(seq 1 300); do grep -q '^ws://' "$ws_file" && break; kill -0 $browser_pid 2>/dev/null || break; sleep 0.1; done
  if grep -q '^ws://' "$ws_file"; then export CORTADO_TEST_BROWSER_WS=$(head -1 "$ws_file"); else echo "# the shared Chromium did not start: each browser file starts its own"; fi
fi
out=$(mktemp)
# a file may take 300 s (TEST_TIMEOUT) before it is ended: the browser files take 60-90 s alone and
# passed 180 s on a loaded machine (load average 10)
# each file in a plain node process (scripts/run-tests.mjs: tap's runner would add two module hooks
# to each, 0.25-2 s of CPU a file); the stream names a file by the path it ran, its lines name the
# source (test/x.test.ts), as before. Three files at a time: a test process is mostly waiting on
# the servers it drives (654 s of CPU over 2,309 s of wall across all files, one at a time), so a
# third keeps two cores busier; the files that measure time against a bound say
# `// test-runner: alone` and run after the others, on their own
node scripts/run-tests.mjs --jobs="${TEST_JOBS:-3}" --timeout="${TEST_TIMEOUT:-300}" --node-arg=--enable-source-maps "${run[@]}" 2>&1 \
  | sed -u -E '/^ *(# Subtest: |(not )?ok [0-9]+ - )/ s#\.build/(test/[^ ]*)\.test\.js#\1.test.ts#' | tee "$out"
rc=${PIPESTATUS[0]}
node -e '
  const s = require("fs").readFileSync(process.argv[1], "utf8");
  // what failed, by file and subtest, just above the last line (a CI log keeps only its tail)
  const stack = [], failures = [];
  for (const line of s.split("\n")) {
    const t = line.match(/^( *)(?:# Subtest: (.*)|not ok \d+ - (.*?)(?: # time=.*)?)$/);
    if (!t || / # (TODO|SKIP)\b/.test(line)) continue;
    const depth = t[1].length / 4;
    if (t[2] !== undefined) { stack.length = depth; stack[depth] = t[2]; continue; }
    const path = stack.slice(0, depth).filter(Boolean);
    if (!failures.some((f) => f.startsWith([...path, t[3]].join(" > ")))) failures.unshift([...path, t[3]].join(" > "));
  }
  const leaves = failures.filter((f, i) => !failures.some((g, j) => j !== i && g.startsWith(f + " > ")));
  if (leaves.length) console.log("# failed:\n" + leaves.slice(0, 40).map((f) => "#   " + f.slice(0, 300)).join("\n"));
  const m = s.match(/^# \{ (total: .*) \}$/m);
  const c = Object.fromEntries((m ? m[1] : "").split(", ").filter(Boolean).map((kv) => kv.split(": ")).map(([k, v]) => [k, +v]));
  const failed = (c.fail ?? 0) + (m ? 0 : 1);
  const skipped = (c.skip ?? 0) + (c.todo ?? 0);
  console.log(`${c.pass ?? 0} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
' "$out"
rm -f "$out"
exit $rc
