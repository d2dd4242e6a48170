import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { createKubeClient, KubeClient, MERGE_PATCH } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { apply, bundleObjects, ClusterLedger, waitFor } from './cluster';
import { LocalControlPlane } from './controlplane';
import { KINDS, LABEL, labelRule, labelsOf, liveRegistration, maySend, MODRULES } from './inforce';
import { installBundle, isWebhookConfiguration } from './install';
import { describeSummary, summarize, WriteLoad } from './load';
import { metricSum, scrape } from './metrics';
import { machineAddress, Replica, Replicas } from './replicas';
import { E2E_MODE, E2eCluster, startCluster } from './target';

/*
 * Several API servers and rolling updates (issue 35): two kube-apiservers 1.37 on one etcd, both with
 * --enable-aggregator-routing, so that they call the webhooks at the endpoints of the bundle's Service, and two
 * operator replicas as processes (`node dist/cli/main.js operator`) listed in that Service's EndpointSlices by the test,
 * as the endpoint controller would list pods; the bundle's own webhook configurations (Service references,
 * failurePolicy Ignore for the dragnet). Every replica listens on this machine's address on a port of its own, so the
 * peer notices go between two replicas on one address with different ports. Own control plane only (KUBEBUILDER_ASSETS).
 */

const ROOT = join(__dirname, '..', '..');
const run = randomBytes(3).toString('hex');
const NS_MOVE = `ha-move-${run}`;
const NS_LOAD = `ha-load-${run}`;
const ROUNDS = 50;
const PAUSED_ROUNDS = 20;
const RATE = 20;
const ADDRESS = machineAddress();
const measured: Record<string, string> = {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
jest.setTimeout(300_000);

if (E2E_MODE === 'own' && !ADDRESS)
  process.stderr.write('e2e: replicas suite skipped: this machine has no non-loopback IPv4 address\n');
const describeHa = E2E_MODE === 'own' && ADDRESS ? describe : describe.skip;

/** A rule adding `ha=<run>` to every ConfigMap of the load's namespace. */
const loadRule = labelRule(NS_LOAD, 'load', 'ConfigMap', run);

describeHa(`two API servers and two replicas behind the Service's endpoints (run ${run})`, () => {
  let cluster: E2eCluster;
  let cp: LocalControlPlane;
  let admin: KubeClient;
  /** An admin client per API server. */
  let via: KubeClient[];
  let replicas: Replicas;
  let live: Replica[];

  /** modrule_peer_notices_total by result, summed over these replicas. */
  const notices = async (of: readonly Replica[]) => {
    const texts = await Promise.all(of.map((r) => r.metrics()));
    const sum = (result: string) =>
      texts.reduce((n, t) => n + metricSum(t, 'modrule_peer_notices_total', [`result="${result}"`]), 0);
    return { ok: sum('ok'), retried: sum('retried'), failed: sum('failed') };
  };

  /** Notices sent, whatever their result. */
  const sent = (n: { ok: number; retried: number; failed: number }) => n.ok + n.retried + n.failed;

  /** A counter of the API servers for one webhook, summed over both. */
  const apiServerCount = async (metric: string, webhook: string) => {
    const texts = await Promise.all(cp.servers.map((_, i) => scrape({ get: (p) => cp.get(p, i) })));
    return texts.reduce((n, t) => n + metricSum(t, metric, [`name="${webhook}"`]), 0);
  };
  /** The dragnet's fail-open calls. */
  const failOpen = () => apiServerCount('apiserver_admission_webhook_fail_open_count', 'dragnet.kubemod.io');
  /** Calls of the ModRule validating webhook: each admits a rule once, and tells the other replica once. */
  const ruleAdmissions = () =>
    apiServerCount('apiserver_admission_webhook_request_total', 'vmodrule.kubemod.io');

  beforeAll(async () => {
    let started = Date.now();
    // The replicas run the built CLI, as the image does.
    execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
    measured['build (tsc)'] = `${Date.now() - started} ms`;
    started = Date.now();
    cluster = await startCluster({ apiServers: 2, aggregatorRouting: true });
    cp = cluster.own!;
    admin = cluster.admin();
    via = cp.servers.map((_, i) => createKubeClient(kubeConfigAccess(cp.kubeConfigOf(i))));
    const ledger = new ClusterLedger(admin);
    await installBundle(admin, ledger);
    replicas = new Replicas(cp, admin, ADDRESS!);
    await replicas.init();
    live = [await replicas.start('a', 0), await replicas.start('b', 1)];
    await replicas.publish(live.map((replica) => ({ replica })));
    // The bundle's webhook configurations as they are: the API servers call the Service.
    for (const config of bundleObjects().filter(isWebhookConfiguration)) await ledger.apply(config);
    for (const name of [NS_MOVE, NS_LOAD])
      await ledger.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    // The operator sets caBundle: then both API servers admit ModRules through the replicas.
    for (const client of via)
      await waitFor('the ModRule webhooks to answer through the Service', async () => {
        await apply(client, MODRULES(NS_MOVE), labelRule(NS_MOVE, 'mover', 'Pod', 'warm-up'));
        return true;
      });
    measured['set-up (2 API servers, bundle, 2 replicas)'] = `${Date.now() - started} ms`;
  }, 300_000);

  afterAll(async () => {
    await replicas?.stop();
    await cluster?.stop();
    process.stderr.write(
      `e2e replicas measurements:\n${Object.entries(measured)
        .map(([k, v]) => `  ${k}: ${v}`)
        .join('\n')}\n`,
    );
  });

  /**
   * Whether the registration leaves `kind` out of NS_MOVE: the precondition of a round that needs a widening, waited
   * for as in inforce.e2e.ts (a replica narrows only 5 s after it starts, then after a quiet spell; with the e2e files
   * two at a time, 2 of 50 rounds once took longer than 10 s, every object still patched). Only a registration that
   * never narrows within a minute counts against the round.
   */
  const narrowedAway = (kind: (typeof KINDS)[number]) =>
    waitFor(
      `the registration to leave ${kind.resource}`,
      async () => !maySend(await liveRegistration(admin), kind, NS_MOVE, 'unused'),
      60_000,
      50,
    ).catch(() => false);

  /** Moves the rule `mover` to `kind` with label value `value`, through API server `from`. */
  const moveRule = (from: number, kind: (typeof KINDS)[number], value: string) =>
    // A merge patch of the spec, as `kubectl apply` sends it (no resourceVersion: the replicas' status writes do not
    // make it conflict).
    via[from].request('PATCH', `${MODRULES(NS_MOVE)}/mover`, {
      body: { spec: labelRule(NS_MOVE, 'mover', kind.kind, value).spec as JsonObject },
      contentType: MERGE_PATCH,
    });

  it(`patches the object written through one API server at once after its rule through the other, ${ROUNDS} of ${ROUNDS} both ways`, async () => {
    const before = await notices(live);
    const admissionsBefore = await ruleAdmissions();
    const eachBefore = await Promise.all(live.map(async (r) => (await notices([r])).ok));
    let writes = 0;
    for (const [from, to] of [
      [0, 1],
      [1, 0],
    ]) {
      let patched = 0;
      let uncovered = 0;
      // Rounds whose object went through the API server that neither stored the widening nor answered its probe:
      // the one the admitting replica (the one that sent a notice) does not talk to.
      let unprobed = 0;
      for (let i = 0; i < ROUNDS; i++) {
        const kind = KINDS[i % KINDS.length];
        if (await narrowedAway(kind)) uncovered++;
        const sentBefore = await Promise.all(live.map(async (r) => sent(await notices([r]))));
        const value = `r${from}${to}-${i}`;
        await moveRule(from, kind, value);
        writes++;
        const got = await via[to].request('POST', kind.path(NS_MOVE), {
          body: kind.object(NS_MOVE, `o-${value}`),
        });
        if (labelsOf(got)[LABEL] === value) patched++;
        const sentAfter = await Promise.all(live.map(async (r) => sent(await notices([r]))));
        const admitters = live.filter((_, k) => sentAfter[k] > sentBefore[k]);
        if (admitters.length === 1 && admitters[0].apiServer !== to) unprobed++;
      }
      measured[
        `rule via API server ${from}, object via ${to} at once: patched / needed a widening / unprobed`
      ] = `${patched} / ${uncovered} / ${unprobed} of ${ROUNDS}`;
      expect(uncovered).toBe(ROUNDS);
      expect(patched).toBe(ROUNDS);
    }
    // Both replicas admitted rules, and each told the other, on one address with different ports.
    const after = await notices(live);
    // The API server runs admission again when a patch meets a concurrent write (the replicas' status writes).
    const admissions = (await ruleAdmissions()) - admissionsBefore;
    const each = await Promise.all(live.map(async (r, i) => (await notices([r])).ok - eachBefore[i]));
    measured['peer notices (ok / retried / failed) for rule writes'] =
      `${after.ok - before.ok} / ${after.retried - before.retried} / ${after.failed - before.failed} for ${writes} ` +
      `rule writes, ${admissions} admissions (sent by each replica: ${each.join(', ')})`;
    expect(after.failed - before.failed).toBe(0);
    expect(admissions).toBeGreaterThanOrEqual(writes);
    // Two notices per admission: the rule before the answer, then that it was answered (operator/admission/peers.ts).
    expect(after.ok + after.retried - before.ok - before.retried).toBe(2 * admissions);
    for (const n of each) expect(n).toBeGreaterThan(0);
  });

  // What the probe does not cover (issue 35, item 11): the admitting replica widens the registration and confirms it
  // through the API server it talks to; another API server applies the change when its own watch of the configuration
  // delivers it. Here that watch is held back: API server 1 is frozen (SIGSTOP) from before the rule's write until
  // 50 ms after the object was sent to it, while only replica a (API server 0) is listed, so the widening and its probe
  // go through API server 0. Measured and printed, not asserted: the object's admission on API server 1 races its
  // watch, and the webhook configuration it uses may be the one before the widening.
  it(`measures objects sent to an API server whose watch is held back across the widening (${PAUSED_ROUNDS} rounds)`, async () => {
    await replicas.publish([{ replica: live[0] }]);
    await sleep(1000);
    let patched = 0;
    for (let i = 0; i < PAUSED_ROUNDS; i++) {
      const kind = KINDS[i % KINDS.length];
      expect(await narrowedAway(kind)).toBe(true);
      const value = `paused-${i}`;
      cp.pauseApiServer(1);
      let object: Promise<JsonObject> | null = null;
      try {
        await moveRule(0, kind, value);
        object = via[1].request('POST', kind.path(NS_MOVE), { body: kind.object(NS_MOVE, `o-${value}`) });
        await sleep(50);
      } finally {
        cp.resumeApiServer(1);
      }
      if (labelsOf(await object!)[LABEL] === value) patched++;
    }
    measured['object via an API server frozen across the widening (the probe went through the other)'] =
      `${patched} / ${PAUSED_ROUNDS} patched`;
    await replicas.publish(live.map((replica) => ({ replica })));
  });

  /** Creates the load's rule and waits until a write through each API server is patched. */
  const loadRuleInForce = async () => {
    await apply(via[0], MODRULES(NS_LOAD), loadRule);
    for (const client of via)
      await waitFor('a ConfigMap write to be patched', async () => {
        const got = await client.request('POST', `/api/v1/namespaces/${NS_LOAD}/configmaps`, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'probe-' } },
        });
        return labelsOf(got)[LABEL] === run;
      });
  };

  it(`loses no write while both replicas are replaced one after the other under ~${RATE} writes/s`, async () => {
    await loadRuleInForce();
    const openBefore = await failOpen();
    const load = new WriteLoad(via, NS_LOAD, [LABEL, run], RATE);
    load.start();
    await sleep(2000);
    const replaced: string[] = [];
    // As a Deployment with maxSurge 1, maxUnavailable 0: a new pod ready and listed, then the old one goes. Twice as
    // the issue asks (unlisted, then SIGTERM), then once more as Kubernetes does it: SIGTERM at the moment its
    // endpoint turns terminating (the kubelet and the endpoint controller act at once), removed once it exited. On
    // SIGTERM a replica reports unready and keeps serving for 5 s, then drains.
    for (const kubernetesOrder of [false, false, true]) {
      const old = live[0];
      const started = Date.now();
      const fresh = await replicas.start(`${old.name[0]}${replaced.length + 2}`, old.apiServer);
      const others = live.filter((r) => r !== old);
      await replicas.publish([...others, old, fresh].map((replica) => ({ replica })));
      await sleep(2000);
      const kept = [...others, fresh].map((replica) => ({ replica }));
      await replicas.publish(kubernetesOrder ? [...kept, { replica: old, terminating: true }] : kept);
      const terminated = Date.now();
      expect(await replicas.terminate(old)).toBe(0);
      const exitMs = Date.now() - terminated;
      if (kubernetesOrder) await replicas.publish(kept);
      live = [...others, fresh];
      replaced.push(
        `${old.name} -> ${fresh.name} ${kubernetesOrder ? '(SIGTERM as terminating)' : '(unlisted, then SIGTERM)'} ` +
          `in ${Date.now() - started} ms, SIGTERM to exit ${exitMs} ms`,
      );
    }
    await sleep(2000);
    const writes = await load.stop();
    const summary = summarize(writes);
    measured['rolling replacements (3, under load through both API servers)'] =
      `${describeSummary(summary)} (${replaced.join('; ')}; dragnet fail-open calls ${(await failOpen()) - openBefore})`;
    expect(summary.failed).toBe(0);
    expect(summary.unpatched).toBe(0);
    expect(summary.writes).toBeGreaterThan(RATE * 20);
  });

  it('patches every write from 1 s after a replica killed while listed is taken out of the endpoints', async () => {
    const openBefore = await failOpen();
    const load = new WriteLoad(via, NS_LOAD, [LABEL, run], RATE);
    load.start();
    await sleep(2000);
    const [kept, victim] = live;
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    await sleep(3000 - (Date.now() - killedAt));
    await replicas.publish([{ replica: kept }]);
    const removedAt = Date.now();
    await sleep(5000);
    const writes = await load.stop();
    const listed = summarize(writes, killedAt, removedAt);
    const first = summarize(writes, removedAt, removedAt + 1000);
    const later = summarize(writes, removedAt + 1000);
    measured['replica killed (SIGKILL), listed 3 s'] =
      `while listed: ${describeSummary(listed)}; first second after its removal: ${describeSummary(first)}; ` +
      `after: ${describeSummary(later)}; dragnet fail-open calls ${(await failOpen()) - openBefore}`;
    expect(later.unpatched + later.failed).toBe(0);
    expect(later.writes).toBeGreaterThan(RATE * 3);
    // Two replicas again for what follows.
    const fresh = await replicas.start(`${victim.name[0]}9`, victim.apiServer);
    live = [kept, fresh];
    await replicas.publish(live.map((replica) => ({ replica })));
  });

  it('patches every write through one API server while the other restarts', async () => {
    const load = new WriteLoad(via, NS_LOAD, [LABEL, run], RATE, [1]);
    load.start();
    await sleep(1000);
    const started = Date.now();
    await cp.restartApiServer(0, 0);
    const restartMs = Date.now() - started;
    await sleep(1000);
    // Back: writes through both again.
    load.use([0, 1]);
    const back = Date.now();
    await sleep(3000);
    const writes = await load.stop();
    const during = summarize(writes, -Infinity, back);
    const after = summarize(writes, back);
    measured['API server 0 restarted, writes through API server 1'] =
      `${describeSummary(during)} (restart ${restartMs} ms); then through both: ${describeSummary(after)}`;
    expect(during.unpatched + during.failed).toBe(0);
    expect(after.unpatched + after.failed).toBe(0);
  });

  it('puts 1,000 rules written at once through both API servers in force: an object of each namespace patched at once', async () => {
    const namespaces = Array.from({ length: 50 }, (_, i) => `ha-flood-${i}-${run}`);
    for (const name of namespaces)
      await admin.request('POST', '/api/v1/namespaces', {
        body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
      });
    // Rule j: namespace j mod 50, kind and label value from j / 50; half of them through each API server.
    const values = new Map<string, Set<string>>();
    const rules = Array.from({ length: 1000 }, (_, j) => {
      const ns = namespaces[j % 50];
      const kind = KINDS[Math.floor(j / 50) % KINDS.length];
      const value = `flood-${Math.floor(j / 50)}`;
      const key = `${ns}/${kind.kind}`;
      values.set(key, (values.get(key) ?? new Set()).add(value));
      return { via: j % 2, ns, rule: labelRule(ns, `f-${j}`, kind.kind, value) };
    });
    const writesOf = async () => {
      const texts = await Promise.all(live.map((r) => r.metrics()));
      return texts.reduce(
        (n, t) => n + metricSum(t, 'modrule_dragnet_scope_writes_total', ['result="ok"']),
        0,
      );
    };
    const writesBefore = await writesOf();
    const started = Date.now();
    let failed = 0;
    // 40 at a time, as two `kubectl apply` runs with their default parallelism would send them.
    for (let i = 0; i < rules.length; i += 40)
      await Promise.all(
        rules
          .slice(i, i + 40)
          .map(({ via: k, ns, rule }) =>
            via[k].request('POST', MODRULES(ns), { body: rule }).catch(() => void failed++),
          ),
      );
    const took = Date.now() - started;
    // Right after: through the API server that did not take the namespace's rules, an object of each namespace.
    let patched = 0;
    const kind = KINDS[0];
    for (const [i, ns] of namespaces.entries()) {
      const got = await via[(i + 1) % 2].request('POST', kind.path(ns), {
        body: kind.object(ns, 'after-flood'),
      });
      if (values.get(`${ns}/${kind.kind}`)?.has(String(labelsOf(got)[LABEL]))) patched++;
    }
    measured['1,000 rules through both API servers at once: took / failed / registration writes / patched'] =
      `${took} ms / ${failed} / ${(await writesOf()) - writesBefore} / ${patched} of ${namespaces.length}`;
    expect(failed).toBe(0);
    expect(patched).toBe(namespaces.length);
  });

  it('leaves the replicas logging no error', () => {
    for (const r of live) {
      const errors = r
        .logTail(2000)
        .split('\n')
        .filter((l) => l.includes('"level":"error"'));
      expect(errors.map((l) => JSON.parse(l) as JsonObject)).toEqual([]);
    }
  });
});
