# The image is named in one place; `make image IMAGE=...` overrides it.
IMAGE ?= ghcr.io/modrule/modrule:0.1.0

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

# bundle.yaml is generated from config/: never edit it by hand. config/build.ts assembles exactly
# what `kubectl kustomize config/default` does for our kustomization (tests check both agree).
bundle:
	npm run bundle

image:
	docker build -t $(IMAGE) .
