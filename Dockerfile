# syntax=docker/dockerfile:1
# The Docker way to build the image (`make image` picks it where a Docker engine answers; without one it builds the
# same image with buildah: docs/install.md#building-the-image). Both assemble the root filesystem with
# image/rootfs.ts, so the layout is the same; image/dockerfile.test.ts holds the settings below to image/spec.ts.
#   docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) -t IMAGE .
# Multi-arch: docker buildx build --platform linux/amd64,linux/arm64 ... (the build stage runs on each platform, so
# the re2 addon is compiled for it).

# --- build: compile TypeScript and the re2 addon, then assemble the root filesystem in /rootfs: Node's official
# binary (npm package node-linux-<arch>, pinned by integrity), only the shared libraries it and re2 load (Debian
# packages), dist/ as far as `modrule` reaches, production node_modules with only re2's addon kept. The stage's Node
# has the image's major version (image/sources.ts NODE), so npm ci builds re2 for the image's ABI.
FROM node:24-bookworm AS build
WORKDIR /src
RUN apt-get update
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && node dist/image/main.js rootfs --out /rootfs

# --- runtime: nothing but that root filesystem.
FROM scratch
COPY --from=build /rootfs /
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=https://github.com/modrule/modrule
LABEL org.opencontainers.image.title="modrule" \
      org.opencontainers.image.description="A drop-in, faster and safer successor to KubeMod" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
ENV NODE_ENV=production
WORKDIR /app
# Numeric, so Kubernetes can verify runAsNonRoot; matches runAsUser in config/manager/deployment.yaml.
USER 65532:65532
EXPOSE 9443 8081
ENTRYPOINT ["/usr/local/bin/node", "/app/dist/cli/main.js"]
