import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import { parse } from 'yaml';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { parseManifestObjects } from '../util/yaml';
import { parsePointer } from '../patch/pointer';
import { createPatch } from '../patch/diff';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { ResourceCatalog } from '../scope/catalog';
import { RuleStore } from '../store/rules';
import { admit } from '../engine/admit';
import { toJsonSchema } from '../bundle/schema';
import { IgnoreEntry, ignoredPaths } from './paths';
import { argoIgnoreDifferences, fluxIgnoreRules, ignorePatch } from './render';

// What `modrule export argocd|flux` prints: shaped as Argo CD's and Flux's CRDs say (their schemas, excerpted in
// testdata/ from the tools' repositories), and covering every path the rules actually change on the example objects.

const ROOT = join(__dirname, '..');
const catalog = ResourceCatalog.builtin();

function schema(file: string): (value: JsonValue) => string[] {
  const { $comment: _origin, ...raw } = JSON.parse(
    readFileSync(join(__dirname, 'testdata', file), 'utf8'),
  ) as JsonObject;
  const validate = new Ajv({ allErrors: true, strict: false }).compile(toJsonSchema(raw) as object);
  return (value) =>
    validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

const compile = (o: JsonObject): CompiledRule => {
  const r = analyzeModRule(o).rule;
  if (!r) throw new Error(`invalid rule ${JSON.stringify(o)}`);
  return r;
};

/** The README example suites: their rules and input objects. */
function suites(): Array<{ name: string; rules: JsonObject[]; objects: JsonObject[] }> {
  const dir = join(ROOT, 'examples', 'kubemod');
  return readdirSync(dir).map((name) => {
    const suite = parse(readFileSync(join(dir, name, 'modrule-test.yaml'), 'utf8')) as JsonObject;
    const read = (files: unknown) =>
      ((files ?? []) as Array<string | JsonObject>).flatMap((f) =>
        parseManifestObjects(
          readFileSync(join(dir, name, typeof f === 'string' ? f : String(f.file)), 'utf8'),
        ),
      );
    return { name, rules: read(suite.rules), objects: read(suite.resources) };
  });
}
const allRules = () =>
  suites().flatMap((s) =>
    s.rules.map((r) => compile({ ...r, metadata: { namespace: 'default', ...(r.metadata as JsonObject) } })),
  );

describe('ignoredPaths: the output has the shape the tools document', () => {
  const { entries } = ignoredPaths(allRules(), { catalog, recordPatchedBy: true });

  it('is not empty (the examples patch Deployments, Pods, PersistentVolumeClaims)', () => {
    expect(entries.map((e) => e.target.kind)).toEqual(
      expect.arrayContaining(['Deployment', 'Pod', 'PersistentVolumeClaim']),
    );
  });

  it('Argo CD: Application spec.ignoreDifferences (argo-cd application-crd.yaml)', () => {
    const patch = ignorePatch('argocd', entries) as { spec: { ignoreDifferences: JsonValue } };
    expect(schema('argocd-application-ignoredifferences.json')(patch.spec.ignoreDifferences)).toEqual([]);
  });

  it('Flux: Kustomization spec.ignore (kustomize-controller v1) and HelmRelease spec.driftDetection (helm-controller v2)', () => {
    const k = ignorePatch('kustomization', entries) as { spec: { ignore: JsonValue } };
    expect(schema('flux-kustomization-ignore.json')(k.spec.ignore)).toEqual([]);
    const h = ignorePatch('helmrelease', entries) as { spec: { driftDetection: JsonValue } };
    expect(schema('flux-helmrelease-driftdetection.json')(h.spec.driftDetection)).toEqual([]);
    expect(h.spec.driftDetection).toMatchObject({ mode: 'enabled' });
  });

  it('a wrong field name or type is caught by the same schemas (the check can fail)', () => {
    expect(
      schema('argocd-application-ignoredifferences.json')([{ kind: 'Pod', jsonPointer: ['/x'] }]),
    ).not.toEqual([]);
    expect(schema('flux-kustomization-ignore.json')([{ paths: '/x' }])).not.toEqual([]);
    expect(schema('flux-helmrelease-driftdetection.json')({ mode: 'on', ignore: [] })).not.toEqual([]);
  });

  it('every path is a valid JSON pointer, every jq expression starts at the object', () => {
    for (const e of entries) {
      for (const p of [...e.jsonPointers, ...e.pointers]) expect(() => parsePointer(p)).not.toThrow();
      for (const q of e.jqPathExpressions) expect(q).toMatch(/^\.[A-Za-z[]/);
    }
  });
});

/** Whether an Argo CD entry ignores a changed path: a jsonPointer at or above it, or a jq path over it. */
function argoIgnores(entry: IgnoreEntry, path: string, object: JsonObject): boolean {
  if (entry.jsonPointers.some((p) => path === p || path.startsWith(`${p}/`))) return true;
  const tokens = parsePointer(path);
  return entry.jqPathExpressions.some((q) => {
    const m = /^(.*?)\[\] \| select\(\.name == (".*")\)$/.exec(q);
    const steps = [...(m ? m[1] : q).matchAll(/\.([A-Za-z_][A-Za-z0-9_]*)|\["([^"]*)"\]|(\[\])/g)].map((x) =>
      x[3] ? '*' : (x[1] ?? x[2]),
    );
    if (m) steps.push('*');
    if (steps.length > tokens.length || !steps.every((s, i) => s === '*' || s === tokens[i])) return false;
    if (!m) return true;
    // The element selected by name: its name in the patched object.
    let at: JsonValue = object;
    for (const t of tokens.slice(0, steps.length))
      at = isJsonObject(at) ? at[t] : Array.isArray(at) ? at[Number(t)] : null;
    return isJsonObject(at) && JSON.stringify(at.name) === m[2];
  });
}

/** The paths of a value added at `path`: a map added whole (no annotations before) is its keys. */
function leaves(path: string, value: JsonValue): string[] {
  if (!isJsonObject(value) || Object.keys(value).length === 0) return [path];
  return Object.entries(value).flatMap(([k, v]) =>
    leaves(`${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, v),
  );
}

describe('ignoredPaths: covers what the rules change', () => {
  it.each(suites().map((s) => [s.name, s]))(
    '%s: every path the rules change is ignored, by both tools',
    (_n, s) => {
      const store = new RuleStore();
      const rules = s.rules.map((r) => ({
        ...r,
        metadata: { namespace: 'default', ...(r.metadata as JsonObject) },
      }));
      expect(store.replaceRules(rules)).toEqual([]);
      const { entries } = ignoredPaths(store.allRules(), { catalog });
      for (const object of s.objects) {
        const namespace = String((object.metadata as JsonObject).namespace ?? 'default');
        const out = admit({ operation: 'CREATE', object, oldObject: null, namespace }, store.snapshot());
        if (!out.allowed || !out.object) continue;
        const changed = createPatch(object, out.object)
          .flatMap((o) => ('value' in o ? leaves(o.path, o.value) : [o.path]))
          .filter(
            (p) => !p.startsWith('/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration'),
          );
        const group = String(object.apiVersion).includes('/') ? String(object.apiVersion).split('/')[0] : '';
        const mine = entries.filter(
          (e) => ['*', object.kind].includes(e.target.kind) && ['*', group].includes(e.target.group),
        );
        for (const path of changed) {
          expect({ path, argo: mine.some((e) => argoIgnores(e, path, out.object!)) }).toEqual({
            path,
            argo: true,
          });
          const flux = mine.some((e) => e.pointers.some((p) => path === p || path.startsWith(`${p}/`)));
          expect({ path, flux }).toEqual({ path, flux: true });
        }
      }
    },
  );
});

describe('ignoredPaths: details', () => {
  const rule = (name: string, spec: JsonObject) =>
    compile({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name, namespace: 'shop' },
      spec,
    });

  it('groups from the catalog or an apiVersion criterion; the core group left out; an appended element by name', () => {
    const { entries } = ignoredPaths(
      [
        rule('sidecar', {
          type: 'Patch',
          match: [{ select: '$.kind', matchValue: 'Deployment' }],
          patch: [{ op: 'add', path: '/spec/template/spec/containers/-', value: 'name: log\nimage: x' }],
        }),
        rule('svc', {
          type: 'Patch',
          match: [{ select: '$.kind', matchValue: 'Service' }],
          patch: [{ op: 'add', path: '/metadata/annotations/a~1b', value: 'x' }],
        }),
        rule('crd', {
          type: 'Patch',
          match: [
            { select: '$.kind', matchValue: 'Widget' },
            { select: '$.apiVersion', matchValue: 'example.com/v1' },
          ],
          patch: [{ op: 'remove', path: '/spec/size' }],
        }),
        rule('dry', {
          type: 'Patch',
          enforcementAction: 'DryRun',
          match: [{ select: '$.kind', matchValue: 'Service' }],
          patch: [{ op: 'add', path: '/spec/type', value: 'ClusterIP' }],
        }),
      ],
      { catalog },
    );
    expect(argoIgnoreDifferences(entries)).toEqual([
      { kind: 'Service', jsonPointers: ['/metadata/annotations/a~1b'] },
      {
        group: 'apps',
        kind: 'Deployment',
        jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "log")'],
      },
      { group: 'example.com', kind: 'Widget', jsonPointers: ['/spec/size'] },
    ]);
    expect(fluxIgnoreRules(entries)).toEqual([
      { paths: ['/metadata/annotations/a~1b'], target: { kind: 'Service' } },
      { paths: ['/spec/template/spec/containers'], target: { group: 'apps', kind: 'Deployment' } },
      { paths: ['/spec/size'], target: { group: 'example.com', kind: 'Widget' } },
    ]);
  });

  it('leaves out DryRun rules with a note, and adds the record annotation when asked', () => {
    const dry = rule('dry', {
      type: 'Patch',
      enforcementAction: 'DryRun',
      match: [{ select: '$.kind', matchValue: 'Pod' }],
      patch: [{ op: 'add', path: '/metadata/labels/x', value: 'y' }],
    });
    const enforced = rule('on', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Pod' }],
      patch: [{ op: 'add', path: '/metadata/labels/y', value: 'z' }],
    });
    const { entries, notes } = ignoredPaths([dry, enforced], { catalog, recordPatchedBy: true });
    expect(notes).toEqual([
      'shop/dry is in DryRun: it patches nothing yet (export again once it is enforced)',
    ]);
    expect(entries[0].jsonPointers).toEqual([
      '/metadata/annotations/modrule.io~1patched-by',
      '/metadata/labels/y',
    ]);
  });
});
