import { RuleStore } from '../store/rules';
import { generateCertificates } from './certs';
import { PEER_PATH, PeerKeys, PeerNotice, SIGNATURE_HEADER, signatures, verifyNotice } from './peer';
import { RunningWebhook } from './server';
import { send, startTestServer } from './testing';

const certs = generateCertificates({ hosts: ['127.0.0.1'] });
const body = JSON.stringify({ namespace: 'team-a', name: 'r', uid: 'u-1', generation: 1, sent: Date.now() });

describe('PeerKeys: the keys notices are signed with', () => {
  it('derives the key from the secret, never the secret itself', () => {
    const [key] = new PeerKeys(() => 'the-ca-key').keys();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(key).not.toContain('the-ca-key');
    expect(new PeerKeys(() => 'the-ca-key').keys()).toEqual([key]);
    expect(new PeerKeys(() => 'another').keys()).not.toEqual([key]);
  });

  it('keeps the key from before the last change of the secret', () => {
    let secret = 'one';
    const keys = new PeerKeys(() => secret);
    const [one] = keys.keys();
    secret = 'two';
    const [two, previous] = keys.keys();
    expect(previous).toBe(one);
    expect(two).not.toBe(one);
    secret = 'three';
    expect(keys.keys()).toEqual([new PeerKeys(() => 'three').keys()[0], two]);
  });

  it('re-reads the secret at most every minRefreshMs, one read at a time', async () => {
    let now = 0;
    let reads = 0;
    let secret = 'one';
    const keys = new PeerKeys(
      () => secret,
      async () => {
        reads++;
        secret = `read-${reads}`;
      },
      2000,
      () => now,
    );
    keys.keys();
    await Promise.all([keys.refresh(), keys.refresh()]);
    expect(reads).toBe(1);
    await keys.refresh();
    expect(reads).toBe(1);
    now = 2000;
    await keys.refresh();
    expect(reads).toBe(2);
    // The read's secret is taken at once, the one before kept.
    expect(keys.keys()).toEqual([
      new PeerKeys(() => 'read-2').keys()[0],
      new PeerKeys(() => 'read-1').keys()[0],
    ]);
  });
});

describe('verifyNotice', () => {
  const [a] = new PeerKeys(() => 'a').keys();
  const [b] = new PeerKeys(() => 'b').keys();
  const [c] = new PeerKeys(() => 'c').keys();

  it('takes a notice when one of its signatures is the body signed with one of the keys', () => {
    expect(verifyNotice(body, signatures(body, [a]), [a])).toBe(true);
    expect(verifyNotice(body, signatures(body, [b, a]), [a])).toBe(true);
    expect(verifyNotice(body, signatures(body, [a]), [b, a])).toBe(true);
    expect(verifyNotice(body, signatures(body, [b, c]), [a])).toBe(false);
    expect(verifyNotice(`${body} `, signatures(body, [a]), [a])).toBe(false);
    expect(verifyNotice(body, '', [a])).toBe(false);
    expect(verifyNotice(body, ',,,', [a])).toBe(false);
  });

  it('checks at most four signatures', () => {
    const many = signatures(body, [b, b, b, b, a]);
    expect(verifyNotice(body, many, [a])).toBe(false);
  });
});

describe('POST /peer/admitted', () => {
  let server: RunningWebhook;
  let secret: string;
  let refreshed: number;
  const received: PeerNotice[] = [];

  beforeEach(async () => {
    secret = 'one';
    refreshed = 0;
    received.length = 0;
    const keys = new PeerKeys(() => secret);
    server = await startTestServer(new RuleStore(), certs, {
      peer: { keys: () => keys.keys(), refresh: () => void refreshed++, receive: (n) => received.push(n) },
    });
    keys.keys();
  });
  afterEach(() => server.close());

  const post = (text: string, signed: readonly string[]) =>
    send(`${server.url}${PEER_PATH}`, {
      method: 'POST',
      body: text,
      ca: certs.caCert,
      headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signatures(text, signed) },
    });

  it('takes a notice signed with the key before the last change (the sender has not seen it yet)', async () => {
    const [old] = new PeerKeys(() => 'one').keys();
    secret = 'two';
    expect((await post(body, [old])).status).toBe(204);
    expect(received).toHaveLength(1);
  });

  it('refuses a notice none of the keys verify with 401, and asks for the secret to be read again', async () => {
    const [other] = new PeerKeys(() => 'two').keys();
    expect((await post(body, [other])).status).toBe(401);
    expect(refreshed).toBe(1);
    expect(received).toEqual([]);
  });

  it('refuses a stale notice with 400', async () => {
    const [key] = new PeerKeys(() => 'one').keys();
    const stale = JSON.stringify({ ...JSON.parse(body), sent: Date.now() - 11 * 60_000 });
    expect((await post(stale, [key])).status).toBe(400);
    expect(received).toEqual([]);
  });

  it("takes a notice from a replica whose clock is 40 s off (the age only turns away another era's notices)", async () => {
    const [key] = new PeerKeys(() => 'one').keys();
    const skewed = JSON.stringify({ ...JSON.parse(body), sent: Date.now() - 40_000, answerWithinMs: 4000 });
    expect((await post(skewed, [key])).status).toBe(204);
    expect(received).toHaveLength(1);
    expect(received[0].answerWithinMs).toBe(4000);
  });
});
