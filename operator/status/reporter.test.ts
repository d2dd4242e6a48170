import { JsonObject } from '../../util/json';
import { StatusReporter } from './reporter';
import { Facet } from './facets';
import { useClusterSync } from '../testing/cluster-sync';
import { eventually } from '../testing/eventually';
import { FakeApiServer } from '../testing/fake-apiserver';
import { labelRule } from '../testing/objects';

// The reporter composes each rule's status from its sources' facets and writes it only when it differs: against the
// in-process API server, which keeps the status subresource as a real one does.

const unknownKind: Facet = {
  condition: {
    type: 'UnknownKind',
    reason: 'KindNotServed',
    message: 'kind Deploymnet is not served. More',
  },
};

describe('StatusReporter: the one writer of a ModRule status', () => {
  const harness = useClusterSync();
  let api: FakeApiServer;
  let status: StatusReporter;
  beforeEach(() => ({ api, status } = harness));

  const conditions = () =>
    ((api.get('modrules', 'team', 'one')?.status as JsonObject | undefined)?.conditions ??
      []) as JsonObject[];
  const patches = () => api.requestsTo('PATCH', /modrules\/one\/status$/).length;

  it('writes a facet set and cleared later, keeps Ready and its lastTransitionTime, and writes nothing new twice', async () => {
    const rule = api.put('modrules', labelRule('team', 'one'));
    status.report(rule, []);
    await eventually(() => conditions().length === 1);
    const readySince = conditions()[0].lastTransitionTime;
    status.set('team', 'one', 'unknownKind', unknownKind);
    await eventually(() => conditions().length === 2);
    expect(conditions()).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'True',
        message: 'in effect, but kind Deploymnet is not served',
        lastTransitionTime: readySince,
      }),
      expect.objectContaining({ type: 'UnknownKind', status: 'True', reason: 'KindNotServed' }),
    ]);
    const before = patches();
    status.set('team', 'one', 'unknownKind', { ...unknownKind });
    status.report(api.get('modrules', 'team', 'one')!, []);
    await status.idle();
    expect(patches()).toBe(before);
    status.clear('team', 'one', 'unknownKind');
    await eventually(() => conditions()[1]?.status === 'False');
    expect(conditions()[0]).toMatchObject({ message: 'ModRule is valid and in effect' });
  });

  it('keeps a facet set before the rule is reported, and forgets it with the rule', async () => {
    status.set('team', 'one', 'unknownKind', unknownKind);
    await status.idle();
    expect(patches()).toBe(0);
    const rule = api.put('modrules', labelRule('team', 'one'));
    status.report(rule, []);
    await eventually(() => conditions().length === 2);
    status.forget('team', 'one');
    api.remove('modrules', 'team', 'one');
    const again = api.put('modrules', labelRule('team', 'one'));
    status.report(again, []);
    await eventually(() => conditions().length === 1);
  });
});
