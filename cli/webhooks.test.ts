import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { EXIT } from './exit';
import { main } from './main';
import { runCommand } from './testing';

const ROOT = join(__dirname, '..');
const BUNDLE = join(ROOT, 'bundle.yaml');

async function webhooks(args: string[], stdin = ''): Promise<{ code: number; out: string; err: string }> {
  const r = await runCommand((a, io) => main(['webhooks', ...a], io), args, { stdin });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

const documents = (text: string): JsonObject[] =>
  parseAllDocuments(text).map((d) => d.toJSON() as JsonObject);

/** Every webhook of the output as name → clientConfig. */
function clientConfigs(text: string): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = {};
  for (const config of documents(text))
    for (const hook of config.webhooks as JsonObject[])
      out[String(hook.name)] = hook.clientConfig as JsonObject;
  return out;
}

describe('modrule webhooks', () => {
  it("wires every webhook of bundle.yaml to the URL at its own Service path, whatever the webhooks' order", async () => {
    const r = await webhooks(['--url', 'https://172.18.0.1:9443', '-f', BUNDLE]);
    expect(r).toMatchObject({ code: EXIT.ok, err: '' });
    expect(documents(r.out).map((d) => d.kind)).toEqual([
      'MutatingWebhookConfiguration',
      'ValidatingWebhookConfiguration',
    ]);
    expect(clientConfigs(r.out)).toEqual({
      'mmodrule.kubemod.io': { url: 'https://172.18.0.1:9443/mutate-api-kubemod-io-v1beta1-modrule' },
      'dragnet.kubemod.io': { url: 'https://172.18.0.1:9443/dragnet-webhook' },
      'dragnet-probe.kubemod.io': { url: 'https://172.18.0.1:9443/dragnet-probe' },
      'podbinding.kubemod.io': { url: 'https://172.18.0.1:9443/podbinding-webhook' },
      'vmodrule.kubemod.io': { url: 'https://172.18.0.1:9443/validate-api-kubemod-io-v1beta1-modrule' },
    });
  });

  it('keeps everything else of a webhook, and follows its name when the order changes', async () => {
    const mutating = documents(readFileSync(BUNDLE, 'utf8')).find(
      (d) => d.kind === 'MutatingWebhookConfiguration',
    )!;
    const reversed = { ...mutating, webhooks: [...(mutating.webhooks as JsonObject[])].reverse() };
    const r = await webhooks(['--url', 'https://10.0.0.5:8443'], JSON.stringify(reversed));
    const [out] = documents(r.out);
    const hooks = out.webhooks as JsonObject[];
    expect(hooks.map((h) => h.name)).toEqual((reversed.webhooks as JsonObject[]).map((h) => h.name));
    for (const [i, hook] of hooks.entries()) {
      const { clientConfig: _, ...rest } = (reversed.webhooks as JsonObject[])[i];
      expect(hook).toMatchObject(rest);
    }
    expect(clientConfigs(r.out)['podbinding.kubemod.io']).toEqual({
      url: 'https://10.0.0.5:8443/podbinding-webhook',
    });
  });

  it('takes a live configuration (kubectl get -o yaml): caBundle kept, URLs moved, server fields left out', async () => {
    const live = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: {
        name: 'kubemod-validating-webhook-configuration',
        uid: '2b1d',
        resourceVersion: '812',
        generation: 3,
        creationTimestamp: '2026-01-01T00:00:00Z',
        managedFields: [{ manager: 'kubectl' }],
        annotations: {
          'kubectl.kubernetes.io/last-applied-configuration': '{}',
          'cert-manager.io/inject-ca-from': 'kubemod-system/kubemod-webhook-cert',
          team: 'platform',
        },
      },
      webhooks: [
        {
          name: 'vmodrule.kubemod.io',
          clientConfig: {
            url: 'https://old.example:9443/validate-api-kubemod-io-v1beta1-modrule',
            caBundle: 'Q0E=',
          },
          sideEffects: 'None',
        },
      ],
    };
    const r = await webhooks(
      ['--url', 'https://modrule.example:9443/', '-f', '-'],
      JSON.stringify({ kind: 'List', apiVersion: 'v1', items: [live] }),
    );
    expect(r.code).toBe(EXIT.ok);
    expect(documents(r.out)).toEqual([
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'kubemod-validating-webhook-configuration', annotations: { team: 'platform' } },
        webhooks: [
          {
            name: 'vmodrule.kubemod.io',
            clientConfig: {
              url: 'https://modrule.example:9443/validate-api-kubemod-io-v1beta1-modrule',
              caBundle: 'Q0E=',
            },
            sideEffects: 'None',
          },
        ],
      },
    ]);
  });

  it.each([
    [['-f', BUNDLE], /--url is required/],
    [['--url', 'http://127.0.0.1:9443', '-f', BUNDLE], /--url must be https:\/\//],
    [['--url', 'https://127.0.0.1:9443/dragnet-webhook', '-f', BUNDLE], /HOST:PORT alone/],
    [['--url', 'not a url', '-f', BUNDLE], /--url must be https:\/\/HOST:PORT, got "not a url"/],
    [
      ['--url', 'https://127.0.0.1:9443', '-f', join(ROOT, 'fixtures', 'deployment.yaml')],
      /deployment\.yaml: no MutatingWebhookConfiguration or ValidatingWebhookConfiguration/,
    ],
  ])('refuses %j: exit 1 with the reason', async (args, message) => {
    const r = await webhooks(args);
    expect(r.code).toBe(EXIT.error);
    expect(r.err).toMatch(message);
    expect(r.out).toBe('');
  });
});
