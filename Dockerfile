# syntax=docker/dockerfile:1
# Build: `make image` (docker build -t $(IMAGE) .). Runs `modrule <command>`; the bundle passes `operator`.

# --- build: compile TypeScript and the re2 native addon (needs python3, make, g++: all in this image).
FROM node:20-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# re2's build leaves ~100 MB of objects and vendored sources next to the one addon it loads: keep only the addon.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && find node_modules/re2/build -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} + \
 && find node_modules/re2/build/Release -mindepth 1 ! -name re2.node -exec rm -rf {} + \
 && rm -rf node_modules/re2/vendor

# --- runtime: same Debian release as the build stage, so the compiled re2 addon loads as is.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# Numeric, so Kubernetes can verify runAsNonRoot; matches runAsUser in config/manager/deployment.yaml.
USER 65532:65532
EXPOSE 9443 8081
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
