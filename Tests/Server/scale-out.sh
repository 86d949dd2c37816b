#!/usr/bin/env bash
# Past one machine, shown on loopback (Specs/server.md, "Past one machine"): two `moodledger serve` nodes, each
# owning its users' ledgers and accounts, behind nginx routing by `hash $http_x_api_key consistent`. Users are added
# through the node nginx sends their key to; wrk runs through nginx; every user ends up on exactly one node.
# Not run in CI. Needs nginx, wrk and curl (apt-get install nginx-light wrk curl) and a built `moodledger`.
# Usage: Tests/Server/scale-out.sh [USERS] (default 8)
set -euo pipefail
users=${1:-8}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MOODLEDGER:-$root/.build/debug/moodledger}
for tool in nginx wrk curl; do command -v "$tool" >/dev/null || { echo "scale-out: $tool is missing" >&2; exit 69; }; done
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Two nodes on free ports.
declare -A port
for node in a b; do
    mkdir -p "$work/$node"
    "$bin" serve --data "$work/$node" --port 0 --writes-per-hour 0 --reads-per-hour 0 > "$work/$node.out" 2>&1 &
    pids+=($!)
    until grep -q listening "$work/$node.out"; do sleep 0.1; done
    port[$node]=$(grep -o '127.0.0.1:[0-9]*' "$work/$node.out" | head -1 | cut -d: -f2)
done

# nginx in front: the API key picks the node (consistent hashing: adding a node moves only its share of keys).
front=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx"
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $work/nginx;
    proxy_temp_path $work/nginx;
    upstream moodledger {
        hash \$http_x_api_key consistent;
        server 127.0.0.1:${port[a]};
        server 127.0.0.1:${port[b]};
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$front;
        location / {
            proxy_pass http://moodledger;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            add_header X-Upstream \$upstream_addr always;
        }
    }
}
CONF
nginx -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log"
pids+=("$(cat "$work/nginx/nginx.pid")")
url="http://127.0.0.1:$front"

# Add each user through the node its key routes to: add on a node, ask through nginx; a 401 means the key routes to
# the other node, so the account is erased there and added again (a new key).
declare -A home key token
for i in $(seq 1 "$users"); do
    user="user$i"
    for attempt in $(seq 1 12); do
        node=$([ $((attempt % 2)) -eq 1 ] && echo a || echo b)
        k=$("$bin" serve user add "$user" --data "$work/$node" | tail -n 1)
        t=$("$bin" serve token --user "$user" --data "$work/$node" --ttl 1h)
        sleep 0.3  # a running node sees new accounts within 200 ms
        status=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $k" -H "Authorization: Bearer $t" "$url/api/v1/mood")
        if [ "$status" = 200 ]; then home[$user]=$node; key[$user]=$k; token[$user]=$t; break; fi
        "$bin" serve user erase "$user" --data "$work/$node" --yes > /dev/null
    done
    [ -n "${home[$user]:-}" ] || { echo "scale-out: could not place $user" >&2; exit 1; }
    echo "$user → node ${home[$user]} (port ${port[${home[$user]}]})"
done

# Load through nginx: one wrk per user for a second, each writing durably.
body='{"valence":0.4,"labels":["calm"]}'
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA
for user in "${!home[@]}"; do
    wrk -t1 -c4 -d1s -s "$work/post.lua" -H "X-API-Key: ${key[$user]}" -H "Authorization: Bearer ${token[$user]}" \
        "$url/api/v1/mood" | awk -v u="$user" '/Requests\/sec/ {print u ": " $2 " durable POST/s through nginx"}'
done

# Every user is served by exactly one node: its ledger exists there and only there, and nginx names that node.
for user in "${!home[@]}"; do
    on=""
    for node in a b; do [ -d "$work/$node/users/$user" ] && on="$on$node"; done
    upstream=$(curl -s -D - -o /dev/null -H "X-API-Key: ${key[$user]}" -H "Authorization: Bearer ${token[$user]}" \
        "$url/api/v1/mood" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-upstream" {print $2}')
    [ "$on" = "${home[$user]}" ] && [ "$upstream" = "127.0.0.1:${port[${home[$user]}]}" ] \
        || { echo "scale-out: $user is on '$on', nginx sent it to $upstream" >&2; exit 1; }
done
echo "every one of $users users is served by exactly one node"
