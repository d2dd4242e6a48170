import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type https from 'node:https';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { ClusterAccess, setHeader } from './access';
import { messageOf } from '../util/errors';

/** Where Kubernetes mounts a pod's service-account token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** client-go and client-node re-read the projected token once a minute; the kubelet rotates it well before expiry. */
export const TOKEN_REFRESH_MS = 60_000;

/** Options of InClusterAccess; the defaults are what a pod has. */
export interface InClusterOptions {
  /** The service-account folder holding `token` and `ca.crt` (a temp dir in tests). */
  dir?: string;
  /** Token and CA are read again when older than this. */
  refreshMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

type Env = Record<string, string | undefined>;

/**
 * The API server URL from KUBERNETES_SERVICE_HOST/PORT, as client-node's loadFromCluster builds it: plain HTTP on
 * ports 80, 8080 and 8001, HTTPS otherwise; IPv6 addresses in brackets.
 */
export function inClusterServer(env: Env): string {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error('in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set');
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  return `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
}

function readToken(file: string, text: string): string {
  // client-go trims the token (client-node does not): a trailing newline would make the header invalid.
  const token = text.trim();
  if (!token) throw new Error(`in-cluster: the service-account token ${file} is empty`);
  return token;
}

// The first read: a missing file is a clear error at startup.
function readAtStart(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`in-cluster: cannot read the service-account ${what} ${file}: ${messageOf(err)}`);
  }
}

/**
 * The pod's service account: bearer token and cluster CA read from the service-account folder, re-read once they are
 * older than refreshMs (projected tokens rotate; the kube-root-ca.crt CA can change). The first read happens in the
 * constructor, so a missing or empty file is a clear error at startup; a failed re-read keeps the last good values.
 */
export class InClusterAccess implements ClusterAccess {
  private readonly tokenFile: string;
  private readonly caFile: string;
  private readonly refreshMs: number;
  private readonly now: () => number;
  private token: string;
  private ca: string;
  private readAt: number;
  private reading: Promise<void> | null = null;

  constructor(
    readonly server: string,
    options: InClusterOptions = {},
  ) {
    const dir = options.dir ?? SERVICE_ACCOUNT_DIR;
    this.tokenFile = join(dir, 'token');
    this.caFile = join(dir, 'ca.crt');
    this.refreshMs = options.refreshMs ?? TOKEN_REFRESH_MS;
    this.now = options.now ?? Date.now;
    this.token = readToken(this.tokenFile, readAtStart(this.tokenFile, 'token'));
    this.ca = readAtStart(this.caFile, 'CA');
    this.readAt = this.now();
  }

  /** The pod's access: server from KUBERNETES_SERVICE_HOST/PORT, credentials from options.dir. */
  static fromEnv(env: Env = process.env, options: InClusterOptions = {}): InClusterAccess {
    return new InClusterAccess(inClusterServer(env), options);
  }

  async apply(opts: https.RequestOptions): Promise<void> {
    if (this.now() - this.readAt >= this.refreshMs) {
      this.reading ??= this.reread().finally(() => (this.reading = null));
      await this.reading;
    }
    setHeader(opts, 'Authorization', `Bearer ${this.token}`);
    opts.ca = this.ca;
  }

  private async reread(): Promise<void> {
    try {
      const [token, ca] = await Promise.all([
        readFile(this.tokenFile, 'utf8'),
        readFile(this.caFile, 'utf8'),
      ]);
      this.token = readToken(this.tokenFile, token);
      this.ca = ca;
    } catch {
      // Mid-rotation or gone: the last token stays valid until it expires; try again next period.
    }
    this.readAt = this.now();
  }
}
