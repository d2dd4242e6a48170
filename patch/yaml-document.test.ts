import { cloneJson, JsonObject, JsonValue } from '../util/json';
import { splitYamlStream } from '../util/yaml-stream';
import { PatchError } from './operation';
import { applyPatchToDocument, rewriteDocument } from './yaml-document';

const DEPLOYMENT = `---
# Source: storefront/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop # the release's name
spec:
  template:
    spec:
      securityContext:
        {}
      containers:
        - name: nginx
          image: "docker.io/library/nginx:1.25.3"
          args: ["--port", "8080"]
        # Prometheus metrics from nginx's stub_status.
        - name: exporter
          image: quay.io/prometheus/nginx-exporter:1.1.0
# end of the deployment
`;

const source = (text: string) => splitYamlStream(text)[0];

function edited(text: string, change: (v: JsonObject) => void): { text: string; value: JsonValue } {
  const doc = source(text);
  const value = cloneJson(doc.value) as JsonObject;
  change(value);
  return { text: rewriteDocument(doc, value), value };
}

const podSpec = (v: JsonObject): JsonObject =>
  ((v.spec as JsonObject).template as JsonObject).spec as JsonObject;

describe('rewriteDocument', () => {
  it('gives the source back, byte for byte, when the value is the same', () => {
    const doc = source(DEPLOYMENT);
    expect(rewriteDocument(doc, cloneJson(doc.value))).toBe(DEPLOYMENT);
  });

  it('edits in place: every comment, the key order and the quoting of untouched values stay', () => {
    const out = edited(DEPLOYMENT, (v) => {
      (podSpec(v).securityContext as JsonObject).runAsNonRoot = true;
      (podSpec(v).containers as JsonObject[])[0].image = 'registry.internal/library/nginx:1.25.3';
      (v.metadata as JsonObject).annotations = { 'example.com/yes': 'yes', port: '8080' };
    });
    expect(out.text).toBe(`---
# Source: storefront/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop # the release's name
  annotations:
    example.com/yes: "yes"
    port: "8080"
spec:
  template:
    spec:
      securityContext:
        runAsNonRoot: true
      containers:
        - name: nginx
          image: registry.internal/library/nginx:1.25.3
          args: [ "--port", "8080" ]
        # Prometheus metrics from nginx's stub_status.
        - name: exporter
          image: quay.io/prometheus/nginx-exporter:1.1.0

# end of the deployment
`);
    expect(splitYamlStream(out.text)[0].value).toEqual(out.value);
  });

  it('removes members and list items, appends items', () => {
    const out = edited(DEPLOYMENT, (v) => {
      const containers = podSpec(v).containers as JsonObject[];
      containers.splice(0, 1);
      containers.push({ name: 'sidecar', image: 'busybox' });
      delete podSpec(v).securityContext;
    });
    expect(out.text).toContain("# Prometheus metrics from nginx's stub_status.\n");
    expect(out.text).not.toContain('securityContext');
    expect(splitYamlStream(out.text)[0].value).toEqual(out.value);
  });

  it('falls back to writing the value afresh under the leading comments when the tree cannot take the edit', () => {
    // An alias shares one node between two places: editing it in the tree would change both.
    const text = '---\n# Source: x.yaml\nkind: ConfigMap\ndata: &d\n  a: "1"\ncopy: *d\n';
    const out = edited(text, (v) => {
      (v.data as JsonObject).a = '2';
    });
    expect(out.text).toBe('---\n# Source: x.yaml\nkind: ConfigMap\ndata:\n  a: "2"\ncopy:\n  a: "1"\n');
  });
});

describe('applyPatchToDocument', () => {
  it('refuses what it cannot do on a tree, naming the operation', () => {
    const doc = source('a: [1]\n').document;
    expect(() => applyPatchToDocument(doc, [{ op: 'move', from: '/a', path: '/b' }])).toThrow(PatchError);
    expect(() => applyPatchToDocument(doc, [{ op: 'replace', path: '', value: 1 }])).toThrow(
      /whole document/,
    );
    expect(() => applyPatchToDocument(doc, [{ op: 'remove', path: '/a/3' }])).toThrow(/index 3 out of range/);
    expect(() => applyPatchToDocument(doc, [{ op: 'replace', path: '/b', value: 1 }])).toThrow(/no member b/);
    expect(() => applyPatchToDocument(doc, [{ op: 'add', path: '/b/c', value: 1 }])).toThrow(
      /no collection at \/b\/c/,
    );
  });
});
