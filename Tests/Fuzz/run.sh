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
# CPlatform (hardware CRC-32C, the SIGBUS guard, malloc_trim, getrandom, file calls): compiled with clang, found
# through its module map.
cobjects=()
for c in "$root"/Sources/CPlatform/*.c; do
    name=$(basename "$c" .c)
    clang -c -O1 -g -fsanitize=fuzzer-no-link,address "$c" -I "$root/Sources/CPlatform/include" -o "$build/$name.o"
    cobjects+=("$build/$name.o")
done
cplatform=(-I "$root/Sources/CPlatform/include" "${cobjects[@]}")
# Each module below the harness's is an instrumented static library of its own (package access across them, as in
# the package); the harness is compiled into its own module, so it reaches that module's internals.
library() {  # NAME
    swiftc -sanitize=fuzzer,address -parse-as-library -O -g -suppress-warnings -package-name moodledger \
        -emit-library -static -emit-module -module-name "$1" -I "$root/Sources/CPlatform/include" -I "$build" \
        $(find "$root/Sources/$1" -name '*.swift') -emit-module-path "$build/$1.swiftmodule" -o "$build/lib$1.a"
}
harness() {  # MODULE DEPENDENCIES...
    local module=$1
    shift
    # Listed from the bottom up; linked from the top down (a static library's references resolve in the ones after).
    for dependency in "$@"; do library "$dependency"; done
    swiftc "${flags[@]}" "${cplatform[@]}" -module-name "$module" -I "$build" -L "$build" \
        $(printf -- '-l%s\n' "$@" | tac) $(find "$root/Sources/$module" -name '*.swift') "$root/Tests/Fuzz/Harnesses/$target.swift" \
        -o "$build/fuzz-$target"
}
case $target in
log) harness EventLog Platform EventLogFormat ;;
codec) harness MoodModel EventLogFormat ;;
snapshot) harness MoodLedger Platform EventLogFormat EventLog MoodModel ;;
csv | json) harness MoodInterchange Platform EventLogFormat EventLog MoodModel MoodLedger ;;
http)
    # The parser, the message types and the shared codec alone: no sockets, no ledger.
    library HTTPWire
    swiftc "${flags[@]}" -module-name MoodLedgerServer -I "$build" -L "$build" -lHTTPWire \
        "$root/Sources/MoodLedgerServer/HTTP/HTTPParser.swift" "$root/Sources/MoodLedgerServer/HTTP/HTTPMessage.swift" \
        "$root/Tests/Fuzz/Harnesses/http.swift" -o "$build/fuzz-http"
    ;;
*) echo "unknown target $target" >&2; exit 2 ;;
esac
corpus=$build/corpus-$target
mkdir -p "$corpus"
seeds=$root/Tests/Fuzz/Seeds/$target
regressions=$root/Tests/Fuzz/Regressions/$target
dirs=("$corpus")
[ -d "$seeds" ] && dirs+=("$seeds")
[ -d "$regressions" ] && dirs+=("$regressions")
exec "$build/fuzz-$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$root/Tests/Fuzz/Crashes/$target/" -print_final_stats=1 "$@" "${dirs[@]}"
