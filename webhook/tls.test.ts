import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, rename, rm, symlink, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../util/logger';
import { generateCertificates } from './certs';
import { FileTlsSource, MemoryTlsSource, TlsMaterial } from './tls';

describe('generateCertificates', () => {
  const g = generateCertificates({ hosts: ['localhost', '127.0.0.1', '::1'] });

  it('issues a serving certificate for every host, signed by the CA', () => {
    const ca = new X509Certificate(g.caCert);
    const cert = new X509Certificate(g.cert);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBeDefined();
    expect(cert.checkHost('example.com')).toBeUndefined();
    expect(cert.checkPrivateKey(createPrivateKey(g.key))).toBe(true);
  });

  it('refuses an empty host list', () => {
    expect(() => generateCertificates({ hosts: [] })).toThrow(/at least one host/);
  });
});

describe('MemoryTlsSource', () => {
  it('swaps certificates and keeps the old one when the new pair does not match', () => {
    const a = generateCertificates({ hosts: ['localhost'] });
    const b = generateCertificates({ hosts: ['localhost'] });
    const source = new MemoryTlsSource({ cert: a.cert, key: a.key });
    const seen: TlsMaterial[] = [];
    source.subscribe((m) => seen.push(m));
    expect(() => source.set({ cert: b.cert, key: a.key })).toThrow();
    expect(source.current().cert).toBe(a.cert);
    source.set({ cert: b.cert, key: b.key });
    expect(source.current().cert).toBe(b.cert);
    expect(seen).toHaveLength(1);
    source.close();
  });
});

describe('FileTlsSource', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'modrule-tls-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // Kubernetes mounts a Secret as tls.crt -> ..data/tls.crt, ..data -> ..<timestamp>/, and rotates by swapping ..data.
  async function writeSecretVersion(version: string, pem: { cert: string; key: string }): Promise<void> {
    const versionDir = join(dir, `..${version}`);
    await mkdir(versionDir);
    await writeFile(join(versionDir, 'tls.crt'), pem.cert);
    await writeFile(join(versionDir, 'tls.key'), pem.key);
    await symlink(`..${version}`, join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  }

  it('reloads when a mounted Secret rotates (symlink swap), via the directory watch or the poll', async () => {
    const a = generateCertificates({ hosts: ['localhost'] });
    const b = generateCertificates({ hosts: ['localhost'] });
    await writeSecretVersion('v1', a);
    await symlink('..data/tls.crt', join(dir, 'tls.crt'));
    await symlink('..data/tls.key', join(dir, 'tls.key'));
    const source = await FileTlsSource.open({
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      pollMs: 200,
      logger: silentLogger(),
    });
    try {
      expect(source.current().cert).toBe(a.cert);
      const changed = new Promise<TlsMaterial>((resolve) => source.subscribe(resolve));
      await writeSecretVersion('v2', b);
      expect((await changed).cert).toBe(b.cert);
      expect(source.current().key).toBe(b.key);
    } finally {
      source.close();
    }
  });

  it('keeps the current certificate while the files hold a mismatched pair, then picks up the fixed pair', async () => {
    const a = generateCertificates({ hosts: ['localhost'] });
    const b = generateCertificates({ hosts: ['localhost'] });
    const certFile = join(dir, 'tls.crt');
    const keyFile = join(dir, 'tls.key');
    await writeFile(certFile, a.cert);
    await writeFile(keyFile, a.key);
    const source = await FileTlsSource.open({ certFile, keyFile, pollMs: 60_000, logger: silentLogger() });
    try {
      await writeFile(certFile, b.cert); // half-done rotation: new cert, old key
      await source.reload();
      expect(source.current().cert).toBe(a.cert);
      await writeFile(keyFile, b.key);
      await source.reload();
      expect(source.current()).toEqual({ cert: b.cert, key: b.key });
    } finally {
      source.close();
    }
  });

  it('fails to open on missing or invalid files', async () => {
    await expect(
      FileTlsSource.open({
        certFile: join(dir, 'nope.crt'),
        keyFile: join(dir, 'nope.key'),
        logger: silentLogger(),
      }),
    ).rejects.toThrow(/ENOENT/);
    await writeFile(join(dir, 'bad.crt'), 'not a certificate');
    await writeFile(join(dir, 'bad.key'), 'not a key');
    await expect(
      FileTlsSource.open({
        certFile: join(dir, 'bad.crt'),
        keyFile: join(dir, 'bad.key'),
        logger: silentLogger(),
      }),
    ).rejects.toThrow();
  });
});
