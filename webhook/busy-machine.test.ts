import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { JsonObject } from '../util/json';
import { RuleStore } from '../store/rules';
import { HEAVY_SPECS, heavyObject, HeavySpec, modRule, neighbourRule } from '../fixtures/heavy';
import { admit } from '../engine/admit';
import { RequestBudget, UNTIMED_BUDGET } from '../util/budget';
import { generateCertificates } from './certs';
import { RunningWebhook, WEBHOOK_PATHS } from './server';
import { decodePatch, makeReview, postReview, send, startTestServer } from './testing';

// A heavy rule fails alone even on a busy machine. Another process spins on every core while each heavy rule of the
// catalogue, in a namespace of its own beside an ordinary rule, is sent the object it is heavy on, five times: the
// first request (the full budget), the demoted ones after it (5 ms), and those after its quarantine. The server runs
// with its defaults. The ordinary rule must apply on every answer, the first one included: no heavy rule's overshoot
// (and no wall time lost to the other process) may take its share. Not a timing test: nothing here depends on how
// busy the machine is, which is the point.

const REQUESTS = 5;
const NEIGHBOUR = 'z-neighbour';
const ns = (name: string) => `busy-${name}`;

// One busy thread per core, in a process of its own; it says when all of them spin.
const SPIN = `
const { Worker } = require('node:worker_threads');
const threads = Number(process.argv[1]) || require('node:os').availableParallelism();
for (let i = 0; i < threads; i++) new Worker('for (;;) {}', { eval: true });
setTimeout(() => process.stdout.write('spinning\\n'), 200);
`;

// `threads` busy threads (default one per core), pinned to `cpu` when given.
function startSpinner(threads?: number, cpu?: string): Promise<ChildProcess> {
  const node = [process.execPath, '-e', SPIN, String(threads ?? '')];
  const [command, ...args] = cpu === undefined ? node : ['taskset', '-c', cpu, ...node];
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', () => resolve(child));
  });
}

// CPU seconds a process has used (Linux: /proc/PID/stat utime + stime, in clock ticks of 1/100 s).
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// The neighbour's label, added alone or with the labels map (objects without labels).
function ownerOf(patch: Array<{ path: string; value?: unknown }>): unknown {
  const label = patch.find((p) => p.path === '/metadata/labels/owner');
  if (label) return label.value;
  return (patch.find((p) => p.path === '/metadata/labels')?.value as JsonObject | undefined)?.owner;
}

// Whether the heavy rule runs out of its share of the default budget's steps on its object (time aside).
function runsOutOfSteps(h: HeavySpec): boolean {
  const store = new RuleStore();
  store.replaceRules([modRule('team', h.name, h.spec)]);
  const object = heavyObject(h, 'team');
  const input = { operation: 'CREATE' as const, object, oldObject: null, namespace: 'team' };
  return admit(input, store.snapshot(), new RequestBudget(UNTIMED_BUDGET)).overBudget.length > 0;
}

describe('a heavy rule next to an ordinary one, while another process loads every core', () => {
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  let spinner: ChildProcess;
  let server: RunningWebhook;

  beforeAll(async () => {
    const store = new RuleStore();
    const rules = HEAVY_SPECS.flatMap((h) => [
      modRule(ns(h.name), h.name, h.spec),
      neighbourRule(ns(h.name), NEIGHBOUR),
    ]);
    expect(store.replaceRules(rules)).toEqual([]);
    server = await startTestServer(store, certs);
    spinner = await startSpinner();
  });

  afterAll(async () => {
    spinner?.kill('SIGKILL');
    await server?.close();
  });

  it('the ordinary rule applies on every answer, the first one included', async () => {
    const startedCpu = cpuSeconds(spinner.pid!);
    const started = Date.now();
    const answers = await Promise.all(
      HEAVY_SPECS.map(async (h) => {
        const object = heavyObject(h, ns(h.name));
        const seen: Array<{ owner: unknown; warnings: string[] }> = [];
        for (let i = 0; i < REQUESTS; i++) {
          const { review } = await postReview(
            server.url,
            WEBHOOK_PATHS.dragnet,
            makeReview('CREATE', object),
            certs.caCert,
          );
          const patch = decodePatch(review) as Array<{ path: string; value?: unknown }>;
          seen.push({ owner: ownerOf(patch), warnings: review.response?.warnings ?? [] });
        }
        return { heavy: h.name, seen };
      }),
    );
    const missed = answers.flatMap(({ heavy, seen }) =>
      seen.flatMap((s, i) =>
        s.owner === `${ns(heavy)}-team` ? [] : [`${heavy} #${i + 1}: ${s.warnings.join('; ')}`],
      ),
    );
    expect(missed).toEqual([]);
    // The heavy rules were heavy here: every one that runs out of a full share of steps (untimed, so whatever the
    // machine) failed alone on the first answer, and said so.
    const heavyBySteps = HEAVY_SPECS.filter((h) => runsOutOfSteps(h)).map((h) => h.name);
    expect(heavyBySteps.length).toBeGreaterThan(HEAVY_SPECS.length / 2);
    for (const { heavy, seen } of answers.filter((a) => heavyBySteps.includes(a.heavy))) {
      expect(seen[0].warnings.join('\n')).toMatch(new RegExp(`^modrule ${ns(heavy)}/${heavy} failed: `, 'm'));
    }
    // The other process had the cores meanwhile: spinning throughout (a tenth of a core at least, however many other
    // processes share the machine: under CI's parallel suites it once had 16%).
    const seconds = (Date.now() - started) / 1000;
    expect(cpuSeconds(spinner.pid!) - startedCpu).toBeGreaterThan(seconds * 0.1);
  }, 180_000);
});

describe("a namespace of cheap rules while other processes take its thread's core", () => {
  // This thread (the webhook's event loop, and the test's client) shares one core with ten spinning threads of
  // another process: each evaluation (40 ordinary rules, a few ms of CPU) is stretched several times over on the
  // wall clock, well past a slow request's 25 ms. Fairness charges CPU time: the namespace is never demoted.
  const RULES = 40;
  const certs = generateCertificates({ hosts: ['127.0.0.1'] });
  let spinner: ChildProcess;
  let server: RunningWebhook;
  let affinity = '';

  beforeAll(async () => {
    const store = new RuleStore();
    const rules = Array.from({ length: RULES }, (_, i) =>
      modRule('innocent', `label-${i}`, {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: `/metadata/labels/l${i}`, value: '{{ .Namespace }}' }],
      }),
    );
    expect(store.replaceRules(rules)).toEqual([]);
    server = await startTestServer(store, certs);
    // taskset -p on the process id pins its main thread only (the one that evaluates); restored after.
    affinity = /list: (\S+)/.exec(
      execFileSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' }),
    )![1];
    const cpu = affinity.split(/[,-]/)[0];
    spinner = await startSpinner(10, cpu);
    execFileSync('taskset', ['-cp', cpu, String(process.pid)], { stdio: 'ignore' });
  });

  afterAll(async () => {
    if (affinity) execFileSync('taskset', ['-cp', affinity, String(process.pid)], { stdio: 'ignore' });
    spinner?.kill('SIGKILL');
    await server?.close();
  });

  it('its rules apply on every answer and it is never demoted', async () => {
    const object = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'innocent' },
    };
    const walls: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const { review } = await postReview(
        server.url,
        WEBHOOK_PATHS.dragnet,
        makeReview('CREATE', object),
        certs.caCert,
      );
      walls.push(performance.now() - started);
      const labels = (decodePatch(review) as Array<{ path: string; value?: JsonObject }>).find(
        (p) => p.path === '/metadata/labels',
      )?.value;
      expect(Object.keys(labels ?? {})).toHaveLength(RULES);
      expect(review.response?.warnings).toBeUndefined();
    }
    const metrics = (await send(`${server.healthUrl}/metrics`)).body;
    expect(metrics.split('\n').filter((l) => l.startsWith('modrule_namespace_demotions_total{'))).toEqual([]);
    // The machine was busy for this thread: its requests took longer than a slow request's 25 ms.
    walls.sort((a, b) => a - b);
    expect(walls[walls.length >> 1]).toBeGreaterThan(25);
  }, 60_000);
});
