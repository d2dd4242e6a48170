import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { APP_DIR, ENTRYPOINT, ENV, ociLabels, PORTS, RUN_AS } from './spec';

// The Dockerfile is the build for Docker users; buildah builds from image/spec.ts. Both must make the same image.
const dockerfile = readFileSync(join(__dirname, '..', 'Dockerfile'), 'utf8');
const lines = dockerfile.split('\n').filter((l) => !l.startsWith('#'));
const stages = dockerfile.split(/^FROM /m).slice(1);
const runtime = stages[stages.length - 1];
const instruction = (name: string): string[] =>
  [...runtime.matchAll(new RegExp(`^${name} (.+)$`, 'gm'))].map((m) => m[1]);

describe('Dockerfile', () => {
  it('assembles the root filesystem with image/rootfs.ts in a Node 20 Debian build stage', () => {
    expect(stages[0]).toMatch(/^node:20-bookworm(@\S+)? AS build\n/);
    expect(lines).toContain('RUN npm ci --no-audit --no-fund');
    expect(lines).toContain('RUN npm run build && node dist/image/main.js rootfs --out /rootfs');
  });

  it('ships nothing but that root filesystem', () => {
    expect(runtime.split('\n')[0]).toBe('scratch');
    expect(instruction('COPY')).toEqual(['--from=build /rootfs /']);
    expect(instruction('RUN')).toEqual([]);
  });

  it('configures the image as buildah does (image/spec.ts)', () => {
    expect(instruction('USER')).toEqual([RUN_AS]);
    expect(instruction('WORKDIR')).toEqual([APP_DIR]);
    expect(instruction('ENTRYPOINT')).toEqual([JSON.stringify(ENTRYPOINT).replace(/","/g, '", "')]);
    expect(instruction('ENV')).toEqual(Object.entries(ENV).map(([k, v]) => `${k}=${v}`));
    expect(instruction('EXPOSE')).toEqual([PORTS.join(' ')]);
    const labels = [...runtime.matchAll(/(org\.opencontainers\.image\.[a-z]+)="([^"]*)"/g)].map((m) => [
      m[1],
      m[2],
    ]);
    const expected = ociLabels({ version: '${VERSION}', revision: '${REVISION}', source: '${SOURCE}' });
    expect(Object.fromEntries(labels)).toEqual(expected);
  });
});
