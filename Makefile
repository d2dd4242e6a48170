# The image is named in one place; `make image IMAGE=...` and `make bundle IMAGE=...` override it for one build
# (config/default/kustomization.yaml names the same default; a test checks they agree).
IMAGE ?= ghcr.io/modrule/modrule:0.1.0
# auto: Docker (the Dockerfile) where a Docker engine answers, else buildah; or force one: BUILDER=buildah.
BUILDER ?= auto
# With buildah, also write the image as an OCI archive (e.g. OCI_ARCHIVE=modrule.tar) to load or push elsewhere.
OCI_ARCHIVE ?=

.PHONY: build test lint bench bundle image e2e clean

build:
	npm run build

test:
	npm test

lint:
	npm run lint

bench:
	npm run bench

e2e:
	npm run e2e

clean:
	rm -rf dist coverage

# bundle.yaml is generated from config/: never edit it by hand. bundle/build.ts assembles exactly what
# `kubectl kustomize config/default` does, sets the operator image to $(IMAGE) (refusing an invalid reference) and
# refuses a bundle whose ports cannot work (metrics port = webhook port); a failed build leaves bundle.yaml as it was.
# It also writes config/monitoring/prometheus_rule.yaml from config/monitoring/alerts.yaml, and the chart's copies
# of bundle.yaml and config/ in charts/modrule/files (bundle/chart-files.ts).
bundle:
	npm run build --silent
	node dist/bundle/build.js config/default --image '$(IMAGE)' --output bundle.yaml
	node dist/bundle/monitoring.js config/monitoring
	node dist/bundle/chart-files.js .

# Same layout either way: the Dockerfile's build stage and buildah both run image/rootfs.ts (docs/install.md).
image:
	npm run build --silent
	node dist/image/main.js build --image '$(IMAGE)' --builder $(BUILDER) $(if $(OCI_ARCHIVE),--oci-archive '$(OCI_ARCHIVE)')
