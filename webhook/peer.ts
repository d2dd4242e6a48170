import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonObject, JsonObject } from '../util/json';
import { messageOf } from '../util/errors';
import { readBody, sendText } from './http';

/*
 * Replicas tell each other of the ModRules they admit, before they answer: the API server stores the rule after the
 * answer, and each replica's store learns of it from its own watch a moment later, so an object written right after
 * the rule may reach a replica that has not seen it yet. A replica told of a rule holds the dragnet requests it could
 * reach until its store has it (operator/rules/admitted.ts). A notice is signed with a key every replica has (derived
 * from a secret they share, PeerKeys), so nobody else can make a replica wait; it carries nothing secret.
 */

/** Where a replica takes notices from its peers (on the webhook port). */
export const PEER_PATH = '/peer/admitted';
/** The header carrying the notice's signatures: one per key the sender holds, comma-separated (PeerKeys). */
export const SIGNATURE_HEADER = 'x-modrule-signature';
/** At most this many signatures are checked (a sender holds two keys). */
const MAX_SIGNATURES = 4;
/** A notice older than this is refused (a replay makes a replica wait for nothing). */
// Replays are harmless (a notice of a version the store has, or never gets, is dropped by AdmittedRules): the age
// only turns away notices from another era, and replicas' clocks may be off by tens of seconds.
const MAX_AGE_MS = 10 * 60_000;

/** A ModRule version a peer admitted. */
export interface PeerNotice {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
  /** When it was sent (ms since the epoch, the sender's clock). */
  sent: number;
  /** How long the sender's admission may still run: the rule's write lands after that, or never. */
  answerWithinMs?: number;
  /** A second notice, once the sender answered: 'allowed' (the write lands now, or never) or 'refused'. */
  answered?: 'allowed' | 'refused';
  /** The ModRule as admitted: the peer counts it in its own computations of the registration too. */
  rule?: JsonObject;
}

/** What the webhook server does with a notice. */
export interface PeerReceiver {
  /** The keys a notice may be signed with: the current one first, then the one before it (PeerKeys.keys). */
  keys(): readonly string[];
  /** A notice none of the keys verify: the shared secret may have changed (re-read it, rate-limited). */
  refresh?(): void;
  receive(notice: PeerNotice): void;
}

/** The signature of a notice's body with one key. */
export function signNotice(body: string, key: string): string {
  return createHmac('sha256', key).update(body).digest('hex');
}

/** The signature header's value: the body signed with each key. */
export function signatures(body: string, keys: readonly string[]): string {
  return keys.map((k) => signNotice(body, k)).join(',');
}

/** Whether one of the header's signatures is the body's with one of the keys (constant time per comparison). */
export function verifyNotice(body: string, header: string, keys: readonly string[]): boolean {
  const given = header
    .split(',', MAX_SIGNATURES)
    .map((s) => Buffer.from(s.trim(), 'utf8'))
    .filter((b) => b.length > 0);
  let ok = false;
  for (const key of keys) {
    const want = Buffer.from(signNotice(body, key), 'utf8');
    for (const g of given) if (g.length === want.length && timingSafeEqual(g, want)) ok = true;
  }
  return ok;
}

/**
 * The keys notices are signed with, derived from a secret every replica holds (the certificate Secret's CA key, or
 * the serving key: operator/start.ts). The secret changes (a CA rollover, a renewed serving key) and the replicas see
 * the change at different moments (each re-reads it on its own clock), so each keeps the key it had before the last
 * change too: a notice carries a signature per key and is taken when any of them verifies with any of the receiver's
 * keys. A replica that never held the old key (started after the change) and a peer that has not seen the new one
 * yet still disagree: refresh() re-reads the secret (at most every `minRefreshMs`), which the sender does on a 401
 * and the receiver on a notice it cannot verify, before the sender's next try.
 */
export class PeerKeys {
  private current = '';
  private previous = '';
  private lastRefresh = -Infinity;
  private refreshing: Promise<void> | null = null;

  constructor(
    private readonly secret: () => string,
    private readonly reload?: () => Promise<void>,
    private readonly minRefreshMs = 2000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The current key, then the one before it (when the secret changed since this replica started). */
  keys(): string[] {
    const key = createHash('sha256').update('modrule peer notice\n').update(this.secret()).digest('hex');
    if (key !== this.current) {
      if (this.current) this.previous = this.current;
      this.current = key;
    }
    return this.previous ? [this.current, this.previous] : [this.current];
  }

  /** Re-reads the secret (coalesced, at most every minRefreshMs); resolves when done. */
  refresh(): Promise<void> {
    if (!this.reload) return Promise.resolve();
    if (this.refreshing) return this.refreshing;
    if (this.now() - this.lastRefresh < this.minRefreshMs) return Promise.resolve();
    this.lastRefresh = this.now();
    this.refreshing = this.reload()
      .catch(() => undefined)
      .then(() => {
        this.refreshing = null;
        this.keys();
      });
    return this.refreshing;
  }
}

function parseNotice(text: string): PeerNotice | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isJsonObject(v)) return null;
  const { namespace, name, uid, generation, sent, answerWithinMs, answered, rule } = v;
  if (typeof namespace !== 'string' || typeof name !== 'string' || typeof uid !== 'string') return null;
  if (typeof generation !== 'number' || typeof sent !== 'number') return null;
  // At most the longest admission (the API server's webhook timeout is at most 30 s).
  const within =
    typeof answerWithinMs === 'number' ? Math.min(Math.max(answerWithinMs, 0), 30_000) : undefined;
  return {
    ...{ namespace, name, uid, generation, sent },
    ...(within !== undefined ? { answerWithinMs: within } : {}),
    ...(answered === 'allowed' || answered === 'refused' ? { answered } : {}),
    ...(isJsonObject(rule) ? { rule } : {}),
  };
}

/** POST /peer/admitted: 204 for a notice signed with a shared key and fresh, 401 or 400 otherwise. */
export async function handlePeerNotice(
  req: IncomingMessage,
  res: ServerResponse,
  receiver: PeerReceiver,
): Promise<void> {
  let text: string;
  try {
    // A ModRule is at most what etcd stores (1.5 MiB).
    text = await readBody(req, 2 * 1024 * 1024);
  } catch (err) {
    sendText(res, 400, `bad notice: ${messageOf(err)}`);
    return;
  }
  if (!verifyNotice(text, String(req.headers[SIGNATURE_HEADER] ?? ''), receiver.keys())) {
    receiver.refresh?.();
    sendText(res, 401, 'bad signature');
    return;
  }
  const notice = parseNotice(text);
  if (!notice || Math.abs(Date.now() - notice.sent) > MAX_AGE_MS) {
    sendText(res, 400, 'bad or stale notice');
    return;
  }
  receiver.receive(notice);
  res.statusCode = 204;
  res.end();
}
