# syntax=docker/dockerfile:1
# Build: `make image` (docker build -t $(IMAGE) .). Runs `modrule <command>`; the bundle passes `operator`.

# --- build: compile TypeScript and the re2 native addon (needs python3, make, g++: all in this image).
FROM node:20-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

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
