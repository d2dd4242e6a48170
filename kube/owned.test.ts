import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { loadKustomization } from '../bundle/build';
import {
  CERT_SECRET_NAME,
  DRAGNET_WEBHOOK,
  MODRULES_PATH,
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_CONFIGURATION_PATH,
  modRuleStatusPath,
  VALIDATING_WEBHOOK_CONFIGURATION,
  WEBHOOK_SERVICE_NAME,
} from './owned';

const ROOT = path.resolve(__dirname, '..');

/** The bundle's objects of one kind, by name. */
function named(kind: string): Map<string, JsonObject> {
  const objects = loadKustomization(path.join(ROOT, 'config/default')).filter((o) => o.kind === kind);
  return new Map(objects.map((o) => [String((o.metadata as JsonObject).name), o]));
}

describe('the names of the objects modrule owns', () => {
  it('are the names the manifests give them', () => {
    const mutating = named('MutatingWebhookConfiguration').get(MUTATING_WEBHOOK_CONFIGURATION);
    expect(mutating).toBeDefined();
    expect((mutating!.webhooks as JsonObject[]).map((w) => w.name)).toContain(DRAGNET_WEBHOOK);
    expect(named('ValidatingWebhookConfiguration').has(VALIDATING_WEBHOOK_CONFIGURATION)).toBe(true);
    expect(named('Service').has(WEBHOOK_SERVICE_NAME)).toBe(true);
    const crd = named('CustomResourceDefinition').get('modrules.api.kubemod.io')!;
    const spec = crd.spec as JsonObject;
    const served = (spec.versions as JsonObject[]).find((v) => v.storage === true)!;
    expect(MODRULES_PATH).toBe(`/apis/${String(spec.group)}/${String(served.name)}/modrules`);
  });

  it('name the Secret cert-manager writes the certificate to', () => {
    const documents = parseAllDocuments(
      readFileSync(path.join(ROOT, 'config/cert-manager/certificate.yaml'), 'utf8'),
    );
    const certificate = documents.map((d) => d.toJS() as JsonObject).find((o) => o?.kind === 'Certificate');
    expect((certificate?.spec as JsonObject).secretName).toBe(CERT_SECRET_NAME);
  });

  it('build API paths with each segment escaped', () => {
    expect(MUTATING_WEBHOOK_CONFIGURATION_PATH).toBe(
      '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration',
    );
    expect(modRuleStatusPath('team-a', 'a/b')).toBe(
      '/apis/api.kubemod.io/v1beta1/namespaces/team-a/modrules/a%2Fb/status',
    );
  });
});
