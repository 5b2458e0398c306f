# syntax=docker/dockerfile:1
# Mirador API. Build: docker build -t mirador .   Run: docker run -p 8080:8080 -v mirador-data:/data mirador

# Dependencies exactly as package-lock.json pins them, production only (Bun comes from the runtime image).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

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
RUN mkdir -p /data && chown bun:bun /data
USER bun
VOLUME ["/data"]
EXPOSE 8080
# /health needs a key, so the probe checks that the API answers with its JSON envelope (401 without a key).
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD bun -e "const r = await fetch('http://127.0.0.1:' + (process.env.PORT ?? 8080) + '/api/v1/health'); const b = await r.json(); process.exit(r.status === 401 && b.error === 'auth_required' ? 0 : 1)"
STOPSIGNAL SIGTERM
CMD ["bun", "src/main.ts"]
