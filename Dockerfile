# syntax=docker/dockerfile:1
# Mirador API. Build: docker build -t mirador .
# Run with the embedded store: docker run -p 8080:8080 -v mirador-data:/data mirador   (the named volume keeps it)
# With DATABASE_URL the image keeps nothing and needs no volume (docker-compose.yml).

# Dependencies exactly as package-lock.json pins them, production only (Bun comes from the runtime
# image), installed by the npm of a Node LTS. TypeScript and Bun's type packages are optional peers
# of elysia that the project also has as devDependencies: npm marks them devOptional and keeps them
# with --omit=dev (dropping them with --omit=optional would drop KurrentDB's native bridge too), so
# they are removed by name; test/container/dockerfile.test.ts checks that nothing else of the dev tree is left.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/typescript node_modules/@types/bun node_modules/bun-types

FROM oven/bun:1.4-debian AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps --chown=bun:bun /app/node_modules ./node_modules
COPY --chown=bun:bun package.json tsconfig.json bunfig.toml ./
COPY --chown=bun:bun src ./src
COPY --chown=bun:bun projections ./projections
# No VOLUME: it would give every container an anonymous volume, PostgreSQL-backed replicas included.
RUN mkdir -p /data && chown bun:bun /data
USER bun
EXPOSE 8080
# /readyz needs no key: 200 while the store and the rate limiter answer and the read models are caught up.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD bun -e "const r = await fetch('http://127.0.0.1:' + (process.env.PORT ?? 8080) + '/readyz'); process.exit(r.status === 200 ? 0 : 1)"
STOPSIGNAL SIGTERM
CMD ["bun", "src/main.ts"]
