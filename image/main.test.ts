import { main } from './main';

describe('node dist/image/main.js', () => {
  let stderr: string[];
  let spy: jest.SpyInstance;
  beforeEach(() => {
    stderr = [];
    spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
  });
  afterEach(() => spy.mockRestore());

  it('refuses an invalid image reference before building anything', () => {
    expect(main(['build', '--image', 'ghcr.io/Modrule/modrule:1', '--builder', 'buildah'])).toBe(1);
    expect(stderr.join('')).toBe(
      'image: "ghcr.io/Modrule/modrule:1" is not a valid image reference: the repository "Modrule/modrule" must be lower case\n',
    );
  });

  it('refuses an untagged image and an unknown architecture', () => {
    expect(main(['build', '--image', 'ghcr.io/modrule/modrule'])).toBe(1);
    expect(stderr.join('')).toMatch(/name a tag or a digest/);
    expect(main(['build', '--image', 'ghcr.io/modrule/modrule:1', '--arch', 's390x'])).toBe(1);
    expect(stderr.join('')).toMatch(/unknown architecture "s390x": the image is built for amd64 or arm64/);
  });

  it('prints the usage for a missing command or option', () => {
    expect(main([])).toBe(2);
    expect(main(['build'])).toBe(2);
    expect(main(['build', '--image', 'a/b:1', '--builder', 'podman'])).toBe(2);
    expect(stderr.join('')).toMatch(/build needs --image REF[\s\S]*usage:/);
    expect(stderr.join('')).toMatch(/--builder must be auto, buildah or docker, not "podman"/);
  });
});
