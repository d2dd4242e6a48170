import { createHmac, timingSafeEqual } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonObject, JsonObject } from '../util/json';
import { messageOf } from '../util/errors';
import { readBody, sendText } from './http';

/*
 * Replicas tell each other of the ModRules they admit, before they answer: the API server stores the rule after the
 * answer, and each replica's store learns of it from its own watch a moment later, so an object written right after
 * the rule may reach a replica that has not seen it yet. A replica told of a rule holds the dragnet requests it could
 * reach until its store has it (operator/rules/admitted.ts). A notice is signed with a key every replica has (derived
 * from the shared serving key), so nobody else can make a replica wait; it carries nothing secret.
 */

/** Where a replica takes notices from its peers (on the webhook port). */
export const PEER_PATH = '/peer/admitted';
/** The header carrying the notice's signature. */
export const SIGNATURE_HEADER = 'x-modrule-signature';
/** A notice older than this is refused (a replay makes a replica wait for nothing). */
const MAX_AGE_MS = 30_000;

/** A ModRule version a peer admitted. */
export interface PeerNotice {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
  /** When it was sent (ms since the epoch). */
  sent: number;
  /** The ModRule as admitted: the peer counts it in its own computations of the registration too. */
  rule?: JsonObject;
}

/** What the webhook server does with a notice. */
export interface PeerReceiver {
  /** The signing key (the same on every replica). */
  key(): string;
  receive(notice: PeerNotice): void;
}

/** The signature of a notice's body. */
export function signNotice(body: string, key: string): string {
  return createHmac('sha256', key).update(body).digest('hex');
}

function parseNotice(text: string): PeerNotice | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isJsonObject(v)) return null;
  const { namespace, name, uid, generation, sent, rule } = v;
  if (typeof namespace !== 'string' || typeof name !== 'string' || typeof uid !== 'string') return null;
  if (typeof generation !== 'number' || typeof sent !== 'number') return null;
  return { namespace, name, uid, generation, sent, ...(isJsonObject(rule) ? { rule } : {}) };
}

/** POST /peer/admitted: 204 for a notice signed with the shared key and fresh, 401 or 400 otherwise. */
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
  const given = Buffer.from(String(req.headers[SIGNATURE_HEADER] ?? ''), 'utf8');
  const want = Buffer.from(signNotice(text, receiver.key()), 'utf8');
  if (given.length !== want.length || !timingSafeEqual(given, want)) {
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
