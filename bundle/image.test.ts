import { ImageReferenceError, imageOverride, parseImageReference, parsePinnedImage } from './image';

const SHA = `sha256:${'0123456789abcdef'.repeat(4)}`;

describe('parseImageReference', () => {
  it.each([
    ['ghcr.io/modrule/modrule:0.1.0', { domain: 'ghcr.io', path: 'modrule/modrule', tag: '0.1.0' }],
    ['modrule', { path: 'modrule' }],
    ['library/busybox:1.36', { path: 'library/busybox', tag: '1.36' }],
    ['localhost/modrule:dev', { domain: 'localhost', path: 'modrule', tag: 'dev' }],
    ['registry.local:5000/team/app', { domain: 'registry.local:5000', path: 'team/app' }],
    ['127.0.0.1:5000/app:v1_2-rc.3', { domain: '127.0.0.1:5000', path: 'app', tag: 'v1_2-rc.3' }],
    ['[::1]:5000/app:1', { domain: '[::1]:5000', path: 'app', tag: '1' }],
    ['Registry.Example.com/a__b/c-d.e:1', { domain: 'Registry.Example.com', path: 'a__b/c-d.e', tag: '1' }],
    [
      `ghcr.io/modrule/modrule:0.1.0@${SHA}`,
      { domain: 'ghcr.io', path: 'modrule/modrule', tag: '0.1.0', digest: SHA },
    ],
    [`ghcr.io/modrule/modrule@${SHA}`, { domain: 'ghcr.io', path: 'modrule/modrule', digest: SHA }],
  ])('%s', (ref, expected) => {
    expect(parseImageReference(ref)).toEqual({
      domain: undefined,
      tag: undefined,
      digest: undefined,
      ...expected,
    });
  });

  it.each([
    ['', /is empty/],
    ['ghcr.io/modrule/modrule:0.1.0 ', /white space/],
    ['ghcr.io/Modrule/modrule:1', /repository "Modrule\/modrule" must be lower case/],
    ['ghcr.io/modrule//modrule:1', /empty path component/],
    ['ghcr.io/mod rule:1', /white space/],
    ['ghcr.io/modrule/-x:1', /lower-case letters and digits/],
    ['ghcr.io/modrule/modrule:', /the tag ""/],
    ['ghcr.io/modrule/modrule:.hidden', /the tag ".hidden"/],
    [`ghcr.io/modrule/modrule:${'x'.repeat(129)}`, /the tag/],
    [`ghcr.io/modrule/modrule@sha256:${'a'.repeat(40)}`, /64 lower-case hex digits/],
    ['ghcr.io/modrule/modrule@sha256:abc', /ALGORITHM:HEX/],
    ['ghcr.io/modrule/modrule@latest', /ALGORITHM:HEX/],
    ['reg_istry.io:5000/app:1', /the registry "reg_istry.io:5000"/],
    ['registry.io:99999/app:1', /the registry/],
    [':1', /names no repository/],
    [`${'a'.repeat(256)}:1`, /longer than 255/],
  ])('refuses %j: %s', (ref, reason) => {
    expect(() => parseImageReference(ref)).toThrow(ImageReferenceError);
    expect(() => parseImageReference(ref)).toThrow(reason);
  });

  it('names the reference in the message', () => {
    expect(() => parseImageReference('ghcr.io/Me/x:1')).toThrow(
      '"ghcr.io/Me/x:1" is not a valid image reference: the repository "Me/x" must be lower case',
    );
  });
});

describe('parsePinnedImage and imageOverride', () => {
  it('refuses an image with neither tag nor digest, saying why', () => {
    expect(() => parsePinnedImage('registry.local:5000/modrule')).toThrow(/name a tag or a digest/);
  });

  it('turns a reference into the kustomize images: entry for the placeholder', () => {
    expect(imageOverride('modrule', 'registry.local:5000/team/modrule:1.2.3')).toEqual({
      name: 'modrule',
      newName: 'registry.local:5000/team/modrule',
      newTag: '1.2.3',
    });
    expect(imageOverride('modrule', `ghcr.io/a/b:1@${SHA}`)).toEqual({
      name: 'modrule',
      newName: 'ghcr.io/a/b',
      newTag: '1',
      digest: SHA,
    });
  });
});
