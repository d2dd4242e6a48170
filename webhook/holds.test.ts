import { JsonObject } from '../util/json';
import { ReferenceReader, ReferenceSource } from '../store/references';
import { RuleStore } from '../store/rules';
import { generateCertificates } from './certs';
import { RunningWebhook, WEBHOOK_PATHS } from './server';
import { decodePatch, makeReview, postReview, startTestServer } from './testing';

/*
 * The holds before a dragnet answer: rules admitted a moment ago reach the store first, then the references the
 * rules read (those of the rules just stored included) reach their caches, all within one budget.
 */

const mirrorRule: JsonObject = {
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name: 'mirror', namespace: 'apps', uid: 'u1', generation: 1 },
  spec: {
    type: 'Patch',
    references: [{ name: 'mirror', apiVersion: 'v1', kind: 'ConfigMap', objectName: 'mirror' }],
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [
      { op: 'add', path: '/metadata/labels/mirror', value: '{{ .Target.syntheticRefs.mirror.data.host }}' },
    ],
  },
};
const mirror: JsonObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'mirror', namespace: 'apps' },
  data: { host: 'registry.local' },
};

/** A reference cache that syncs `syncMs` after a rule first names it (as operator/references/ starts a watch). */
function lateCache(syncMs: number): ReferenceSource & { asked: number } {
  let synced: Promise<void> | null = null;
  let done = false;
  const reader: ReferenceReader = {
    get: (_g, kind, ns, name) =>
      done && kind === 'ConfigMap' && ns === 'apps' && name === 'mirror' ? mirror : undefined,
    select: () => [],
  };
  const source = {
    asked: 0,
    reader,
    pending: (rules: readonly unknown[]) => {
      source.asked++;
      if (done || rules.length === 0) return undefined;
      synced ??= new Promise<void>((resolve) =>
        setTimeout(() => {
          done = true;
          resolve();
        }, syncMs).unref(),
      );
      return synced;
    },
  };
  return source;
}

describe('the holds before a dragnet answer', () => {
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  let server: RunningWebhook | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  async function start(store: RuleStore, references: ReferenceSource, landAfterMs: number) {
    let landing: Promise<void> | null = null;
    server = await startTestServer(store, certs, {
      references,
      // The rule was admitted a moment ago: the store has it `landAfterMs` later (its informer's event).
      storeFreshness: {
        until: () =>
          (landing ??= new Promise<void>((resolve) =>
            setTimeout(() => {
              expect(store.upsertRule(mirrorRule)).toEqual([]);
              resolve();
            }, landAfterMs),
          )),
      },
    });
    return server;
  }

  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app', namespace: 'apps' } };

  test('a rule just admitted is stored, then what it reads is in its cache, before the object is answered', async () => {
    const store = new RuleStore();
    const cache = lateCache(100);
    const running = await start(store, cache, 50);
    const { review } = await postReview(
      running.url,
      `${WEBHOOK_PATHS.dragnet}?timeout=10s`,
      makeReview('CREATE', configMap),
      certs.caCert,
    );
    expect(decodePatch(review)).toContainEqual({
      op: 'add',
      path: '/metadata/labels',
      value: { mirror: 'registry.local' },
    });
  });

  test('the holds share one budget: the API server timeout less a second', async () => {
    const store = new RuleStore();
    const running = await start(store, lateCache(60_000), 1500);
    const started = Date.now();
    await expect(
      postReview(
        running.url,
        `${WEBHOOK_PATHS.dragnet}?timeout=3s`,
        makeReview('CREATE', configMap),
        certs.caCert,
      ),
    ).rejects.toThrow('HTTP 503: modrule: references not synced yet');
    // 1.5 s for the store, then the references' hold gets what is left of 2 s: failed open before the timeout.
    expect(Date.now() - started).toBeLessThan(2700);
  });
});
