import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { CommandIO } from './io';
import { main } from './main';
import { run } from './test';
import { CaseReport } from './testcase';
import { EXIT } from './exit';
import { CommandResult, runCommand } from './testing';

const modruleTest = (args: string[], tty = false): Promise<CommandResult> => runCommand(run, args, { tty });

/**
 * The rows of the report's table with every cell whole again: a cell wrapped over several lines is joined back (its
 * pieces without the spaces they were wrapped at, so compare with `squeeze`).
 */
function tableRows(stdout: string): string[][] {
  const lines = stdout.split('\n');
  const header = lines[0];
  const starts = ['TEST', 'RESOURCE', 'EXPECTED', 'GOT', 'RESULT'].map((h) => header.indexOf(h));
  const rows: string[][] = [];
  for (const line of lines.slice(1)) {
    if (line === '') break;
    const cells = starts.map((s, i) => line.slice(s, starts[i + 1]).trim());
    if (cells[0] === '' && rows.length > 0)
      rows[rows.length - 1].forEach((c, i, row) => (row[i] = c + cells[i]));
    else rows.push(cells);
  }
  return rows;
}
const squeeze = (s: string): string => s.replace(/\s+/g, '');

const RULES = [
  {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'team-label' },
    spec: {
      type: 'Patch',
      match: [
        { select: '$.kind', matchValue: 'Deployment' },
        { select: '$.metadata.labels.team', negate: true },
      ],
      patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
    },
  },
  {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'keep-deployments' },
    spec: {
      type: 'Reject',
      admissionOperations: ['DELETE'],
      rejectMessage: 'do not delete {{ .Target.metadata.name }}',
      match: [{ select: '$.kind', matchValue: 'Deployment' }],
    },
  },
  {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'on-update' },
    spec: {
      type: 'Patch',
      admissionOperations: ['UPDATE'],
      match: [{ select: '$.kind', matchValue: 'Deployment' }],
      patch: [{ op: 'replace', path: '/spec/nothing', value: 'x' }],
    },
  },
];

function deployment(): JsonObject {
  const d = loadFixture('deployment');
  const meta = d.metadata as JsonObject;
  delete meta.managedFields;
  delete meta.annotations;
  return d;
}

describe('modrule test', () => {
  const root = mkdtempSync(join(tmpdir(), 'modrule-test-'));
  let n = 0;
  /** A fresh folder with the rules, a Deployment and a Service, and the given test file. */
  const suite = (test: JsonObject | string, files: Record<string, string> = {}): string => {
    const dir = join(root, `s${n++}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'rules.yaml'), RULES.map((r) => stringify(r)).join('---\n'));
    writeFileSync(
      join(dir, 'objects.yaml'),
      [deployment(), loadFixture('service')].map((o) => stringify(o)).join('---\n'),
    );
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    writeFileSync(join(dir, 'modrule-test.yaml'), typeof test === 'string' ? test : stringify(test));
    return dir;
  };
  const base = (results: JsonObject[], extra: JsonObject = {}): JsonObject => ({
    apiVersion: 'modrule.io/v1alpha1',
    kind: 'ModRuleTest',
    metadata: { name: 'rules' },
    rules: ['rules.yaml'],
    resources: [
      'objects.yaml',
      { file: 'objects.yaml', operation: 'DELETE' },
      { file: 'objects.yaml', operation: 'UPDATE', old: 'objects.yaml' },
    ],
    results,
    ...extra,
  });

  test('every kind of expectation passes: exit 0, one row per case', async () => {
    const dir = suite(
      base([
        {
          resource: 'Deployment/default/nginx',
          operation: 'CREATE',
          patched: { metadata: { labels: { app: 'nginx', team: 'platform' } } },
        },
        { resource: 'Service/nginx', operation: 'CREATE', unchanged: true },
        { resource: 'Deployment/nginx', operation: 'DELETE', rejected: 'do not delete nginx' },
        { resource: 'Service/nginx', operation: 'DELETE', unchanged: true },
        {
          resource: 'Deployment/nginx',
          operation: 'UPDATE',
          error: 'default/on-update: replace /spec/nothing',
        },
        {
          resource: 'Deployment/nginx',
          operation: 'UPDATE',
          rules: ['team-label'],
          patched: 'expected.yaml',
        },
      ]),
      {
        'expected.yaml': stringify({
          ...deployment(),
          metadata: { ...(deployment().metadata as JsonObject), labels: { app: 'nginx', team: 'platform' } },
        }),
      },
    );
    const r = await modruleTest([dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^TEST +RESOURCE +EXPECTED +GOT +RESULT$/);
    const squeezed = (row: Array<string | RegExp>) =>
      row.map((c) => (typeof c === 'string' ? squeeze(c) : expect.stringMatching(c)));
    expect(tableRows(r.stdout).map((row) => row.map(squeeze))).toEqual(
      [
        ['rules', 'Deployment/default/nginx', 'patched', 'patched (1 op)', 'PASS'],
        ['rules', 'Service/default/nginx', 'unchanged', 'unchanged', 'PASS'],
        [
          'rules',
          'Deployment/default/nginx (DELETE)',
          'rejected "do not delete nginx"',
          'rejected: default/keep-deployments: do not delete nginx',
          'PASS',
        ],
        ['rules', 'Service/default/nginx (DELETE)', 'unchanged', 'unchanged', 'PASS'],
        [
          'rules',
          'Deployment/default/nginx (UPDATE)',
          'error "default/on-update: replace /spec/nothing"',
          /^patched\(1op\),error:default\/on-update:replace/,
          'PASS',
        ],
        [
          'rules',
          'Deployment/default/nginx (UPDATE) [default/team-label]',
          'patched',
          'patched (1 op)',
          'PASS',
        ],
      ].map(squeezed),
    );
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(100);
    expect(lines[lines.length - 1]).toBe('6 passed, 0 failed');
    expect(r.stdout).not.toContain('\u001b[');
  });

  test('a failing case: exit 2, a YAML diff of expected against got, and the explanation', async () => {
    const dir = suite(
      base([
        {
          resource: 'Deployment/nginx',
          operation: 'CREATE',
          patched: { metadata: { labels: { team: 'payments' } } },
        },
        { resource: 'Service/nginx', operation: 'CREATE', rejected: true },
        { resource: 'Service/nginx', operation: 'DELETE', error: '' },
        { resource: 'Deployment/nginx', operation: 'CREATE', unchanged: true },
        { resource: 'Deployment/nginx', operation: 'DELETE', rejected: 'something else' },
      ]),
    );
    const r = await modruleTest([dir, '--junit', join(dir, 'junit.xml')]);
    expect(r.code).toBe(EXIT.finding);
    expect(r.stdout).toContain('0 passed, 5 failed');
    expect(r.stdout).toContain('  at /metadata/labels/team: expected "payments", got "platform"\n');
    expect(r.stdout).toContain('  -     team: payments\n  +     team: platform\n');
    expect(r.stdout).toContain('  the object was admitted\n');
    expect(r.stdout).toContain('  no rule failed at run time\n');
    expect(r.stdout).toContain('  the rules changed the object\n');
    expect(r.stdout).toContain('  no rejection message contains "something else"\n');
    // The explanation names each rule's verdict, the first failing item included.
    expect(r.stdout).toContain('default/team-label [Patch, tier 0]: matched');
    // Wrapped at 100 columns: lines longer than that continue, indented, on the next.
    for (const line of r.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
    expect(r.stdout).not.toContain('…');
    expect(r.stdout.replace(/\n +/g, ' ')).toMatch(
      /default\/keep-deployments \[Reject, tier 0\]: out of scope: admissionOperations \[DELETE\] does not include CREATE/,
    );
    expect(squeeze(tableRows(r.stdout)[4][3])).toBe(
      squeeze('rejected: default/keep-deployments: do not delete nginx'),
    );

    const xml = readFileSync(join(dir, 'junit.xml'), 'utf8');
    expect(xml).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="modrule test" tests="5" failures="5">/,
    );
    expect(xml.match(/<testcase /g)).toHaveLength(5);
    expect(xml.match(/<failure message=/g)).toHaveLength(5);
    expect(xml).toContain('expected &quot;payments&quot;, got &quot;platform&quot;');
  });

  describe('patched: lists', () => {
    // The case: the rule adds POD_NAME to a container whose env already has APP.
    const podName = {
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'pod-name' },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'Deployment' }],
        patch: [
          {
            op: 'add',
            path: '/spec/template/spec/containers/0/env/-',
            value: 'name: POD_NAME\nvalueFrom: {fieldRef: {fieldPath: metadata.name}}',
          },
        ],
      },
    };
    const withEnv = (): JsonObject => {
      const d = deployment();
      const spec = (d.spec as JsonObject).template as JsonObject;
      const containers = (spec.spec as JsonObject).containers as JsonObject[];
      containers[0].env = [{ name: 'APP', value: 'shop' }];
      return d;
    };
    const envSuite = (env: JsonObject[], extra: JsonObject = {}, others: JsonObject[] = []): string => {
      const dir = suite(
        {
          apiVersion: 'modrule.io/v1alpha1',
          kind: 'ModRuleTest',
          rules: ['pod-name.yaml'],
          resources: ['env.yaml'],
          results: [
            {
              resource: 'Deployment/nginx',
              patched: { spec: { template: { spec: { containers: [{ name: 'nginx', env }, ...others] } } } },
              ...extra,
            },
          ],
        },
        { 'pod-name.yaml': stringify(podName), 'env.yaml': stringify(withEnv()) },
      );
      return dir;
    };
    const POD_NAME = { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } };

    test('by default contain the expected elements, in their order, with others around them', async () => {
      const r = await modruleTest([envSuite([{ name: 'POD_NAME' }])]);
      expect(r.stdout).toContain('1 passed, 0 failed');
      expect(r.code).toBe(EXIT.ok);
      expect((await modruleTest([envSuite([{ name: 'APP' }, POD_NAME])])).code).toBe(EXIT.ok);
    });

    test('an element missing, or out of order: the case fails, naming the element', async () => {
      const r = await modruleTest([envSuite([POD_NAME, { name: 'APP' }])]);
      expect(r.code).toBe(EXIT.finding);
      expect(squeeze(r.stdout)).toContain(
        squeeze(
          'at /spec/template/spec/containers/0/env: no element contains {"name":"APP"} after the ones before it',
        ),
      );
      const missing = await modruleTest([envSuite([{ name: 'POD_IP' }])]);
      expect(squeeze(missing.stdout)).toContain(squeeze('/env: no element contains {"name":"POD_IP"}'));
    });

    test('lists: exact: the same elements, element by element', async () => {
      // {} stands for the second container (log-shipper), of which the case says nothing.
      const r = await modruleTest([envSuite([{ name: 'POD_NAME' }], { lists: 'exact' }, [{}])]);
      expect(r.code).toBe(EXIT.finding);
      expect(squeeze(r.stdout)).toContain(
        squeeze('at /spec/template/spec/containers/0/env: expected [{"name":"POD_NAME"}], got ['),
      );
      const both = await modruleTest([
        envSuite([{ name: 'APP' }, { name: 'POD_NAME' }], { lists: 'exact' }, [{}]),
      ]);
      expect(both.code).toBe(EXIT.ok);
    });

    test('lists takes contains or exact, with patched only', async () => {
      const r = await modruleTest([envSuite([{ name: 'POD_NAME' }], { lists: 'subset' })]);
      expect(r.code).toBe(EXIT.error);
      expect(r.stderr).toContain('results[0].lists: must be contains or exact, got "subset"');
      const dir = suite(
        base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true, lists: 'exact' }]),
      );
      const unchanged = await modruleTest([dir]);
      expect(unchanged.stderr).toContain('results[0].lists: only with patched');
    });
  });

  describe('a ModRule failing at run time where no case expects it (--on-error)', () => {
    // on-update fails on every Deployment UPDATE; the case expects team-label's patch only.
    const results: JsonObject[] = [
      {
        resource: 'Deployment/nginx',
        operation: 'UPDATE',
        patched: { metadata: { labels: { team: 'platform' } } },
      },
      { resource: 'Service/nginx', operation: 'UPDATE', unchanged: true },
    ];

    test('fail (the default): the case fails, and one line on stderr sums the failures up', async () => {
      const r = await modruleTest([suite(base(results))]);
      expect(r.code).toBe(EXIT.finding);
      expect(r.stdout).toContain('1 passed, 1 failed');
      expect(r.stdout).toContain('a rule failed at run time: default/on-update: replace /spec/nothing');
      expect(r.stderr).toMatch(
        /^modrule test: ModRule default\/on-update failed at run time on 1 object, first on /,
      );
      expect(r.stderr.split('\n')).toHaveLength(2);
    });

    test('--on-error=warn: the case is judged as the webhook admits the object, with one warning line', async () => {
      const r = await modruleTest([suite(base(results)), '--on-error=warn']);
      expect(r.code).toBe(EXIT.ok);
      expect(r.stdout).toContain('2 passed, 0 failed');
      expect(r.stderr).toMatch(
        /^warning: ModRule default\/on-update failed at run time on 1 object, first on /,
      );
      expect(r.stderr.split('\n')).toHaveLength(2);
    });

    test('a failure a case expects (error:) is no failure of the run', async () => {
      const r = await modruleTest([
        suite(base([{ resource: 'Deployment/nginx', operation: 'UPDATE', error: 'replace /spec/nothing' }])),
      ]);
      expect(r.code).toBe(EXIT.ok);
      expect(r.stderr).toBe('');
    });

    test('--on-error takes fail or warn', async () => {
      await expect(modruleTest([suite(base(results)), '--on-error=skip'])).rejects.toThrow(
        '--on-error must be fail or warn, got "skip"',
      );
    });
  });

  test('--output json: one entry per case with the verdict, and the explanation of failures', async () => {
    const dir = suite(
      base([
        { resource: 'Deployment/nginx', operation: 'CREATE', unchanged: true },
        { resource: 'Service/nginx', operation: 'CREATE', unchanged: true },
      ]),
    );
    const r = await modruleTest([join(dir, 'modrule-test.yaml'), '--output', 'json']);
    expect(r.code).toBe(EXIT.finding);
    const report = JSON.parse(r.stdout) as { passed: number; failed: number; cases: CaseReport[] };
    expect([report.passed, report.failed]).toEqual([1, 1]);
    expect(report.cases[0]).toMatchObject({
      test: 'rules',
      resource: 'Deployment/default/nginx',
      operation: 'CREATE',
      expected: 'unchanged',
      got: 'patched (1 op)',
      pass: false,
    });
    expect(report.cases[0].explanation?.rules.map((x) => [x.rule, x.status])).toEqual([
      ['default/keep-deployments', 'out-of-scope'],
      ['default/on-update', 'out-of-scope'],
      ['default/team-label', 'matched'],
    ]);
    expect(report.cases[1].explanation).toBeUndefined();
    const explained = await modruleTest([dir, '--output', 'json', '--explain']);
    expect((JSON.parse(explained.stdout) as { cases: CaseReport[] }).cases[1].explanation).toBeDefined();
  });

  test('colour only on a terminal', async () => {
    const dir = suite(base([{ resource: 'Deployment/nginx', operation: 'CREATE', unchanged: true }]));
    const saved = process.env.NO_COLOR;
    delete process.env.NO_COLOR;
    try {
      expect((await modruleTest([dir], true)).stdout).toContain('\u001b[31m');
      expect((await modruleTest([dir], false)).stdout).not.toContain('\u001b[');
    } finally {
      if (saved !== undefined) process.env.NO_COLOR = saved;
    }
  });

  test('finds modrule-test.yaml files recursively and runs them all', async () => {
    const parent = join(root, 'tree');
    mkdirSync(join(parent, 'a', 'deep'), { recursive: true });
    const one = suite(base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true }]));
    const two = suite(base([{ resource: 'Service/nginx', operation: 'DELETE', unchanged: true }]));
    const r = await modruleTest([one, two, '--output', 'json']);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { cases: unknown[] }).cases).toHaveLength(2);
  });

  describe('bad input: exit 1 with the file and the field', () => {
    test.each<[string, JsonObject | string, RegExp]>([
      [
        'an unknown top-level field',
        { ...base([{ resource: 'nginx', unchanged: true }]), resource: ['x'] },
        /modrule-test\.yaml: resource: unknown field, expected one of: /,
      ],
      [
        'an unknown result field',
        base([{ resource: 'Service/nginx', operation: 'CREATE', unchnged: true }]),
        /modrule-test\.yaml: results\[0\]\.unchnged: unknown field/,
      ],
      [
        'no expectation',
        base([{ resource: 'Service/nginx', operation: 'CREATE' }]),
        /results\[0\]: expects nothing: give one of patched, rejected, unchanged, error/,
      ],
      [
        'two expectations',
        base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true, rejected: 'x' }]),
        /results\[0\]: give only one of rejected, unchanged/,
      ],
      [
        'a wrong operation',
        base([{ resource: 'Service/nginx', operation: 'PATCH', unchanged: true }]),
        /results\[0\]\.operation: must be CREATE, UPDATE or DELETE, got "PATCH"/,
      ],
      [
        'a wrong kind',
        { ...base([{ resource: 'nginx', unchanged: true }]), kind: 'Test' },
        /kind: must be ModRuleTest, got "Test"/,
      ],
      [
        'a resource that matches nothing',
        base([{ resource: 'Pod/nginx', unchanged: true }]),
        /results\[0\]\.resource: matches no resource: "Pod\/nginx"; resources: Deployment\/default\/nginx \(CREATE\)/,
      ],
      [
        'an ambiguous resource',
        base([{ resource: 'nginx', unchanged: true }]),
        /results\[0\]\.resource: matches 6 resources \(name the Kind\/namespace or the operation\)/,
      ],
      [
        'an unknown rule name',
        base([{ resource: 'Service/nginx', operation: 'CREATE', rules: ['nope'], unchanged: true }]),
        /results\[0\]\.rules: no ModRule named "nope" \(loaded: default\/team-label, default\/keep-deployments, default\/on-update\)/,
      ],
      [
        'a missing rules file',
        {
          ...base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true }]),
          rules: ['missing.yaml'],
        },
        /modrule-test\.yaml: cannot read .*missing\.yaml: ENOENT/,
      ],
      [
        'a missing resource file',
        { ...base([{ resource: 'nginx', unchanged: true }]), resources: ['gone.yaml'] },
        /modrule-test\.yaml: cannot read .*gone\.yaml/,
      ],
      [
        'broken YAML',
        'apiVersion: modrule.io/v1alpha1\nkind: [ModRuleTest\n',
        // file:line:column and the caret come from the same position; the line before is shown for context.
        /modrule-test\.yaml:3:1: document 1: Flow sequence .* end with a \]\n 2 \| kind: \[ModRuleTest\n 3 \| \n {3}\| \^/,
      ],
      [
        'patched on DELETE',
        base([{ resource: 'Deployment/nginx', operation: 'DELETE', patched: { kind: 'Deployment' } }]),
        /results\[0\]\.patched: nothing is patched on DELETE/,
      ],
      [
        'old without UPDATE',
        {
          ...base([{ resource: 'nginx', unchanged: true }]),
          resources: [{ file: 'objects.yaml', old: 'objects.yaml' }],
        },
        /resources\[0\]\.old: only for operation UPDATE/,
      ],
      [
        'a patched file with two objects',
        base([{ resource: 'Service/nginx', operation: 'CREATE', patched: 'objects.yaml' }]),
        /results\[0\]\.patched: .*objects\.yaml must hold one object, found 2/,
      ],
    ])('%s', async (_name, test, message) => {
      const r = await modruleTest([suite(test)]);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
      expect(r.code).toBe(EXIT.error);
    });

    test('an invalid ModRule names the rule file, the rule and the field', async () => {
      const dir = suite(base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true }]), {
        'rules.yaml': 'x', // overwritten below
      });
      writeFileSync(
        join(dir, 'rules.yaml'),
        stringify({ ...RULES[0], spec: { ...RULES[0].spec, match: [{ select: '$.kind ==' }] } }),
      );
      const r = await modruleTest([dir]);
      expect(r.code).toBe(EXIT.error);
      expect(r.stderr).toContain(
        `${join(dir, 'rules.yaml')}: ModRule default/team-label: spec.match[0].select: column`,
      );
    });

    test.each([
      [[], /give at least one PATH/],
      [['/does/not/exist'], /cannot read \/does\/not\/exist/],
      [[tmpdir(), '--output', 'xml'], /--output must be text or json/],
      [['--bogus'], /unknown option '--bogus'/],
    ])('usage %j', async (args, message) => {
      // Bad usage is a UsageError, printed by the dispatcher as for every subcommand.
      const r = await runCommand((a, io) => main(['test', ...a], io), args);
      expect(r.code).toBe(EXIT.error);
      expect(r.stderr).toMatch(message);
    });

    test('--junit is still written when suites do not load: a failing "load" case per file, with the error', async () => {
      const broken = suite('apiVersion: modrule.io/v1alpha1\nkind: [ModRuleTest\n');
      const good = suite(base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true }]));
      const missing = join(root, 'no-such-suite');
      const report = join(root, 'load-junit.xml');
      const r = await modruleTest([good, broken, missing, '--junit', report]);
      expect(r.code).toBe(EXIT.error);
      expect(r.stdout).toBe('');
      // Every suite that does not load is named, not only the first.
      expect(r.stderr).toContain(`${join(broken, 'modrule-test.yaml')}:3:1: document 1: Flow sequence`);
      expect(r.stderr).toContain(`cannot read ${missing}`);
      const xml = readFileSync(report, 'utf8');
      expect(xml).toContain('<testsuites name="modrule test" tests="2" failures="2">');
      expect(xml).toContain(
        `<testsuite name="${join(broken, 'modrule-test.yaml')}" file="${join(broken, 'modrule-test.yaml')}" tests="1" failures="1">`,
      );
      expect(xml).toMatch(
        /<testcase classname="[^"]*modrule-test\.yaml" name="load">\n {6}<failure message="cannot load [^"]*modrule-test\.yaml">[^<]*:3:1: document 1: Flow sequence[^<]*<\/failure>/,
      );
      expect(xml).toContain(`<testsuite name="${missing}" file="${missing}" tests="1" failures="1">`);
      expect(xml).not.toContain(good);
    });

    test('a folder without test files', async () => {
      const empty = mkdtempSync(join(tmpdir(), 'modrule-test-empty-'));
      const r = await modruleTest([empty]);
      expect(r.code).toBe(EXIT.error);
      expect(r.stderr).toContain('no test files (modrule-test.yaml) found');
    });
  });

  test('"-" reads a test file from standard input; its relative paths are taken from the current folder', async () => {
    const dir = suite(base([{ resource: 'Service/nginx', operation: 'CREATE', unchanged: true }]));
    const test = readFileSync(join(dir, 'modrule-test.yaml'), 'utf8');
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const r = await runCommand(run, ['-', '--output', 'json'], { stdin: test });
      expect(r.code).toBe(EXIT.ok);
      expect(JSON.parse(r.stdout)).toMatchObject({ passed: 1, failed: 0, cases: [{ file: '<stdin>' }] });
    } finally {
      process.chdir(cwd);
    }
  });

  test('through the dispatcher: bad input is exit 1 (EXIT.error), as for every subcommand', async () => {
    let err = '';
    const io: CommandIO = { stdout: () => undefined, stderr: (t) => (err += t), readStdin: async () => '' };
    expect(await main(['test', '/does/not/exist'], io)).toBe(EXIT.error);
    expect(err).toMatch(/^modrule test: cannot read/);
  });
});
