import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { applyPatch } from '../patch/rfc6902';
import { run, ApplyVerdict } from './apply';
import { EXIT } from './exit';
import { CommandIO, UsageError } from './io';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function apply(args: string[], stdin = '', stdinIsTTY = false): Promise<Result> {
  let stdout = '';
  let stderr = '';
  const io: CommandIO = {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    readStdin: async () => stdin,
    stdinIsTTY,
  };
  const code = await run(args, io);
  return { code, stdout, stderr };
}

const docs = (text: string): unknown[] => parseAllDocuments(text).map((d) => d.toJS() as unknown);

const EXAMPLES = join(__dirname, '..', 'examples', 'kubemod');

describe('KubeMod README examples through modrule apply', () => {
  const names = readdirSync(EXAMPLES, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();

  test('every README example is checked in', () => {
    expect(names.length).toBeGreaterThanOrEqual(14);
  });

  const argsFor = (dir: string, file: string): string[] => {
    const args = ['--rules', join(dir, 'modrule.yaml'), '--file', file];
    if (existsSync(join(dir, 'cluster.yaml'))) args.push('--cluster', join(dir, 'cluster.yaml'));
    if (existsSync(join(dir, 'args.txt')))
      args.push(...readFileSync(join(dir, 'args.txt'), 'utf8').trim().split(/\s+/));
    return args;
  };

  test.each(names)('%s', async (name) => {
    const dir = join(EXAMPLES, name);
    const result = await apply(argsFor(dir, join(dir, 'input.yaml')));
    const rejection = join(dir, 'expected-rejection.txt');
    if (existsSync(rejection)) {
      expect(result.code).toBe(EXIT.finding);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim()).toBe(readFileSync(rejection, 'utf8').trim());
      return;
    }
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const expected = docs(readFileSync(join(dir, 'expected.yaml'), 'utf8'));
    expect(docs(result.stdout)).toEqual(expected);

    // The JSON verdict's patch turns the input into the output (strict RFC 6902, as the API server applies it).
    const json = await apply([...argsFor(dir, join(dir, 'input.yaml')), '--output', 'json']);
    const [verdict] = JSON.parse(json.stdout) as ApplyVerdict[];
    const input = docs(readFileSync(join(dir, 'input.yaml'), 'utf8'))[0] as JsonObject;
    expect(applyPatch(input, verdict.patch as never)).toEqual(expected[0]);

    // README rules are idempotent: running them on their own output changes nothing.
    const tmp = mkdtempSync(join(tmpdir(), 'modrule-apply-'));
    writeFileSync(join(tmp, 'again.yaml'), result.stdout);
    const again = await apply([...argsFor(dir, join(tmp, 'again.yaml')), '--output', 'json']);
    expect((JSON.parse(again.stdout) as ApplyVerdict[])[0].patch).toEqual([]);
  });
});

describe('targetNamespaceSelector with --cluster (examples/namespace-selector)', () => {
  const dir = join(__dirname, '..', 'examples', 'namespace-selector');
  const rules = ['--rules', join(dir, 'modrules.yaml')];
  const cluster = ['--cluster', join(dir, 'cluster.yaml')];

  test('the Namespaces given with --cluster choose the cluster-wide rules by their labels', async () => {
    const result = await apply([...rules, ...cluster, '--file', join(dir, 'input.yaml')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(docs(result.stdout)).toEqual(docs(readFileSync(join(dir, 'expected.yaml'), 'utf8')));
    const annotated = (docs(result.stdout) as JsonObject[]).map(
      (d) => ((d.metadata as JsonObject).annotations as JsonObject | undefined)?.['audit.example.com/level'],
    );
    expect(annotated).toEqual(['pci', undefined, 'pci']);
  });

  test('selector and regex both decide a rejection', async () => {
    const result = await apply([...rules, ...cluster, '--file', join(dir, 'input-rejected.yaml')]);
    expect(result.code).toBe(EXIT.finding);
    expect(result.stderr.trim()).toBe(readFileSync(join(dir, 'expected-rejection.txt'), 'utf8').trim());
  });

  test('without --cluster no Namespace is known, so no selector matches', async () => {
    const result = await apply([...rules, '--file', join(dir, 'input.yaml')]);
    expect(result.code).toBe(0);
    expect(docs(result.stdout)).toEqual(docs(readFileSync(join(dir, 'input.yaml'), 'utf8')));
    const rejected = await apply([...rules, '--file', join(dir, 'input-rejected.yaml')]);
    expect(rejected.code).toBe(0);
  });
});

describe('modrule apply', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'modrule-apply-'));
  const write = (rel: string, content: unknown): string => {
    const path = join(tmp, rel);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, typeof content === 'string' ? content : stringify(content));
    return path;
  };
  const labelRule = (name: string, label: string, extra: JsonObject = {}): JsonObject => ({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name },
    spec: {
      type: 'Patch',
      match: [{ select: '$.kind', matchValues: ['Deployment', 'Service'] }],
      patch: [{ op: 'add', path: `/metadata/labels/${label}`, value: 'set' }],
      ...extra,
    },
  });
  const rejectRule: JsonObject = {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'no-services' },
    spec: {
      type: 'Reject',
      rejectMessage: 'no {{ .Target.kind }}s here',
      match: [{ select: '$.kind', matchValue: 'Service' }],
    },
  };
  const bareDeployment = (): JsonObject => {
    const d = loadFixture('deployment');
    const meta = d.metadata as JsonObject;
    delete meta.namespace;
    delete meta.managedFields;
    delete meta.annotations; // a manifest from a file, before kubectl apply annotates it
    return d;
  };

  const rulesDir = join(tmp, 'rules');
  write(
    'rules/a.yaml',
    [labelRule('one', 'one'), { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ignored' } }]
      .map((d) => stringify(d))
      .join('---\n'),
  );
  write('rules/nested/b.yml', labelRule('two', 'two', { executionTier: 1 }));
  write('rules/notes.txt', 'not a manifest');

  test('folders are read recursively, multi-document, other kinds ignored; output is a YAML stream', async () => {
    const input = write(
      'in.yaml',
      [bareDeployment(), bareDeployment()].map((d) => stringify(d)).join('---\n'),
    );
    const r = await apply(['--rules', rulesDir, '--file', input]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const out = docs(r.stdout) as JsonObject[];
    expect(out).toHaveLength(2);
    expect((out[0].metadata as JsonObject).labels).toEqual({ app: 'nginx', one: 'set', two: 'set' });
    // The namespace the object was admitted in is not written into manifests that had none.
    expect(out[0].metadata).not.toHaveProperty('namespace');
  });

  test('Warn and DryRun rules leave the object as the webhook would, and say what they would do on stderr', async () => {
    const rules = write(
      'modes.yaml',
      [
        labelRule('dry', 'dry', { enforcementAction: 'DryRun' }),
        { ...rejectRule, spec: { ...(rejectRule.spec as JsonObject), enforcementAction: 'Warn' } },
      ]
        .map((d) => stringify(d))
        .join('---\n'),
    );
    const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: {} };
    const r = await apply(['--rules', rules, '--file', write('svc.yaml', service)]);
    expect(r.code).toBe(EXIT.ok);
    expect(docs(r.stdout)).toEqual([service]);
    expect(r.stderr).toBe(
      'note: ModRule default/dry (DryRun) would patch: add /metadata/labels on Service default/web\n' +
        'note: ModRule default/no-services (Warn) would reject: no Services here on Service default/web\n',
    );
  });

  test('stdin, kind: List and --output json', async () => {
    const list = { apiVersion: 'v1', kind: 'List', items: [bareDeployment(), loadFixture('service')] };
    const r = await apply(
      ['--rules', rulesDir, '--rules', write('reject.yaml', rejectRule), '--file', '-', '--output', 'json'],
      JSON.stringify(list),
    );
    expect(r.code).toBe(EXIT.finding);
    const verdicts = JSON.parse(r.stdout) as ApplyVerdict[];
    expect(verdicts.map((v) => [v.kind, v.namespace, v.name, v.allowed, v.message])).toEqual([
      ['Deployment', 'default', 'nginx', true, null],
      ['Service', 'default', 'nginx', false, 'default/no-services: no Services here'],
    ]);
    expect(verdicts[0].rules).toEqual(['default/one', 'default/two']);
    expect(verdicts[0].patch).toEqual([
      { op: 'add', path: '/metadata/labels/one', value: 'set' },
      { op: 'add', path: '/metadata/labels/two', value: 'set' },
    ]);
    expect(verdicts[1].patch).toEqual([]);
    expect(r.stderr).toBe('rejected Service default/nginx by default/no-services: no Services here\n');
  });

  test('rejected objects are left out of the YAML stream', async () => {
    const input = write(
      'mixed.yaml',
      [bareDeployment(), loadFixture('service')].map((d) => stringify(d)).join('---\n'),
    );
    const r = await apply(['--rules', write('reject.yaml', rejectRule), '--file', input]);
    expect(r.code).toBe(EXIT.finding);
    expect((docs(r.stdout) as JsonObject[]).map((d) => d.kind)).toEqual(['Deployment']);
  });

  test('--namespace places rules and objects; cluster-scoped kinds stay cluster-scoped', async () => {
    const ns = loadFixture('namespace');
    const input = write('ns-in.yaml', [bareDeployment(), ns].map((d) => stringify(d)).join('---\n'));
    const r = await apply(['--rules', rulesDir, '--file', input, '--namespace', 'apps', '--output', 'json']);
    const verdicts = JSON.parse(r.stdout) as ApplyVerdict[];
    expect(verdicts.map((v) => [v.kind, v.namespace, v.rules.length])).toEqual([
      ['Deployment', 'apps', 2],
      ['Namespace', null, 0],
    ]);
  });

  test('--operation DELETE: only Reject rules with DELETE decide', async () => {
    const guard = {
      ...rejectRule,
      metadata: { name: 'keep-deployments' },
      spec: {
        type: 'Reject',
        admissionOperations: ['DELETE'],
        match: [{ select: '$.kind', matchValue: 'Deployment' }],
      },
    };
    const input = write('del.yaml', bareDeployment());
    const r = await apply([
      '--rules',
      rulesDir,
      '--rules',
      write('guard.yaml', guard),
      '--file',
      input,
      '--operation',
      'DELETE',
    ]);
    expect(r.code).toBe(EXIT.finding);
    expect(r.stderr).toBe('rejected Deployment default/nginx by default/keep-deployments\n');
  });

  test('--old gives UPDATE rules the previous object', async () => {
    const rule = labelRule('on-update', 'updated', { admissionOperations: ['UPDATE'] });
    const old = bareDeployment();
    const input = write('upd.yaml', bareDeployment());
    const r = await apply([
      '--rules',
      write('upd-rule.yaml', rule),
      '--file',
      input,
      '--operation',
      'update',
      '--old',
      write('old.yaml', old),
      '--output',
      'json',
    ]);
    expect((JSON.parse(r.stdout) as ApplyVerdict[])[0].rules).toEqual(['default/on-update']);
  });

  describe('mistakes that used to pass silently', () => {
    test('rules that hold no ModRule: exit 1, naming them (kubectl apply of an empty file fails too)', async () => {
      const empty = write('empty.yaml', '# nothing yet\n');
      await expect(apply(['--rules', empty, '--file', write('e-in.yaml', bareDeployment())])).rejects.toThrow(
        `no ModRule in ${empty}: nothing to apply`,
      );
      const folder = join(tmp, 'no-rules');
      write('no-rules/a.yaml', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
      await expect(
        apply(['--rules', folder, '--file', write('e-in.yaml', bareDeployment())]),
      ).rejects.toThrow(`no ModRule in ${folder}: nothing to apply`);
    });

    test('a kind nothing serves: a warning with the kind it is likely a misspelling of (as validate)', async () => {
      const typo = labelRule('typo', 'x', { match: [{ select: '$.kind', matchValue: 'Deploymnet' }] });
      const r = await apply([
        '--rules',
        write('typo.yaml', typo),
        '--file',
        write('t-in.yaml', bareDeployment()),
      ]);
      expect(r.code).toBe(EXIT.ok);
      expect(r.stderr).toBe(
        'warning: ModRule default/typo: spec.match[0].matchValue: kind Deploymnet is not built into Kubernetes 1.37 nor declared by a CustomResourceDefinition in the input (did you mean Deployment?): the rule matches none of its objects\n',
      );
    });

    test('a kind of the input or of a CRD given is served: no warning', async () => {
      const widget = labelRule('widgets', 'x', { match: [{ select: '$.kind', matchValue: 'Widget' }] });
      const input = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } };
      const r = await apply(['--rules', write('widget.yaml', widget), '--file', write('w-in.yaml', input)]);
      expect(r.stderr).toBe('');
    });

    test('input that is not a Kubernetes object: exit 1, naming the document (no invented metadata)', async () => {
      await expect(apply(['--rules', rulesDir], 'foo: bar\n')).rejects.toThrow(
        '<stdin>: document 1: not a Kubernetes object: apiVersion and kind are missing',
      );
      const mixed = stringify(bareDeployment()) + '---\nkind: ConfigMap\nmetadata: {name: c}\n';
      await expect(apply(['--rules', rulesDir, '-f', write('mixed.yaml', mixed)])).rejects.toThrow(
        'mixed.yaml: document 2: not a Kubernetes object: apiVersion is missing',
      );
    });
  });

  describe('a ModRule failing at run time (--on-error)', () => {
    // The case: a sidecar whose value indexes labels that Pods without labels do not have.
    const sidecar = {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'sidecar' },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'Pod' }],
        patch: [
          {
            op: 'add',
            path: '/spec/containers/-',
            value:
              'name: sidecar\nimage: busybox\nenv:\n  - name: APP\n    value: \'{{ index .Target.metadata.labels "app" | default "unknown" }}\'\n',
          },
        ],
      },
    };
    const pod = (name: string): JsonObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { containers: [{ name: 'app', image: 'nginx' }] },
    });
    const pods = [pod('p1'), pod('p2'), pod('p3')];
    const args = (): string[] => [
      '--rules',
      write('sidecar.yaml', sidecar),
      '--file',
      write('pods.yaml', pods.map((p) => stringify(p)).join('---\n')),
    ];
    const SUMMARY =
      'ModRule default/sidecar failed at run time on 3 objects, first on Pod default/p1: spec.patch[0].value: ';

    test('fail (the default): exit 1, nothing on stdout, one line for every object that failed', async () => {
      const r = await apply(args());
      expect(r.code).toBe(EXIT.error);
      expect(r.stdout).toBe('');
      expect(r.stderr.split('\n')).toHaveLength(2); // one line and its newline
      expect(r.stderr).toContain(`modrule apply: ${SUMMARY}`);
      expect(r.stderr).toContain('index of untyped nil');
      expect(r.stderr).toContain('--on-error=warn');
    });

    test('--output json still gives every verdict with its failures, and exits 1', async () => {
      const r = await apply([...args(), '-o', 'json']);
      expect(r.code).toBe(EXIT.error);
      const verdicts = JSON.parse(r.stdout) as ApplyVerdict[];
      expect(verdicts.map((v) => v.failures.map((f) => f.rule))).toEqual([
        ['default/sidecar'],
        ['default/sidecar'],
        ['default/sidecar'],
      ]);
      expect(r.stderr.split('\n')).toHaveLength(2);
    });

    test('--on-error=warn: exit 0, the objects as the webhook admits them, one warning line', async () => {
      const r = await apply([...args(), '--on-error=warn']);
      expect(r.code).toBe(EXIT.ok);
      expect(docs(r.stdout)).toEqual(pods);
      expect(r.stderr).toMatch(
        new RegExp(`^warning: ${SUMMARY.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^\n]*\n$`),
      );
    });

    test('several rules: still one line, each rule with its count', async () => {
      const other = labelRule('other', 'x', {
        match: [{ select: '$.kind', matchValue: 'Pod' }],
        patch: [{ op: 'replace', path: '/spec/nothing', value: 'x' }],
      });
      const r = await apply([...args(), '--rules', write('other.yaml', other), '--on-error', 'warn']);
      expect(r.code).toBe(EXIT.ok);
      expect(r.stderr).toMatch(
        /^warning: ModRules default\/other \(3 objects\) and default\/sidecar \(3 objects\) failed at run time, first on Pod default\/p1: /,
      );
      expect(r.stderr.split('\n')).toHaveLength(2);
    });

    test('a rejection with a failure: the rejection decides (exit 2, as scripts read it), nothing written', async () => {
      const r = await apply([
        ...args(),
        '--rules',
        write('reject-pods.yaml', {
          ...rejectRule,
          metadata: { name: 'no-pods' },
          spec: { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Pod' }] },
        }),
      ]);
      expect(r.code).toBe(EXIT.finding);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('failed at run time');
    });

    test('--on-error takes fail or warn', async () => {
      await expect(apply([...args(), '--on-error=ignore'])).rejects.toThrow(
        '--on-error must be fail or warn, got "ignore"',
      );
    });
  });

  test('an invalid ModRule names its file, its name and the field (exit 1)', async () => {
    const bad = labelRule('foo', 'x');
    (bad.spec as JsonObject).match = [{ select: '$.kind ==' }];
    const file = write('bad/x.yaml', bad);
    await expect(apply(['--rules', file, '--file', write('in2.yaml', bareDeployment())])).rejects.toThrow(
      new RegExp(
        `${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: ModRule default/foo: spec\\.match\\[0\\]\\.select: column \\d+: expected`,
      ),
    );
  });

  test.each([
    [['--file', 'x.yaml'], /--rules is required/],
    [['--rules', 'r', '--file', 'f', '--operation', 'CONNECT'], /--operation must be/],
    [['--rules', 'r', '--file', 'f', '--output', 'xml'], /--output must be/],
    [['--rules', 'r', '--file', 'f', '--bogus'], /unknown option/],
    [['--rules', '/does/not/exist', '--file', 'f'], /cannot read/],
  ])('bad usage %j', async (args, message) => {
    await expect(apply(args)).rejects.toThrow(UsageError);
    await expect(apply(args)).rejects.toThrow(message);
  });

  test('without --file, objects come from standard input (as Helm runs post-renderers)', async () => {
    const input = stringify(bareDeployment());
    const viaFlag = await apply(['--rules', rulesDir, '--file', '-'], input);
    const viaDefault = await apply(['--rules', rulesDir], input);
    expect(viaDefault).toEqual(viaFlag);
    expect((docs(viaDefault.stdout)[0] as JsonObject).metadata).toMatchObject({ labels: { one: 'set' } });
    // On a terminal nothing is piped in: say what is missing rather than wait for input.
    await expect(apply(['--rules', rulesDir], '', true)).rejects.toThrow(
      'give --file FILE, or pipe the input in (or --file -)',
    );
  });

  test('--explain: why each rule matched or not, on stderr (yaml) or in each verdict (json)', async () => {
    const input = write(
      'explain-in.yaml',
      [bareDeployment(), loadFixture('service')].map((d) => stringify(d)).join('---\n'),
    );
    const rules = ['--rules', rulesDir, '--rules', write('reject2.yaml', rejectRule)];
    const text = await apply([...rules, '--file', input, '--explain']);
    expect(text.code).toBe(EXIT.finding);
    // stdout stays a clean manifest stream.
    expect(text.stdout).toBe((await apply([...rules, '--file', input])).stdout);
    expect(text.stderr).toContain(
      'Deployment default/nginx (CREATE):\n  default/no-services [Reject, tier 0]: not matched (match[0] failed)\n',
    );
    expect(text.stderr).toContain(
      '      matched: NO  <- first failing item (0 of 1 value matched, matchFor Any needs one)\n',
    );
    expect(text.stderr).toContain('    patch: add /metadata/labels/one = "set"\n');

    const json = await apply([...rules, '--file', input, '--explain', '--output', 'json']);
    const verdicts = JSON.parse(json.stdout) as ApplyVerdict[];
    expect(verdicts[1].explanation?.rules.map((r) => [r.rule, r.status])).toEqual([
      ['default/no-services', 'matched'],
      ['default/one', 'matched'],
      ['default/two', 'matched'],
    ]);
    expect(verdicts[1].explanation?.rules[0].rejectMessage).toBe('no Services here');
    expect(json.stderr).not.toContain('(CREATE):');
    // Without the flag the verdicts carry no explanation.
    const plain = JSON.parse(
      (await apply([...rules, '--file', input, '--output', 'json'])).stdout,
    ) as ApplyVerdict[];
    expect(plain[0]).not.toHaveProperty('explanation');
  });

  test('broken YAML input is a clear error: file:line:column, and the line with a caret at that column', async () => {
    const input =
      'apiVersion: v1\nkind: ConfigMap\n---\nkind: ConfigMap\nmetadata: {name: a\ndata:\n  x: y\n';
    await expect(apply(['--rules', rulesDir, '--file', '-'], input)).rejects.toThrow(
      '<stdin>:6:1: document 2: Flow map in block collection must be sufficiently indented and end with a }\n' +
        ' 5 | metadata: {name: a\n' +
        ' 6 | data:\n' +
        '   | ^',
    );
    const file = write('broken.yaml', input);
    await expect(apply(['--rules', rulesDir, '-f', file])).rejects.toThrow(
      `${file}:6:1: document 2: Flow map`,
    );
  });

  test('--output json carries the rules that failed at run time, so CI reading it can tell', async () => {
    const failing = labelRule('fails', 'x', {
      patch: [{ op: 'replace', path: '/spec/nothing', value: 'x' }],
    });
    const rules = ['--rules', rulesDir, '--rules', write('failing.yaml', failing)];
    const r = await apply(
      [...rules, '-f', '-', '-o', 'json', '--on-error=warn'],
      stringify(bareDeployment()),
    );
    // As the webhook does: the object is admitted with the other rules' changes, that rule's dropped.
    expect(r.code).toBe(EXIT.ok);
    const [verdict] = JSON.parse(r.stdout) as ApplyVerdict[];
    expect(verdict.allowed).toBe(true);
    expect(verdict.failures).toEqual([
      { rule: 'default/fails', message: expect.stringContaining('replace /spec/nothing') as string },
    ]);
    expect((verdict.object.metadata as JsonObject).labels).toEqual({ app: 'nginx', one: 'set', two: 'set' });
    expect(r.stderr).toContain(
      'warning: ModRule default/fails failed at run time on 1 object, first on Deployment default/nginx',
    );
    // Without failures the field is there and empty: a consumer need not test for its presence.
    const clean = await apply(['--rules', rulesDir, '-o', 'json'], stringify(bareDeployment()));
    expect((JSON.parse(clean.stdout) as ApplyVerdict[])[0].failures).toEqual([]);
  });

  test('--record-patched-by: each patched object names the rules that patched it, as the operator can', async () => {
    const testing = join(__dirname, '..', 'examples', 'testing');
    const r = await apply([
      '--rules',
      join(testing, 'rules.yaml'),
      '-f',
      join(testing, 'resources.yaml'),
      '--record-patched-by',
      '--on-error=warn',
    ]);
    const objects = docs(r.stdout) as JsonObject[];
    const annotation = (name: string) =>
      (
        (objects.find((o) => (o.metadata as JsonObject).name === name)?.metadata as JsonObject)
          .annotations as JsonObject | undefined
      )?.['modrule.io/patched-by'];
    expect(annotation('web')).toBe('default/default-team');
    expect(annotation('nightly')).toBe('default/default-team'); // batch-memory failed: its changes were dropped
    expect(objects.find((o) => o.kind === 'Service')?.metadata).not.toHaveProperty('annotations');
    // Off by default.
    expect(
      (await apply(['--rules', join(testing, 'rules.yaml'), '-f', join(testing, 'resources.yaml')])).stdout,
    ).not.toContain('modrule.io/patched-by');
  });

  test('-f and -o are --file and --output, as for select', async () => {
    const input = write('short.yaml', bareDeployment());
    const long = await apply(['--rules', rulesDir, '--file', input, '--output', 'json']);
    expect(await apply(['--rules', rulesDir, '-f', input, '-o', 'json'])).toEqual(long);
    expect(long.code).toBe(EXIT.ok);
  });

  test('standard input can be given once', async () => {
    await expect(apply(['--rules', '-', '--file', '-'], stringify(labelRule('one', 'one')))).rejects.toThrow(
      'standard input ("-") is given twice',
    );
  });

  test('--help prints usage', async () => {
    const r = await apply(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: modrule apply');
  });
});

describe('objects the rules read, from --cluster', () => {
  const dir = join(__dirname, '..', 'examples', 'references');

  test('owners and referenced objects come from --cluster; --explain says which were found', async () => {
    const args = [
      '--rules',
      join(dir, 'rules.yaml'),
      '-f',
      join(dir, 'input.yaml'),
      '-o',
      'json',
      '--explain',
    ];
    const withAll = await apply([...args, '--cluster', join(dir, 'cluster.yaml')]);
    expect(withAll.code).toBe(EXIT.ok);
    const verdicts = JSON.parse(withAll.stdout) as ApplyVerdict[];
    const pod = verdicts[0];
    expect(pod.object).toMatchObject({
      metadata: { labels: { team: 'payments' } },
      spec: {
        containers: [{ image: 'mirror.example.com/library/nginx:1.27' }, {}],
        priorityClassName: 'shop-standard',
      },
    });
    const mirror = pod.explanation?.rules.find((r) => r.rule === 'kubemod-system/registry-mirror');
    expect(mirror?.references).toEqual([
      { name: 'mirror', target: 'ConfigMap platform/registry-mirror', found: true },
    ]);
    const without = await apply(args);
    const bare = (JSON.parse(without.stdout) as ApplyVerdict[])[0];
    expect(bare.rules).toEqual([]);
    expect(
      bare.explanation?.rules.find((r) => r.rule === 'kubemod-system/registry-mirror')?.references,
    ).toEqual([{ name: 'mirror', target: 'ConfigMap platform/registry-mirror', found: false }]);
  });

  test('a tenant rule naming another namespace is refused with file, rule and field', async () => {
    const rule = join(mkdtempSync(join(tmpdir(), 'modrule-refs-')), 'rule.yaml');
    writeFileSync(
      rule,
      stringify({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'peek', namespace: 'shop' },
        spec: {
          type: 'Patch',
          references: [
            { name: 'x', apiVersion: 'v1', kind: 'Secret', namespace: 'bank', objectName: 'vault' },
          ],
          match: [{ select: '$.kind' }],
          patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }],
        },
      }),
    );
    await expect(apply(['--rules', rule, '-f', join(dir, 'input.yaml')])).rejects.toThrow(
      `${rule}: ModRule shop/peek: spec.references[0].namespace: Forbidden: a ModRule reads only objects of its own namespace (shop)`,
    );
    await expect(apply(['--rules', rule, '-f', join(dir, 'input.yaml')])).rejects.toThrow(
      'spec.references[0].kind: Forbidden: Secret references are off',
    );
  });
});
