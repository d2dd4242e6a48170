import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { JsonObject } from '../util/json';
import { silentLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { metadataOnly, readySource, ReferenceObjects, referencesFrom } from '../store/references';
import { referencesPending } from '../webhook/references';
import { handleDragnet } from '../webhook/dragnet';
import { encodeReview, parseAdmissionReview } from '../webhook/review';
import { createKubeClient } from '../kube/kube';
import { ReferenceCaches } from '../operator/references/caches';
import { micros } from './dragnet.bench';
import {
  configMapServer,
  ownedPodReview,
  ownerRules,
  ownLabelRules,
  replicaSets,
  referenceRules,
} from './reference-fixtures';
import { BenchRow } from './types';
import { APP_NAMESPACE, realisticReview, realisticRules, workloadNamespaces } from './workloads';

/*
 * What reading other objects costs: the realistic workload with no rule reading references, this tree beside the base
 * tree in one run (MODRULE_BENCH_BASE=<a built checkout>, alternating rounds), rows with owner and named references,
 * and the memory of the reference caches.
 */

export const workloads = ['references'];

const ROUNDS = Number(process.env.MODRULE_BENCH_ROUNDS ?? 5);
const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;

/** The modules one tree's dragnet is made of (this tree's, or the base's compiled ones). */
interface Tree {
  RuleStore: typeof RuleStore;
  handleDragnet: typeof handleDragnet;
  parseAdmissionReview: typeof parseAdmissionReview;
  encodeReview: typeof encodeReview;
}

const THIS: Tree = { RuleStore, handleDragnet, parseAdmissionReview, encodeReview };

function baseTree(): Tree | undefined {
  const dir = process.env.MODRULE_BENCH_BASE;
  if (!dir || !existsSync(join(dir, 'dist', 'webhook', 'dragnet.js'))) return undefined;
  /* eslint-disable @typescript-eslint/no-require-imports */
  return {
    RuleStore: (require(join(dir, 'dist', 'store', 'rules.js')) as { RuleStore: typeof RuleStore }).RuleStore,
    ...(require(join(dir, 'dist', 'webhook', 'dragnet.js')) as Pick<Tree, 'handleDragnet'>),
    ...(require(join(dir, 'dist', 'webhook', 'review.js')) as Pick<
      Tree,
      'parseAdmissionReview' | 'encodeReview'
    >),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

/**
 * CPU microseconds per in-process admission (parse, admit, encode) of `body` against `rules` in `tree`. This tree's
 * runs as the operator's server does: with a reference source, asked first what the request must wait for.
 */
function admission(
  tree: Tree,
  rules: readonly JsonObject[],
  body: string,
  objects?: ReferenceObjects,
): number {
  const store = new tree.RuleStore();
  store.replaceRules(rules);
  store.replaceNamespaces(workloadNamespaces());
  const snapshot = store.snapshot();
  const source = tree === THIS ? readySource(objects ?? new ReferenceObjects()) : undefined;
  const options = source ? { references: source.reader } : {};
  const once = () => {
    const { apiVersion, request } = tree.parseAdmissionReview(body);
    if (source && referencesPending(source, snapshot, request)) throw new Error('nothing to wait for here');
    return tree.encodeReview(apiVersion, tree.handleDragnet(request, snapshot, undefined, options).response);
  };
  const first = tree.handleDragnet(tree.parseAdmissionReview(body).request, snapshot, undefined, options);
  if (first.response.allowed !== true) throw new Error('bench request was not allowed');
  return micros(once).cpu;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs: number[]) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;

/** A full collection, twice, with a turn of the event loop between (sockets and streams let go of buffers). */
async function settle(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  await new Promise((r) => setTimeout(r, 100));
  gc?.();
}

/** Heap growth while `make` holds what it returns. */
async function heapOf<T>(make: () => Promise<T> | T): Promise<{ bytes: number; held: T }> {
  await settle();
  const before = process.memoryUsage().heapUsed;
  const held = await make();
  await settle();
  return { bytes: process.memoryUsage().heapUsed - before, held };
}

/** Heap the reference caches take for 100 rules naming 100 ConfigMaps of a namespace holding `total`. */
async function cachesHeap(
  total: number,
  podObject: JsonObject,
): Promise<{ bytes: number; count: number; lists: number; json: number }> {
  const server = await configMapServer.start(total);
  try {
    const store = new RuleStore({ keepSource: false });
    store.replaceRules(referenceRules(100, 100));
    const synced = async () => {
      const caches = new ReferenceCaches({
        client: createKubeClient(server.access),
        logger: silentLogger(),
        store,
      });
      caches.start();
      const wait = caches.pending(store.allRules(), podObject, APP_NAMESPACE);
      if (wait) await wait;
      return caches;
    };
    await (await synced()).stop(); // loads the code once, outside the measurement
    // The median of three: a collection may or may not have run in the middle of one.
    const runs: Array<{ bytes: number; count: number; lists: number; json: number }> = [];
    for (let i = 0; i < 3; i++) {
      const lists = server.lists();
      const { bytes, held } = await heapOf(synced);
      // What is held, exactly: the JSON text of the objects the caches answer with.
      let json = 0;
      for (const r of store.allRules())
        for (const d of r.references?.named ?? [])
          json += JSON.stringify(
            held.reader.get(d.group, d.kind, d.namespace, d.objectName ?? '') ?? '',
          ).length;
      runs.push({
        bytes,
        count: held.reader.counts().get('/ConfigMap') ?? 0,
        lists: server.lists() - lists,
        json,
      });
      await held.stop();
    }
    return runs.sort((a, b) => a.bytes - b.bytes)[1];
  } finally {
    server.close();
  }
}

export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const row = (c: string, opsPerSec: number | null, notes: string) =>
    rows.push({ suite: 'references', case: c, opsPerSec, notes });

  // The realistic workload (no rule reads other objects): this tree beside the base tree, alternating.
  const body = realisticReview();
  const base = baseTree();
  const mine: number[] = [];
  const theirs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    mine.push(admission(THIS, realisticRules(), body));
    if (base) theirs.push(admission(base, realisticRules(), body));
  }
  row(
    'realistic, no rule reads references: this tree',
    1e6 / median(mine),
    `${median(mine).toFixed(1)} us CPU/admission (median of ${ROUNDS}, range ${range(mine)})`,
  );
  if (base) {
    // Each round measures both trees back to back: the ratio per round cancels most of the machine's drift.
    const ratios = mine.map((m, i) => m / theirs[i]);
    const pct = (r: number) => `${r >= 1 ? '+' : ''}${((r - 1) * 100).toFixed(1)}%`;
    row(
      'realistic, no rule reads references: base tree',
      1e6 / median(theirs),
      `${median(theirs).toFixed(1)} us CPU/admission (range ${range(theirs)}); this tree vs base per round: ` +
        `median ${pct(median(ratios))}, range ${pct(Math.min(...ratios))} to ${pct(Math.max(...ratios))}`,
    );
  }

  // A Pod of a Deployment's ReplicaSet: the realistic rules, then rules reading its owners and a ConfigMap.
  const pod = ownedPodReview();
  const cluster = referencesFrom([...replicaSets(1), ...configMapServer.objects(1)]);
  const plain = admission(THIS, realisticRules(), pod, cluster);
  const own = admission(THIS, [...realisticRules(), ...ownLabelRules(5)], pod, cluster);
  const owners = admission(THIS, [...realisticRules(), ...ownerRules(5)], pod, cluster);
  const named = admission(THIS, [...realisticRules(), ...referenceRules(5, 1)], pod, cluster);
  row('owned Pod, realistic rules', 1e6 / plain, `${plain.toFixed(1)} us CPU/admission`);
  row(
    'owned Pod + 5 rules copying a label of the Pod itself (control)',
    1e6 / own,
    `${own.toFixed(1)} us CPU/admission, +${(own - plain).toFixed(1)} us`,
  );
  row(
    'owned Pod + 5 rules copying labels from syntheticRefs.owner (2 levels)',
    1e6 / owners,
    `${owners.toFixed(1)} us CPU/admission, +${(owners - plain).toFixed(1)} us`,
  );
  row(
    'owned Pod + 5 rules reading one central ConfigMap (spec.references)',
    1e6 / named,
    `${named.toFixed(1)} us CPU/admission, +${(named - plain).toFixed(1)} us`,
  );

  // Memory: 10,000 ConfigMaps in the namespace, rules name 100 of them (beside a namespace of only those 100).
  const podObject = (JSON.parse(pod) as { request: { object: JsonObject } }).request.object;
  const many = await cachesHeap(10_000, podObject);
  const few = await cachesHeap(100, podObject);
  // As the API server sends them: every object parsed from JSON, nothing shared.
  const text = JSON.stringify(configMapServer.objects(10_000));
  const all = await heapOf(() => referencesFrom(JSON.parse(text) as JsonObject[]));
  row(
    'caches: 10,000 ConfigMaps, rules name 100',
    null,
    `${many.count} held (${kib(many.json)} of JSON), heap +${kib(many.bytes)} (${many.lists} list pages); ` +
      `with only those 100 in the namespace ` +
      `+${kib(few.bytes)}; all 10,000 held would take +${mib(all.bytes)}`,
  );

  // Owner caches: 1,000 ReplicaSets held whole, or only their metadata (rules that read only that).
  const sets = JSON.stringify(replicaSets(1000));
  const whole = await heapOf(() => {
    const r = new ReferenceObjects();
    r.partition('apps', 'ReplicaSet', 'owners').replace(JSON.parse(sets) as JsonObject[]);
    return r;
  });
  const meta = await heapOf(() => {
    const r = new ReferenceObjects();
    r.partition('apps', 'ReplicaSet', 'owners', metadataOnly).replace(JSON.parse(sets) as JsonObject[]);
    return r;
  });
  row(
    'caches: 1,000 ReplicaSets as owners',
    null,
    `whole: +${mib(whole.bytes)} (${kib(whole.bytes / 1000)} each); metadata only: +${mib(meta.bytes)} ` +
      `(${kib(meta.bytes / 1000)} each)`,
  );
  return rows;
}
