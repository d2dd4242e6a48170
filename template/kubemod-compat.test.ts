// KubeMod-compatibility cases for value templates: KubeMod renders values with util.NewSafeTemplate, i.e. Go
// text/template with sprig.GenericFuncMap() minus env/expandenv. Each case names the Sprig/Go behaviour it mirrors;
// the data is our own.
import { compileTemplate } from '.';

const data = {
  Target: {
    metadata: { name: 'web', labels: { app: 'nginx' } },
    spec: {
      replicas: 3,
      containers: [
        { name: 'nginx', image: 'docker.io/library/nginx:1.25.3' },
        { name: 'sidecar', image: 'ghcr.io/acme/agent:2.0' },
      ],
    },
  },
  Namespace: 'team-a',
  SelectedItem: 'docker.io/library/nginx:1.25.3',
  SelectKeyParts: [0n],
};

const render = (src: string): string => compileTemplate(src, '/x').render(data);

describe('Sprig path functions (Go path package)', () => {
  const cases: Array<[string, string]> = [
    ['{{ base .SelectedItem }}', 'nginx:1.25.3'],
    ['{{ dir .SelectedItem }}', 'docker.io/library'],
    ['{{ base "/a/b/" }}', 'b'],
    ['{{ base "" }}', '.'],
    ['{{ base "///" }}', '/'],
    ['{{ dir "file" }}', '.'],
    ['{{ dir "/file" }}', '/'],
    ['{{ clean "a//b/./c/../d/" }}', 'a/b/d'],
    ['{{ clean "/../x" }}', '/x'],
    ['{{ clean "../../x" }}', '../../x'],
    ['{{ clean "" }}', '.'],
    ['{{ ext "archive.tar.gz" }}', '.gz'],
    ['{{ ext "dir.d/file" }}', ''],
    ['{{ isAbs "/etc" }} {{ isAbs "etc" }}', 'true false'],
    ['{{ osBase "/var/log/app.log" }}', 'app.log'],
    ['{{ (index .Target.spec.containers 1).image | base | splitList ":" | first }}', 'agent'],
  ];
  test.each(cases)('%s', (src, want) => {
    expect(render(src)).toBe(want);
  });
});

describe('Sprig random strings (crypto/rand)', () => {
  test.each([
    ['randAlphaNum', /^[A-Za-z0-9]{12}$/],
    ['randAlpha', /^[A-Za-z]{12}$/],
    ['randNumeric', /^[0-9]{12}$/],
    ['randAscii', /^[ -~]{12}$/],
  ])('%s 12', (fn, re) => {
    expect(render(`{{ ${fn} 12 }}`)).toMatch(re);
  });

  test('randInt is in [min, max) and an int', () => {
    for (let i = 0; i < 20; i++) {
      const n = Number(render('{{ randInt 5 8 }}'));
      expect(n).toBeGreaterThanOrEqual(5);
      expect(n).toBeLessThan(8);
    }
    expect(render('{{ typeOf (randInt 1 2) }}')).toBe('int');
  });

  test('randBytes is base64 of that many bytes', () => {
    expect(Buffer.from(render('{{ randBytes 9 }}'), 'base64')).toHaveLength(9);
  });

  test('two renders differ', () => {
    expect(render('{{ randAlphaNum 16 }}')).not.toBe(render('{{ randAlphaNum 16 }}'));
  });
});

describe('text/template on KubeMod contexts', () => {
  const cases: Array<[string, string]> = [
    // Go prints float64 JSON numbers with %v
    ['{{ .Target.spec.replicas }}', '3'],
    // maps print as map[k:v], a missing key as <no value>
    ['{{ .Target.metadata.labels }}', 'map[app:nginx]'],
    ['{{ .Target.metadata.labels.tier }}', '<no value>'],
    // .#N rewritten to (index .SelectKeyParts N): an int
    ['{{ index .SelectKeyParts 0 | printf "%02d" }}', '00'],
    // Sprig string helpers used in KubeMod's README examples
    ['{{ .Namespace | upper }}-{{ .Target.metadata.name }}', 'TEAM-A-web'],
    ['{{ regexReplaceAll "(.+)/(.*)" .SelectedItem "my-repo/${2}" }}', 'my-repo/nginx:1.25.3'],
  ];
  test.each(cases)('%s', (src, want) => {
    expect(render(src)).toBe(want);
  });
});
