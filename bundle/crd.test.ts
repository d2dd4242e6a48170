import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject, JsonValue, isJsonObject } from '../util/json';
import {
  AdmissionOperation,
  MAX_EXECUTION_TIER,
  MIN_EXECUTION_TIER,
  MODRULE_API_VERSION,
  MODRULE_KIND,
  MatchFor,
  MatchItem,
  ModRuleSpec,
  ModRuleType,
  PatchOperation,
  PatchOperationType,
} from '../rule/types';
import { crdValidator, toJsonSchema, untypedSchemaNodes } from './schema';

const ROOT = path.resolve(__dirname, '..');
const TESTDATA = path.join(__dirname, 'testdata');

function readDocs(file: string): JsonValue[] {
  return parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0].message}`);
    return d.toJS() as JsonValue;
  });
}

function yamlFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.ya?ml$/.test(e.name))
    .map((e) => path.join(e.parentPath ?? e.path, e.name))
    .sort();
}

const crd = readDocs(path.join(ROOT, 'config/crd/modrules.yaml'))[0] as JsonObject;
const spec = crd.spec as JsonObject;
const version = (spec.versions as JsonObject[])[0];
const schema = (version.schema as JsonObject).openAPIV3Schema as JsonObject;
const props = (node: JsonObject, ...keys: string[]): JsonObject => {
  let n = node;
  for (const k of keys) n = (n.properties as JsonObject)[k] as JsonObject;
  return n;
};
const specSchema = props(schema, 'spec');
const matchItemSchema = specSchema.properties && (props(specSchema, 'match').items as JsonObject);
const patchItemSchema = props(specSchema, 'patch').items as JsonObject;
const validate = crdValidator(crd);

describe('ModRule CRD: identity KubeMod users already have', () => {
  it('keeps group, version, kind, names and scope', () => {
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect((crd.metadata as JsonObject).name).toBe('modrules.api.kubemod.io');
    expect(spec.group).toBe('api.kubemod.io');
    expect(`${spec.group}/${version.name}`).toBe(MODRULE_API_VERSION);
    expect(spec.scope).toBe('Namespaced');
    expect(spec.names).toEqual({
      kind: MODRULE_KIND,
      listKind: 'ModRuleList',
      plural: 'modrules',
      singular: 'modrule',
      shortNames: ['mr'],
    });
    expect(spec.versions).toHaveLength(1);
    expect(version).toMatchObject({ name: 'v1beta1', served: true, storage: true });
  });

  it('has a status subresource and the printer columns', () => {
    expect(version.subresources).toEqual({ status: {} });
    expect(version.additionalPrinterColumns).toEqual([
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      { name: 'Tier', type: 'integer', jsonPath: '.spec.executionTier' },
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      {
        name: 'Served',
        type: 'string',
        description:
          'Native when the API server runs the rule as an admission policy, else Webhook; empty for an invalid rule.',
        jsonPath: '.status.servedBy',
      },
      {
        name: 'Status',
        type: 'string',
        description:
          "The Ready condition's message; for a rule in effect, its most important current problem first.",
        jsonPath: '.status.conditions[?(@.type=="Ready")].message',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ]);
  });
});

describe('ModRule CRD: the printer columns as the docs give them', () => {
  const columns = (version.additionalPrinterColumns as JsonObject[]).map((c) => String(c.name));

  it('docs/install.md has a row per column, in order', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'install.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### `kubectl get modrules`'), doc.indexOf('### With Helm'));
    const rows = [...section.matchAll(/^\| ([A-Z][a-z]+) \| /gm)].map((m) => m[1]).slice(1); // after the header
    expect(rows).toEqual(columns);
    expect(doc).toContain(`\`kubectl get modrules\` columns ${columns.join(', ')} (short name`);
  });

  it('the README names them', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`\`kubectl get modrules\` columns ${columns.join(', ')})`);
  });
});

describe('ModRule CRD: schema', () => {
  it('is structural: every node has a type', () => {
    expect(untypedSchemaNodes(schema)).toEqual([]);
  });

  // Record<keyof T, true> fails to compile when rule/types.ts gains or loses a field.
  const specFields: Record<keyof ModRuleSpec, true> = {
    type: true,
    admissionOperations: true,
    executionTier: true,
    match: true,
    patch: true,
    rejectMessage: true,
    targetNamespaceRegex: true,
    targetNamespaceSelector: true,
    references: true,
    enforcementAction: true,
    podControllers: true,
  };
  const matchFields: Record<keyof MatchItem, true> = {
    select: true,
    matchValue: true,
    matchValues: true,
    matchRegex: true,
    matchFor: true,
    negate: true,
  };
  const patchFields: Record<keyof PatchOperation, true> = { op: true, select: true, path: true, value: true };

  it.each([
    ['spec', specSchema, specFields],
    ['spec.match[]', matchItemSchema as JsonObject, matchFields],
    ['spec.patch[]', patchItemSchema, patchFields],
  ])('%s declares exactly the fields of rule/types.ts', (_name, node, fields) => {
    expect(Object.keys(node.properties as JsonObject).sort()).toEqual(Object.keys(fields).sort());
  });

  it('requires what KubeMod requires', () => {
    expect(schema.required).toEqual(['spec']);
    expect(specSchema.required).toEqual(['type', 'match']);
    expect((matchItemSchema as JsonObject).required).toEqual(['select']);
    expect(patchItemSchema.required).toEqual(['op', 'path']);
    expect(props(specSchema, 'match').minItems).toBe(1);
  });

  it('has the enums of rule/types.ts', () => {
    const types: Record<ModRuleType, true> = { Patch: true, Reject: true };
    const matchFor: Record<MatchFor, true> = { Any: true, All: true };
    const ops: Record<PatchOperationType, true> = { add: true, replace: true, remove: true };
    // KubeMod's enum; CONNECT exists in our type but no ModRule can ask for it.
    const admissionOps: AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];
    expect(props(specSchema, 'type').enum).toEqual(Object.keys(types));
    expect(props(matchItemSchema as JsonObject, 'matchFor').enum).toEqual(Object.keys(matchFor));
    expect(props(patchItemSchema, 'op').enum).toEqual(Object.keys(ops));
    expect((props(specSchema, 'admissionOperations').items as JsonObject).enum).toEqual(admissionOps);
  });

  it('bounds executionTier as KubeMod documents, default 0', () => {
    expect(props(specSchema, 'executionTier')).toMatchObject({
      type: 'integer',
      minimum: MIN_EXECUTION_TIER,
      maximum: MAX_EXECUTION_TIER,
      default: 0,
    });
  });

  it('keeps KubeMod nullable strings nullable', () => {
    expect(props(matchItemSchema as JsonObject, 'matchValue').nullable).toBe(true);
    expect(props(matchItemSchema as JsonObject, 'matchRegex').nullable).toBe(true);
    expect(props(patchItemSchema, 'value').nullable).toBe(true);
  });

  it('describes status.observedGeneration and Ready conditions', () => {
    const status = props(schema, 'status');
    expect(props(status, 'observedGeneration').type).toBe('integer');
    const conditions = props(status, 'conditions');
    expect(conditions['x-kubernetes-list-type']).toBe('map');
    expect(Object.keys((conditions.items as JsonObject).properties as JsonObject).sort()).toEqual(
      ['lastTransitionTime', 'message', 'observedGeneration', 'reason', 'status', 'type'].sort(),
    );
  });
});

describe('ModRule CRD: accepts every KubeMod example', () => {
  // Examples meant to be rejected (a folder named invalid) and files that are not YAML streams are skipped.
  const exampleRules = yamlFiles(path.join(ROOT, 'examples'))
    .filter((file) => !file.split(path.sep).includes('invalid'))
    .flatMap((file) => {
      try {
        return readDocs(file).map((doc) => ({ file, doc }));
      } catch {
        return [];
      }
    })
    .filter(({ doc }) => isJsonObject(doc) && doc.kind === MODRULE_KIND);
  const validRules = yamlFiles(path.join(TESTDATA, 'valid')).flatMap((file) =>
    readDocs(file).map((doc) => ({ file, doc })),
  );
  const cases = [...validRules, ...exampleRules].map(({ file, doc }) => [
    `${path.relative(ROOT, file)} ${(((doc as JsonObject).metadata as JsonObject) ?? {}).name}`,
    doc,
  ]);

  it('has the README examples as fixtures', () => {
    expect(validRules.length).toBeGreaterThanOrEqual(17);
  });

  it.each(cases)('accepts %s', (_name, doc) => {
    expect(doc).toMatchObject({ apiVersion: MODRULE_API_VERSION, kind: MODRULE_KIND });
    expect(validate(doc as JsonValue)).toEqual([]);
  });
});

describe('ModRule CRD: rejects bad rules for the right reason', () => {
  const files = yamlFiles(path.join(TESTDATA, 'invalid'));
  it('has invalid fixtures', () => {
    expect(files.length).toBeGreaterThanOrEqual(15);
  });

  it.each(files.map((f) => [path.basename(f), f]))('rejects %s', (_name, file) => {
    const expectLine = /^# expect: (\S+) (\S+)$/m.exec(fs.readFileSync(file, 'utf8'));
    if (!expectLine) throw new Error(`${file} has no "# expect: <path> <keyword>" line`);
    const [, where, keyword] = expectLine;
    const problems = validate(readDocs(file)[0]);
    expect(problems.map((p) => `${p.path || '(root)'} ${p.keyword}`)).toContain(`${where} ${keyword}`);
  });
});

describe('toJsonSchema', () => {
  it('turns nullable into a null type, also for enums', () => {
    expect(toJsonSchema({ type: 'string', nullable: true, enum: ['a'] })).toEqual({
      type: ['string', 'null'],
      enum: ['a', null],
    });
  });

  it('drops x-kubernetes hints and closes objects with properties', () => {
    expect(
      toJsonSchema({
        type: 'object',
        'x-kubernetes-map-type': 'atomic',
        properties: { nullable: { type: 'string' } },
      }),
    ).toEqual({ type: 'object', properties: { nullable: { type: 'string' } }, additionalProperties: false });
  });

  it('leaves open objects open', () => {
    expect(toJsonSchema({ type: 'object' })).toEqual({ type: 'object' });
    expect(
      toJsonSchema({ type: 'object', properties: {}, 'x-kubernetes-preserve-unknown-fields': true }),
    ).toEqual({ type: 'object', properties: {} });
  });
});
