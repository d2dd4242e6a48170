import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE } from './sources';
import { APP_DIR, ENTRYPOINT, ENV, ociLabels, PORTS, RUN_AS } from './spec';

// The Dockerfile is the build for Docker users; buildah builds from image/spec.ts. Both must make the same image.
const dockerfile = readFileSync(join(__dirname, '..', 'Dockerfile'), 'utf8');
const lines = dockerfile.split('\n').filter((l) => !l.startsWith('#'));
const stages = dockerfile.split(/^FROM /m).slice(1);
const runtime = stages[stages.length - 1];
const instruction = (name: string): string[] =>
  [...runtime.matchAll(new RegExp(`^${name} (.+)$`, 'gm'))].map((m) => m[1]);

const major = NODE.version.split('.')[0];

describe('Dockerfile', () => {
  it("assembles the root filesystem with image/rootfs.ts in a Debian build stage of the image's Node", () => {
    // Its npm ci builds re2 for the ABI of the Node the image runs.
    expect(stages[0]).toMatch(new RegExp(`^node:${major}-bookworm(@\\S+)? AS build\n`));
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

describe('the release workflow', () => {
  it('tests on the Node the image runs', () => {
    const workflow = readFileSync(join(__dirname, '..', '.github', 'workflows', 'release.yml'), 'utf8');
    expect([...workflow.matchAll(/node-version: (\S+)/g)].map((m) => m[1])).toEqual([major]);
  });
});
