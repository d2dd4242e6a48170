import { JsonObject } from '../../util/json';
import { HARNESS_MANAGER, othersEntries, withoutOthersFields } from './native-writers';

// managedFields as a 1.37 API server wrote them for a Pod the harness created and the scheduler could not place.
const scheduled = {
  manager: 'kube-scheduler',
  operation: 'Update',
  subresource: 'status',
  fieldsV1: {
    'f:status': {
      'f:conditions': {
        '.': {},
        'k:{"type":"PodScheduled"}': {
          '.': {},
          'f:message': {},
          'f:reason': {},
          'f:status': {},
          'f:type': {},
        },
      },
    },
  },
};
const created = {
  manager: HARNESS_MANAGER,
  operation: 'Update',
  fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {}, 'f:name': {} } } } },
};

const pod = (conditions: JsonObject[] | null, image = 'x', managedFields: JsonObject[] = [created]) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', labels: { team: 'a' }, managedFields },
  spec: { containers: [{ name: 'c', image }] },
  status: { phase: 'Pending', ...(conditions ? { conditions } : {}) },
});
const unschedulable = { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'no nodes' };
const body = (o: JsonObject) => ({ ...o, metadata: { ...(o.metadata as JsonObject), managedFields: null } });

describe('withoutOthersFields', () => {
  it("leaves out the scheduler's condition: the same Pod with and without it compares equal", () => {
    const written = withoutOthersFields(pod([unschedulable], 'x', [scheduled, created]));
    expect(body(written)).toEqual(body(pod(null)));
  });

  it("keeps what the harness's writes and admission set: a different image or label still differs", () => {
    const a = withoutOthersFields(pod([unschedulable], 'x', [scheduled, created]));
    const b = withoutOthersFields(pod([unschedulable], 'y', [scheduled, created]));
    expect(body(a)).not.toEqual(body(b));
    const labelled = pod(null);
    labelled.metadata.labels.team = 'b'; // a field no manager lists (a mutation on create): compared
    expect(body(withoutOthersFields(labelled))).not.toEqual(body(withoutOthersFields(pod(null))));
  });

  it("keeps list items and members of someone else's map that another manager does not own", () => {
    const other = { type: 'Ready', status: 'True' };
    const written = withoutOthersFields(pod([unschedulable, other], 'x', [scheduled, created]));
    expect((written.status as JsonObject).conditions).toEqual([other]);
  });

  it('removes set items (v:) and members named by a leaf, and changes nothing without other managers', () => {
    const finalizers = {
      manager: 'kube-controller-manager',
      operation: 'Update',
      fieldsV1: { 'f:metadata': { 'f:finalizers': { 'v:"a/b"': {} }, 'f:labels': { 'f:team': {} } } },
    };
    const o = {
      metadata: { finalizers: ['a/b', 'c/d'], labels: { team: 'a' }, managedFields: [finalizers] },
    };
    expect(withoutOthersFields(o).metadata).toEqual({
      finalizers: ['c/d'],
      labels: {},
      managedFields: [finalizers],
    });
    const alone = pod([unschedulable]);
    expect(withoutOthersFields(alone)).toBe(alone);
  });

  it("strips one side by the other side's entries: a field another writer set on one side only goes from both", () => {
    const statusWriter = {
      manager: 'kube-controller-manager',
      operation: 'Update',
      subresource: 'status',
      fieldsV1: { 'f:status': { 'f:replicas': {} } },
    };
    const web = { status: { replicas: 0 }, metadata: { managedFields: [statusWriter] } };
    const native = { status: { replicas: 0 }, metadata: { managedFields: [] } };
    const both = [...othersEntries(web), ...othersEntries(native)];
    expect(withoutOthersFields(native, both).status).toEqual(withoutOthersFields(web, both).status);
    expect(withoutOthersFields(native).status).not.toEqual(withoutOthersFields(web).status);
  });
});
