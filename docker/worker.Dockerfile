# switchboard-worker: the daemon that connects a local inference server to a Switchboard gateway.
#   docker build -f docker/worker.Dockerfile -t switchboard-worker .
#   docker run --network host -e WORKER_SECRET=... -e PROXY_URL=https://gateway.example.com \
#     -e BACKEND_URL=http://127.0.0.1:8000 --stop-timeout 40 switchboard-worker
# Configuration is by environment (see docs/worker.md); the secret never goes into the image.

FROM node:20-bookworm-slim AS build
WORKDIR /app
# npm ci installs every dependency, better-sqlite3 included: it compiles when no prebuilt binary
# can be downloaded, as in docker/Dockerfile.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
# SIGTERM: stop taking work, finish in-flight requests within DRAIN_TIMEOUT_SECS (30 s), exit 0.
# Give `docker stop` more than that (--stop-timeout / stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/worker/main.js"]
