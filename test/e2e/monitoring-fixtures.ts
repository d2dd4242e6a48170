import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';
import { KubeClient } from '../../kube/kube';
import { MODRULES_PATH } from '../../kube/owned';

// Objects and a client for test/e2e/monitoring.e2e.ts.

const ROOT = join(__dirname, '..', '..');

/** The objects of a YAML file of the repository. */
export const yamlFile = (relative: string): JsonObject[] =>
  parseAllDocuments(readFileSync(join(ROOT, relative), 'utf8'))
    .map((d) => d.toJS() as unknown)
    .filter(isJsonObject);

/** A ModRule. */
export const rule = (ns: string, name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace: ns },
  spec,
});

/** Match criteria: ConfigMaps labelled `label: "true"`. */
export const onLabel = (label: string) => [
  { select: '$.kind', matchValue: 'ConfigMap' },
  { select: `$.metadata.labels["${label}"]`, matchValue: 'true' },
];

/** A ConfigMap labelled `label: "true"`. */
export const configMap = (name: string, label: string): JsonObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels: { [label]: 'true' } },
});

/** A client whose list of ModRules waits for release(): an operator on it cannot load its rules until then. */
export function gateModRuleList(client: KubeClient): { client: KubeClient; release: () => void } {
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  return {
    release: () => release(),
    client: {
      request: async (method, path, options) => {
        if (method === 'GET' && path === MODRULES_PATH) await released;
        return client.request(method, path, options);
      },
      watch: (path, query, on) => client.watch(path, query, on),
    },
  };
}
