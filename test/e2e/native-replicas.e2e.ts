import { JsonObject } from '../../util/json';
import { annotationsOf, labelsOf, metadataOf, nameOf } from '../../util/meta';
import { WatchHandle } from '../../kube/kube';
import { SCOPE_ANNOTATION } from '../../scope/ownership';
import { policyCollection } from '../../native';
import { apply, remove, waitFor } from './cluster';
import { MODRULES, NativeCluster } from './native-cluster';
import { describeCluster } from './target';
import { messageOf } from '../../util/errors';

/*
 * Two operator replicas writing the same policies, bindings, statuses and dragnet registration: once settled,
 * nothing is written for 60 s (no flapping between their views). And with the replica that wrote the registration
 * gone, a policy deleted behind the operators' backs still takes its rule back: the remaining replica saw a later
 * change of the policies than the registration's stamp, so it writes the wider registration, then narrows it again
 * once the policy is back. Runs against an existing cluster too.
 */

const QUIET_MS = Number(process.env.NATIVE_REPLICAS_QUIET_MS || 60_000);
const CONFIG =
  '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration';
const POLICY_KINDS = [
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];

/** Watches what the replicas write from now on and counts the changes (bookmarks aside). */
async function countWrites(c: NativeCluster): Promise<{ writes: string[]; stop(): void }> {
  const writes: string[] = [];
  const handles: WatchHandle[] = [];
  const watch = async (path: string, query: Record<string, string>, only?: (o: JsonObject) => boolean) => {
    const list = await c.admin.request('GET', path, { query });
    const resourceVersion = String(metadataOf(list).resourceVersion);
    handles.push(
      c.admin.watch(path, { ...query, resourceVersion, allowWatchBookmarks: 'true' }, (e) => {
        if (e.type === 'BOOKMARK' || (only && !only(e.object))) return;
        const rv = String(metadataOf(e.object).resourceVersion);
        writes.push(`${e.type} ${String(e.object.kind)} ${nameOf(e.object)} ${rv}`);
      }),
    );
  };
  const mine = (o: JsonObject) => nameOf(o).startsWith(`modrule.${c.ns}.`);
  for (const kind of POLICY_KINDS) await watch(policyCollection(kind), {}, mine);
  await watch('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
    fieldSelector: 'metadata.name=kubemod-mutating-webhook-configuration',
  });
  await watch(MODRULES(c.ns), {});
  return { writes, stop: () => handles.forEach((h) => h.abort()) };
}

describeCluster('two operator replicas serving rules natively', () => {
  let c: NativeCluster;
  const measured: Record<string, string> = {};
  const natives = (replica: number) => [...(c.operators[replica]?.store.nativeRules().keys() ?? [])].sort();
  const stampWriter = async () => {
    const config = await c.admin.request('GET', CONFIG);
    const stamp = JSON.parse(annotationsOf(config)[SCOPE_ANNOTATION] ?? '{}') as JsonObject;
    return String(stamp.writer ?? '');
  };

  beforeAll(async () => {
    c = await NativeCluster.start('native-replicas');
    await c.startOperator();
  }, 240_000);

  afterAll(async () => {
    const problems = c ? await c.stop() : [];
    process.stderr.write(
      `native replicas e2e:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
    expect(problems).toEqual([]);
  }, 120_000);

  it(
    `converge, then write nothing for ${QUIET_MS / 1000} s`,
    async () => {
      const started = Date.now();
      const all = await countWrites(c);
      try {
        await apply(c.admin, MODRULES(c.ns), c.labelRule('team', 'platform'));
        // Served by the webhook (Secrets): the registration holds it beside the native rules' guards.
        await apply(
          c.admin,
          MODRULES(c.ns),
          c.modRule(
            'owner',
            {
              type: 'Patch',
              match: [{ select: '$.kind', matchValue: 'Secret' }],
              patch: [{ op: 'add', path: '/metadata/labels/owner', value: 'ops' }],
            },
            false,
          ),
        );
        await apply(
          c.admin,
          MODRULES(c.ns),
          c.modRule('no-forbidden', {
            type: 'Reject',
            match: [
              { select: '$.kind', matchValue: 'ConfigMap' },
              { select: '$.metadata.labels.forbidden', matchValue: 'yes' },
            ],
          }),
        );
        const want = [`${c.ns}/no-forbidden`, `${c.ns}/team`];
        await waitFor('both replicas to serve the rules natively', async () =>
          [0, 1].every((r) => JSON.stringify(natives(r)) === JSON.stringify(want)),
        );
        // Settled: nothing written for 5 s.
        let seen = -1;
        await waitFor(
          'the replicas to settle',
          async () => {
            const now = all.writes.length;
            if (now !== seen) {
              seen = now;
              return false;
            }
            return true;
          },
          120_000,
          5000,
        ).catch((err: unknown) => {
          // What kept being written, by kind and name, and the last writes.
          const tally = new Map<string, number>();
          for (const w of all.writes) {
            const key = w.split(' ').slice(0, 3).join(' ');
            tally.set(key, (tally.get(key) ?? 0) + 1);
          }
          throw new Error(
            `${messageOf(err)}: ${all.writes.length} writes: ${JSON.stringify([...tally])}; last: ${all.writes.slice(-10).join(', ')}`,
          );
        });
        measured['settled after'] =
          `${Date.now() - started} ms, ${all.writes.length} writes of rules, policies, bindings and the registration`;
      } finally {
        all.stop();
      }
      const quiet = await countWrites(c);
      await new Promise((r) => setTimeout(r, QUIET_MS));
      quiet.stop();
      measured[`writes in ${QUIET_MS / 1000} s after settling`] = `${quiet.writes.length}`;
      expect(quiet.writes).toEqual([]);
      for (const r of [0, 1]) expect(natives(r)).toEqual([`${c.ns}/no-forbidden`, `${c.ns}/team`]);
      expect(labelsOf(await c.configMap('after-quiet')).team).toBe('platform');
      const secret = await c.admin.request('POST', `/api/v1/namespaces/${c.ns}/secrets`, {
        body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'after-quiet' } },
      });
      expect(labelsOf(secret).owner).toBe('ops');
    },
    QUIET_MS + 300_000,
  );

  it('the registration writer gone, a policy deleted behind their backs: the other replica widens, then narrows', async () => {
    // The replica that wrote the registration last (from its log) goes; the other never wrote at these rules.
    const updates = c.logs.filter((l) => l.message === 'dragnet registration updated');
    const writer = Number(updates[updates.length - 1]?.replica ?? 1);
    const other = 1 - writer;
    await c.stopOperator(writer);
    const before = await stampWriter();
    const from = c.logs.length;
    await remove(c.admin, `${policyCollection('MutatingAdmissionPolicy')}/modrule.${c.ns}.team`);
    await waitFor(
      'the other replica to write the registration',
      async () => (await stampWriter()) !== before,
      30_000,
      100,
    );
    const wrote = c.logs.slice(from).filter((l) => l.message === 'dragnet registration updated');
    // newer-native: it saw the deletion the stamp had not; (newer-rules when its ModRule watch had moved on too).
    expect(wrote[0]).toMatchObject({
      replica: other,
      reason: expect.stringMatching(/^newer-(native|rules)$/),
    });
    await waitFor('team native again', async () => natives(other).includes(`${c.ns}/team`), 60_000);
    expect(labelsOf(await c.configMap('after-heal')).team).toBe('platform');
    measured['writer gone, policy deleted: the other replica wrote'] = wrote
      .map((l) => String(l.reason))
      .join(', ');
    await c.startOperator();
  }, 180_000);
});
