import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { JsonObject } from '../util/json';
import { loadKustomization, main } from './build';
import { checkBundle } from './check';

const ROOT = path.resolve(__dirname, '..');
const DEFAULT = path.join(ROOT, 'config/default');

/** The real bundle's objects, with `edit` applied to a copy of the operator Deployment's container or Service. */
function bundleWith(edit: (parts: { container: JsonObject; service: JsonObject }) => void): JsonObject[] {
  const resources = structuredClone(loadKustomization(DEFAULT));
  const deployment = resources.find((r) => r.kind === 'Deployment') as JsonObject;
  const container = ((deployment.spec as JsonObject).template as JsonObject).spec as JsonObject;
  const service = resources.find((r) => r.kind === 'Service') as JsonObject;
  edit({ container: (container.containers as JsonObject[])[0], service });
  return resources;
}

const WHERE = 'Deployment kubemod-system/kubemod-operator container manager';

describe('checkBundle', () => {
  it('finds nothing wrong with the bundle as shipped', () => {
    expect(checkBundle(loadKustomization(DEFAULT))).toEqual([]);
  });

  it('refuses a metrics port that is the webhook port (flag)', () => {
    const problems = checkBundle(
      bundleWith(({ container }) => {
        container.args = ['operator', '--health-port=9443'];
      }),
    );
    expect(problems).toContain(
      `${WHERE}: the metrics port (--health-port) and the webhook port (--webhook-port) are both 9443: ` +
        'the operator cannot serve both on one port; give them different ports',
    );
    // The declared port, the probes, the Service and the scrape annotation now disagree with the operator too.
    expect(problems).toContain(`${WHERE}: container port "metrics" is 8081 but the operator listens on 9443`);
    expect(problems).toContain(
      `${WHERE}: readinessProbe must use the metrics port 9443 (it serves /healthz and /readyz)`,
    );
    expect(problems).toContain(
      'Service kubemod-system/kubemod-webhook-service: annotation prometheus.io/port is 8081, the metrics port is 9443',
    );
  });

  it('refuses the clash when it comes from the environment and the declared ports follow it', () => {
    const problems = checkBundle(
      bundleWith(({ container }) => {
        (container.env as JsonObject[]).push({ name: 'MODRULE_WEBHOOK_PORT', value: '8081' });
        container.args = ['operator', '--health-port', '8081'];
        (container.ports as JsonObject[])[0].containerPort = 8081;
      }),
    );
    expect(problems[0]).toMatch(/are both 8081/);
    expect(problems).toContain(`${WHERE}: containerPort 8081 declared twice`);
  });

  it('refuses a Service port that reaches neither operator port, and a port that is no number', () => {
    expect(
      checkBundle(
        bundleWith(({ service }) => {
          ((service.spec as JsonObject).ports as JsonObject[])[1].targetPort = 'health';
        }),
      ),
    ).toEqual([
      'Service kubemod-system/kubemod-webhook-service: port metrics targets "health", which is neither the webhook ' +
        `port 9443 nor the metrics port 8081 of ${WHERE}`,
    ]);
    expect(
      checkBundle(
        bundleWith(({ container }) => {
          container.args = ['operator', '--webhook-port=https'];
        }),
      ),
    ).toContain(`${WHERE}: --webhook-port (MODRULE_WEBHOOK_PORT) is "https", not a port number`);
  });
});

describe('node dist/bundle/build.js (make bundle)', () => {
  let dir: string;
  let out: string;
  let stderr: string[];
  let write: jest.SpyInstance;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'modrule-bundle-'));
    fs.cpSync(path.join(ROOT, 'config'), path.join(dir, 'config'), { recursive: true });
    out = path.join(dir, 'bundle.yaml');
    fs.writeFileSync(out, 'the previous bundle\n');
    stderr = [];
    write = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    write.mockRestore();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes the bundle naming the given image', () => {
    const image = 'registry.local:5000/platform/modrule:1.2.3';
    expect(main([path.join(dir, 'config/default'), '--image', image, '--output', out])).toBe(0);
    expect(fs.readFileSync(out, 'utf8')).toContain(`image: ${image}\n`);
    expect(stderr).toEqual([]);
  });

  it('refuses an invalid image reference and leaves the previous bundle as it was', () => {
    expect(
      main([
        path.join(dir, 'config/default'),
        '--image',
        'registry.local:5000/Platform/modrule:1',
        '-o',
        out,
      ]),
    ).toBe(1);
    expect(stderr.join('')).toBe(
      'bundle/build: "registry.local:5000/Platform/modrule:1" is not a valid image reference: ' +
        'the repository "Platform/modrule" must be lower case\n',
    );
    expect(fs.readFileSync(out, 'utf8')).toBe('the previous bundle\n');
    expect(fs.readdirSync(dir)).toEqual(['bundle.yaml', 'config']);
  });

  it('refuses a config/ whose metrics port clashes with the webhook port, before writing anything', () => {
    const deployment = path.join(dir, 'config/manager/deployment.yaml');
    fs.writeFileSync(
      deployment,
      fs.readFileSync(deployment, 'utf8').replace('args: [operator]', 'args: [operator, --health-port=9443]'),
    );
    expect(main([path.join(dir, 'config/default'), '--output', out])).toBe(1);
    expect(stderr.join('')).toMatch(
      /the metrics port \(--health-port\) and the webhook port \(--webhook-port\) are both 9443/,
    );
    expect(fs.readFileSync(out, 'utf8')).toBe('the previous bundle\n');
  });
});
