#!/bin/sh
# Makes the tokens of the compose cluster (compose.yaml) in docker/secrets/, once: an existing
# token is kept, so the services and the CLI keep agreeing across `docker compose up`s.
#   auth.token     the job APIs' bearer token: gradsync ... --token-file docker/secrets/auth.token
#   cluster.token  the workers' token, to the coordinator and the metrics service
#   metrics.token  the token Prometheus presents to every /metrics, and readers to the JSON API
# The directory is yours alone (0700). The files are readable by all (0644) because compose mounts
# them as they are, and the containers read them as other users (gradsync's 10001, Prometheus's
# nobody); the directory keeps the machine's other users out.
set -eu
dir="$(cd "$(dirname "$0")" && pwd)/secrets"
mkdir -p "$dir"
chmod 700 "$dir"
for name in auth cluster metrics; do
  file="$dir/$name.token"
  if [ ! -s "$file" ]; then
    od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$file.tmp"
    echo >> "$file.tmp"
    chmod 644 "$file.tmp"
    mv "$file.tmp" "$file"
  fi
done
echo "tokens in $dir"
