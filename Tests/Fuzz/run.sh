#!/usr/bin/env bash
# Builds one libFuzzer harness with ASan and runs it: Tests/Fuzz/run.sh TARGET SECONDS [libFuzzer options…]
# TARGET: log | codec | snapshot | csv | json | http. Crashes land in Tests/Fuzz/Crashes/TARGET/; copy each one (once
# fixed) into Tests/Fuzz/Regressions/TARGET/ so that `swift test` replays it forever.
set -euo pipefail
target=${1:?usage: run.sh log|codec|snapshot|csv|json|http SECONDS}
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : $# ))
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/.build/fuzz
mkdir -p "$build" "$root/Tests/Fuzz/Crashes/$target"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -suppress-warnings -package-name moodledger)
eventlog=$(find "$root/Sources/EventLog" -name '*.swift')
# EventLog imports CPlatform (hardware CRC-32C, the SIGBUS guard, malloc_trim, getrandom): compiled with clang, found through
# its module map.
for c in crc32c guard memory random; do
    clang -c -O1 -g -fsanitize=fuzzer-no-link,address "$root/Sources/CPlatform/$c.c" -I "$root/Sources/CPlatform/include" -o "$build/$c.o"
done
cplatform=(-I "$root/Sources/CPlatform/include" "$build/crc32c.o" "$build/guard.o" "$build/memory.o" "$build/random.o")
if [ "$target" = log ]; then
    swiftc "${flags[@]}" "${cplatform[@]}" -module-name EventLog $eventlog "$root/Tests/Fuzz/Harnesses/log.swift" -o "$build/fuzz-log"
elif [ "$target" = http ]; then
    # The parser and the message types alone: no sockets, no ledger.
    swiftc "${flags[@]}" -module-name MoodLedgerServer "$root/Sources/MoodLedgerServer/HTTP/HTTPParser.swift" \
        "$root/Sources/MoodLedgerServer/HTTP/HTTPMessage.swift" "$root/Tests/Fuzz/Harnesses/http.swift" -o "$build/fuzz-http"
else
    # EventLog as an instrumented module of its own; the harness is compiled into MoodLedger (internal access).
    swiftc -sanitize=fuzzer,address -parse-as-library -O -g -suppress-warnings -package-name moodledger \
        -emit-library -static -emit-module -module-name EventLog -I "$root/Sources/CPlatform/include" $eventlog \
        -emit-module-path "$build/EventLog.swiftmodule" -o "$build/libEventLog.a"
    swiftc "${flags[@]}" "${cplatform[@]}" -module-name MoodLedger -I "$build" -L "$build" -lEventLog \
        $(find "$root/Sources/MoodLedger" -name '*.swift') "$root/Tests/Fuzz/Harnesses/$target.swift" \
        -o "$build/fuzz-$target"
fi
corpus=$build/corpus-$target
mkdir -p "$corpus"
seeds=$root/Tests/Fuzz/Seeds/$target
regressions=$root/Tests/Fuzz/Regressions/$target
dirs=("$corpus")
[ -d "$seeds" ] && dirs+=("$seeds")
[ -d "$regressions" ] && dirs+=("$regressions")
exec "$build/fuzz-$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$root/Tests/Fuzz/Crashes/$target/" -print_final_stats=1 "$@" "${dirs[@]}"
