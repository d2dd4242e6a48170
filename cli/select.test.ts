import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { EXIT } from './exit';
import { CommandIO, UsageError } from './io';
import { caretLine, run } from './select';

const fixture = (name: string) => join(__dirname, '..', 'fixtures', `${name}.yaml`);
const tmp = mkdtempSync(join(tmpdir(), 'modrule-select-'));

function captured(stdin = '', stdinIsTTY = false): { io: CommandIO; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: { stdout: (t) => (out += t), stderr: (t) => (err += t), readStdin: async () => stdin, stdinIsTTY },
    out: () => out,
    err: () => err,
  };
}

async function select(args: string[], stdin?: string) {
  const c = captured(stdin);
  const code = await run(args, c.io);
  return { code, stdout: c.out(), stderr: c.err() };
}

describe('modrule select --output json', () => {
  const cases: Array<[string, string, unknown[]]> = [
    ['$.kind', 'deployment', [{ value: 'Deployment', path: '/kind', indices: [] }]],
    [
      '$.spec.template.spec.containers[*].image',
      'deployment',
      [
        { value: 'nginx:1.14.2', path: '/spec/template/spec/containers/0/image', indices: [0] },
        { value: 'their-repo/log-shipper:2.1', path: '/spec/template/spec/containers/1/image', indices: [1] },
      ],
    ],
    [
      '$.spec.template.spec.containers[? @.image =~ "nginx"].ports[? @.containerPort == 80].containerPort',
      'deployment',
      [{ value: 80, path: '/spec/template/spec/containers/0/ports/0/containerPort', indices: [0, 0] }],
    ],
    ['length($.spec.externalIPs) > 0', 'service', [{ value: true, path: null, indices: [] }]],
    ['length($.spec.externalIPs) > 0', 'pod', [{ value: false, path: null, indices: [] }]],
    [
      '$.metadata.annotations["ref.kubemod.io/inject-node-ref"]',
      'pod',
      [{ value: 'true', path: '/metadata/annotations/ref.kubemod.io~1inject-node-ref', indices: [] }],
    ],
    ['$.metadata.labels["app.kubernetes.io/component"]', 'deployment', []],
    [
      '$.metadata.labels.color',
      'namespace',
      [{ value: 'blue', path: '/metadata/labels/color', indices: [] }],
    ],
  ];
  test.each(cases)('%s on %s', async (expr, name, expected) => {
    const r = await select([expr, '--file', fixture(name), '--output', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expected);
    expect(r.stdout.trim().startsWith('[')).toBe(true);
  });

  test('reads JSON from standard input with "-"', async () => {
    const r = await select(
      ['$.items[*].n', '-', '-o', 'json'],
      JSON.stringify({ items: [{ n: 1 }, { n: 2 }] }),
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { value: 1, path: '/items/0/n', indices: [0] },
      { value: 2, path: '/items/1/n', indices: [1] },
    ]);
  });

  test('reads a JSON file', async () => {
    const file = join(tmp, 'obj.json');
    writeFileSync(file, JSON.stringify({ kind: 'ConfigMap', data: { 'a.b': 'x' } }));
    const r = await select(['$.data["a.b"]', '-f', file, '-o', 'json']);
    expect(JSON.parse(r.stdout)).toEqual([{ value: 'x', path: '/data/a.b', indices: [] }]);
  });
});

describe('modrule select default (yaml) output', () => {
  test('prints a readable list of path, indices and value', async () => {
    const r = await select(['$.spec.template.spec.containers[*].ports[*]', '--file', fixture('deployment')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('- path: /spec/template/spec/containers/0/ports/0\n  indices: [0, 0]\n');
    expect(parse(r.stdout)).toEqual([
      {
        path: '/spec/template/spec/containers/0/ports/0',
        indices: [0, 0],
        value: { containerPort: 80, protocol: 'TCP' },
      },
      {
        path: '/spec/template/spec/containers/1/ports/0',
        indices: [1, 0],
        value: { containerPort: 9100, name: 'metrics', protocol: 'TCP' },
      },
    ]);
  });

  test('a boolean select prints one computed value', async () => {
    const r = await select([
      '$.spec.replicas > 1 && $.kind == "Deployment"',
      '--file',
      fixture('deployment'),
    ]);
    expect(parse(r.stdout)).toEqual([{ path: null, indices: [], value: true }]);
  });

  test('no results: friendly note on stderr, exit 0, nothing on stdout', async () => {
    const r = await select(['$.metadata.labels.missing', '--file', fixture('pod')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^no results/);
  });

  test('several YAML documents: the first is evaluated and stderr says so', async () => {
    const file = join(tmp, 'multi.yaml');
    writeFileSync(file, 'kind: First\n---\nkind: Second\n---\nkind: Third\n');
    const r = await select(['$.kind', '-f', file, '-o', 'json']);
    expect(JSON.parse(r.stdout)).toEqual([{ value: 'First', path: '/kind', indices: [] }]);
    expect(r.stderr).toContain('holds 3 documents; evaluating the first one only');
  });
});

describe('modrule select errors', () => {
  test('a syntax error shows the column with a caret under the expression and exits 1', async () => {
    const r = await select(['$.spec.containers[? @.name == "x"', '--file', fixture('pod')]);
    expect(r.code).toBe(EXIT.error);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      "modrule select: invalid select: column 34: expected ']' but found end of input\n" +
        '  $.spec.containers[? @.name == "x"\n' +
        '                                   ^\n',
    );
  });

  test('caret lands under the offending character', () => {
    expect(caretLine('$.a ? 1', 5)).toBe('  $.a ? 1\n      ^\n');
  });

  const usage: Array<[string, string[], RegExp]> = [
    ['missing expression', [], /missing EXPR/],
    ['bad output format', ['$.kind', '-f', 'x', '-o', 'xml'], /--output must be yaml or json/],
    ['unknown flag', ['$.kind', '--nope'], /unknown option/],
    ['extra argument', ['$.kind', 'a', 'b'], /unexpected argument/],
  ];
  test.each(usage)('%s is a usage error', async (_name, args, message) => {
    await expect(run(args, captured().io)).rejects.toThrow(UsageError);
    await expect(run(args, captured().io)).rejects.toThrow(message);
  });

  test('no --file on a terminal is a usage error; with input piped in, standard input is read (as apply does)', async () => {
    await expect(run(['$.kind'], captured('', true).io)).rejects.toThrow(
      'give --file FILE, or pipe the input in (or --file -)',
    );
    const piped = await select(['$.kind', '-o', 'json'], 'kind: Pod\n');
    expect(piped.code).toBe(EXIT.ok);
    expect(JSON.parse(piped.stdout)).toEqual([{ value: 'Pod', path: '/kind', indices: [] }]);
  });

  test('a missing file is a usage error naming the file', async () => {
    await expect(run(['$.kind', '-f', join(tmp, 'nope.yaml')], captured().io)).rejects.toThrow(
      /cannot read .*nope\.yaml/,
    );
  });

  test('invalid YAML is a usage error with file:line:column and a caret', async () => {
    const file = join(tmp, 'bad.yaml');
    writeFileSync(file, 'kind: Pod\nspec: {"a": 1,, "b": 2}\n');
    await expect(run(['$.kind', '-f', file], captured().io)).rejects.toThrow(
      `invalid YAML/JSON: ${file}:2:15: document 1: `,
    );
    await expect(run(['$.kind', '-'], captured('kind: Pod\nspec: {"a": 1,, "b": 2}\n').io)).rejects.toThrow(
      /<stdin>:2:15: document 1: .*\n 1 \| kind: Pod\n 2 \| spec: \{"a": 1,, "b": 2\}\n {3}\| {15}\^$/,
    );
  });

  test('an empty input is a usage error', async () => {
    await expect(run(['$.kind', '-'], captured('').io)).rejects.toThrow(/no object to evaluate/);
  });

  test('--help prints usage and exits 0', async () => {
    const r = await select(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: modrule select EXPR/);
  });
});
