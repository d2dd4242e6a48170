import { JsonObject } from '../util/json';
import { RuleStore } from '../store/rules';
import { HEAVY_SPECS, modRule, neighbourRule } from '../fixtures/heavy';
import { bigConfigMap, smallConfigMap } from '../fixtures/hostile';
import { generateCertificates, GeneratedCertificates } from './certs';
import { QuarantineChange, RuleQuarantine } from './quarantine';
import { RunningWebhook, WEBHOOK_PATHS } from './server';
import { decodePatch, makeReview, postReview, send, startTestServer } from './testing';

// Issue 24 over HTTP: a heavy rule fails alone, and once it keeps doing so it is quarantined by itself (warned on
// every answer it would have taken part in, counted), instead of its namespace being demoted. The budget binds on
// steps (a rule's share: 25,000), so answers do not depend on the machine's speed.

let certs: GeneratedCertificates;
beforeAll(() => {
  certs = generateCertificates({ hosts: ['127.0.0.1'] });
});

const spec = (name: string) => HEAVY_SPECS.find((h) => h.name === name)!.spec;

async function start(rules: JsonObject[], quarantine?: RuleQuarantine): Promise<RunningWebhook> {
  const store = new RuleStore();
  expect(store.replaceRules(rules)).toEqual([]);
  return startTestServer(store, certs, {
    budget: { steps: 250_000, ms: 60_000 },
    // Demotion for slow requests or busy seconds: off. Not for the machine's load (fairness charges CPU time), but
    // these requests do real work (a heavy rule over an 8,000-key ConfigMap: 15-35 ms of CPU on a slow shared
    // machine), about a slow request's 25 ms. A request that exhausts its budget still demotes, and none here does.
    fairness: { slowMs: 1e9, shareMsPerSecond: 1e9 },
    quarantine,
  });
}

async function create(server: RunningWebhook, object: JsonObject) {
  const { review } = await postReview(
    server.url,
    WEBHOOK_PATHS.dragnet,
    makeReview('CREATE', object),
    certs.caCert,
  );
  return {
    response: review.response!,
    patch: decodePatch(review) as Array<{ path: string; value?: unknown }>,
  };
}

async function metrics(server: RunningWebhook, prefix: string): Promise<string[]> {
  const text = (await send(`${server.healthUrl}/metrics`)).body;
  return text.split('\n').filter((l) => l.startsWith(prefix));
}

// The neighbour's label, added alone or with the labels map (objects without labels).
function ownerOf(patch: Array<{ path: string; value?: unknown }>): unknown {
  const label = patch.find((p) => p.path === '/metadata/labels/owner');
  if (label) return label.value;
  return (patch.find((p) => p.path === '/metadata/labels')?.value as JsonObject | undefined)?.owner;
}

describe('a heavy rule next to an ordinary one in the same namespace', () => {
  let server: RunningWebhook;
  const changes: QuarantineChange[] = [];
  beforeAll(async () => {
    const quarantine = new RuleQuarantine({ offences: 3 });
    quarantine.subscribe((c) => changes.push(c));
    server = await start([modRule('team', 'fan-out', spec('fan-out')), neighbourRule('team')], quarantine);
  });
  afterAll(() => server.close());

  it('fails alone three times, then is quarantined: the neighbour applies on every answer', async () => {
    for (let i = 0; i < 3; i++) {
      const { response, patch } = await create(server, bigConfigMap('team', `big-${i}`, 8_000));
      expect(ownerOf(patch)).toBe('team-team');
      expect(response.warnings).toEqual([
        "modrule team/fan-out failed: rule budget exhausted: more than 25000 evaluation steps (one rule's share)",
      ]);
    }
    expect(changes.filter((c) => c.kind === 'quarantined')).toHaveLength(1);
    // Skipped at once now, on big and small objects alike, and said so.
    for (const object of [bigConfigMap('team', 'big-3', 8_000), smallConfigMap('team')]) {
      const { response, patch } = await create(server, object);
      expect(ownerOf(patch)).toBe('team-team');
      expect(response.warnings).toEqual([
        expect.stringMatching(
          /^modrule team\/fan-out skipped: quarantined until \S+Z on this replica: ran out of its share of the request budget 3 times within 60 s \(last: rule budget exhausted/,
        ),
      ]);
    }
  });

  it('is counted per rule, and the namespace is not demoted for it', async () => {
    expect(await metrics(server, 'modrule_rule_budget_exhausted_total{')).toEqual([
      'modrule_rule_budget_exhausted_total{namespace="team",name="fan-out"} 3',
    ]);
    expect(await metrics(server, 'modrule_rule_quarantines_total{')).toEqual([
      'modrule_rule_quarantines_total{namespace="team",name="fan-out"} 1',
    ]);
    expect(await metrics(server, 'modrule_quarantined_rules ')).toEqual(['modrule_quarantined_rules 1']);
    expect(await metrics(server, 'modrule_request_budget_exhausted_total{')).toEqual([]);
    expect(
      await metrics(server, 'modrule_namespace_demotions_total{namespace="team",reason="budget'),
    ).toEqual([]);
  });
});

describe('two heavy rules in one namespace', () => {
  it('each fails alone and each is quarantined; the neighbour applies throughout', async () => {
    const server = await start([
      modRule('team', 'a-until', spec('until-million')),
      modRule('team', 'b-regex', spec('regex-replace')),
      neighbourRule('team'),
    ]);
    try {
      for (let i = 0; i < 4; i++) {
        const { response, patch } = await create(server, smallConfigMap('team'));
        expect(ownerOf(patch)).toBe('team-team');
        const verb = i < 3 ? 'failed: rule budget exhausted' : 'skipped: quarantined';
        expect(response.warnings).toEqual([
          expect.stringContaining(`modrule team/a-until ${verb}`),
          expect.stringContaining(`modrule team/b-regex ${verb}`),
        ]);
      }
      expect(await metrics(server, 'modrule_quarantined_rules ')).toEqual(['modrule_quarantined_rules 2']);
    } finally {
      await server.close();
    }
  });
});

describe('a heavy cluster-wide rule from kubemod-system', () => {
  it('does not take down the namespaced rules of any namespace, and is quarantined once for all', async () => {
    const wide = { ...spec('nested-range'), targetNamespaceRegex: '.*' };
    const namespaces = ['team-a', 'team-b', 'team-c', 'team-d'];
    const server = await start([
      modRule('kubemod-system', 'heavy-everywhere', wide),
      ...namespaces.map((ns) => neighbourRule(ns)),
    ]);
    try {
      for (const [i, ns] of namespaces.entries()) {
        const { response, patch } = await create(server, smallConfigMap(ns));
        expect(ownerOf(patch)).toBe(`${ns}-team`);
        expect(response.warnings?.[0]).toMatch(
          i < 3
            ? /^modrule kubemod-system\/heavy-everywhere failed: rule budget exhausted/
            : /skipped: quarantined/,
        );
      }
      expect(await metrics(server, 'modrule_namespace_demotions_total{')).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('a Reject rule heavy in its rejectMessage', () => {
  it('rejects alone every time (fail closed); quarantined, it rejects without rendering its message', async () => {
    const server = await start([
      modRule('team', 'heavy-message', {
        type: 'Reject',
        match: [
          { select: '$.kind', matchValue: 'ConfigMap' },
          { select: '$.data.forbidden', matchValue: 'yes' },
        ],
        rejectMessage: '{{ range until 1000000 }}{{ end }}forbidden',
      }),
      neighbourRule('team'),
    ]);
    const forbidden = { ...smallConfigMap('team'), data: { forbidden: 'yes' } };
    try {
      for (let i = 0; i < 3; i++) {
        const { response } = await create(server, forbidden);
        expect(response.allowed).toBe(false);
        expect(response.status?.message).toBe(
          'operation rejected by the following ModRule(s): team/heavy-message: "could not be evaluated within its share of the request budget (rule budget exhausted: more than 25000 evaluation steps (one rule\'s share))"',
        );
      }
      const { response } = await create(server, forbidden);
      expect(response.allowed).toBe(false);
      expect(response.status?.message).toBe(
        'operation rejected by the following ModRule(s): team/heavy-message',
      );
      expect(response.warnings).toEqual([
        expect.stringMatching(/^modrule team\/heavy-message rejectMessage not rendered: quarantined until/),
      ]);
      // Objects it does not match pass, patched by the neighbour, without a word about it.
      const fine = await create(server, smallConfigMap('team'));
      expect(fine.response.allowed).toBe(true);
      expect(fine.response.warnings).toBeUndefined();
      expect(ownerOf(fine.patch)).toBe('team-team');
    } finally {
      await server.close();
    }
  });
});
