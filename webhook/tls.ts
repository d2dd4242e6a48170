import { FSWatcher, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import { Logger } from '../util/logger';
import { messageOf } from '../util/errors';

/** A serving certificate and its key, PEM encoded. */
export interface TlsMaterial {
  cert: string;
  key: string;
}

/** Where the server gets its certificate: current() now, subscribe() for rotations. */
export interface TlsSource {
  current(): TlsMaterial;
  subscribe(listener: (material: TlsMaterial) => void): () => void;
  close(): void;
}

/** The only TLS versions we accept: the API server speaks 1.2 and 1.3. */
export const TLS_MIN_VERSION = 'TLSv1.2';

/** Throws when the PEMs are unusable (bad PEM, key not matching the certificate). */
export function checkTlsMaterial(material: TlsMaterial): void {
  createSecureContext({ cert: material.cert, key: material.key, minVersion: TLS_MIN_VERSION });
}

class Listeners {
  private readonly set = new Set<(m: TlsMaterial) => void>();
  add(l: (m: TlsMaterial) => void): () => void {
    this.set.add(l);
    return () => this.set.delete(l);
  }
  emit(m: TlsMaterial): void {
    for (const l of [...this.set]) l(m);
  }
  clear(): void {
    this.set.clear();
  }
}

/** In-memory PEMs (the operator's self-managed certificates, `serve --local`); set() swaps them. */
export class MemoryTlsSource implements TlsSource {
  private material: TlsMaterial;
  private readonly listeners = new Listeners();

  constructor(material: TlsMaterial) {
    checkTlsMaterial(material);
    this.material = material;
  }

  current(): TlsMaterial {
    return this.material;
  }

  /** Replaces the certificate; throws (and keeps the old one) when the new pair is unusable. */
  set(material: TlsMaterial): void {
    checkTlsMaterial(material);
    this.material = material;
    this.listeners.emit(material);
  }

  subscribe(listener: (m: TlsMaterial) => void): () => void {
    return this.listeners.add(listener);
  }

  close(): void {
    this.listeners.clear();
  }
}

export interface FileTlsOptions {
  certFile: string;
  keyFile: string;
  /** How often to compare the files' mtimes as a fallback to directory watching; default 5000 ms. */
  pollMs?: number;
  logger: Logger;
}

/**
 * Certificate and key from files, reloaded when they change. Kubernetes updates a mounted Secret by
 * swapping a `..data` symlink, which only a directory watch sees; the mtime poll covers missed events.
 */
export class FileTlsSource implements TlsSource {
  private material: TlsMaterial;
  private readonly listeners = new Listeners();
  private readonly watchers: FSWatcher[] = [];
  private readonly timer: NodeJS.Timeout;
  private fingerprint = '';
  private debounce: NodeJS.Timeout | null = null;
  private reloading: Promise<void> | null = null;
  private closed = false;

  private constructor(
    private readonly options: FileTlsOptions,
    material: TlsMaterial,
    fingerprint: string,
  ) {
    this.material = material;
    this.fingerprint = fingerprint;
    for (const dir of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
      try {
        const w = watch(dir, () => this.schedule());
        w.on('error', (err) =>
          options.logger.warn('certificate directory watch failed', { dir, error: err.message }),
        );
        this.watchers.push(w);
      } catch (err) {
        options.logger.warn('cannot watch certificate directory; polling only', {
          dir,
          error: messageOf(err),
        });
      }
    }
    this.timer = setInterval(() => this.schedule(0), options.pollMs ?? 5000);
    this.timer.unref();
  }

  /** Reads the files once (throws when unreadable or invalid) and starts watching them. */
  static async open(options: FileTlsOptions): Promise<FileTlsSource> {
    const material = await readMaterial(options);
    checkTlsMaterial(material);
    return new FileTlsSource(options, material, await fingerprintOf(options));
  }

  current(): TlsMaterial {
    return this.material;
  }

  subscribe(listener: (m: TlsMaterial) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Re-reads the files now; resolves once done (used by tests and on watch events). */
  async reload(): Promise<void> {
    if (this.reloading) return this.reloading;
    this.reloading = this.doReload().finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
    for (const w of this.watchers) w.close();
    this.listeners.clear();
  }

  private schedule(delayMs = 100): void {
    if (this.closed) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.reload();
    }, delayMs);
    this.debounce.unref();
  }

  private async doReload(): Promise<void> {
    let fingerprint: string;
    try {
      fingerprint = await fingerprintOf(this.options);
    } catch (err) {
      this.options.logger.warn('cannot stat certificate files; keeping the current certificate', {
        error: messageOf(err),
      });
      return;
    }
    if (fingerprint === this.fingerprint || this.closed) return;
    let material: TlsMaterial;
    try {
      material = await readMaterial(this.options);
      checkTlsMaterial(material);
    } catch (err) {
      // Often a half-written rotation (new cert, old key): the next event or poll retries.
      this.options.logger.warn('new certificate files are not usable yet; keeping the current certificate', {
        error: messageOf(err),
      });
      return;
    }
    this.fingerprint = fingerprint;
    if (material.cert === this.material.cert && material.key === this.material.key) return;
    this.material = material;
    this.options.logger.info('serving certificate reloaded', { certFile: this.options.certFile });
    this.listeners.emit(material);
  }
}

async function readMaterial(options: FileTlsOptions): Promise<TlsMaterial> {
  const [cert, key] = await Promise.all([
    readFile(options.certFile, 'utf8'),
    readFile(options.keyFile, 'utf8'),
  ]);
  return { cert, key };
}

async function fingerprintOf(options: FileTlsOptions): Promise<string> {
  const [c, k] = await Promise.all([stat(options.certFile), stat(options.keyFile)]);
  return [c.ino, c.size, c.mtimeMs, k.ino, k.size, k.mtimeMs].join(':');
}
