import { JsonObject } from '../../util/json';
import { defaultDragnetMatch } from '../../native';
import { CONFIGURED_ANNOTATION, SCOPE_ANNOTATION } from '../../scope/ownership';
import { scopeHash, readScope } from '../../scope/entry';
import { configuredDragnetMatch } from './api';

// The policies' scope is the dragnet's net as installed, never the registration issue 18 narrows to the webhook's
// rules (which leaves out the rules served natively, and would take their own objects away from their policies).

const NET = defaultDragnetMatch();
const installed: JsonObject = {
  name: 'dragnet.kubemod.io',
  rules: NET.rules.map((r) => ({ ...r, operations: ['CREATE', 'UPDATE', 'DELETE'] })),
  namespaceSelector: NET.namespaceSelector,
};
const config = (hook: JsonObject, annotations: JsonObject = {}): JsonObject => ({
  metadata: { name: 'kubemod-mutating-webhook-configuration', annotations },
  webhooks: [{ name: 'mmodrule.kubemod.io', rules: [] }, hook],
});

describe('configuredDragnetMatch', () => {
  test('as installed (bundle.yaml): its resources and namespaces', () => {
    expect(configuredDragnetMatch(config(installed))).toEqual(NET);
  });

  test('narrowed by the operator: the configured net it stamped, not the narrowed registration', () => {
    const narrowed: JsonObject = {
      ...installed,
      rules: [
        {
          apiGroups: [''],
          apiVersions: ['*'],
          resources: ['configmaps'],
          operations: ['CREATE'],
          scope: 'Namespaced',
        },
      ],
    };
    const stamp = {
      hash: scopeHash(readScope(narrowed)),
      rulesVersion: '7',
      writer: '1-a',
      mode: 'rules',
    };
    const scope = configuredDragnetMatch(
      config(narrowed, {
        [SCOPE_ANNOTATION]: JSON.stringify(stamp),
        [CONFIGURED_ANNOTATION]: JSON.stringify({
          rules: installed.rules,
          namespaceSelector: installed.namespaceSelector,
          matchConditions: [],
        }),
      }),
    );
    expect(scope?.rules).toEqual(NET.rules);
    // Without the stamp the live registration is someone else's: it is the net.
    expect(configuredDragnetMatch(config(narrowed))?.rules).toEqual([
      { apiGroups: [''], apiVersions: ['*'], resources: ['configmaps'], scope: 'Namespaced' },
    ]);
  });

  test('no dragnet webhook: undefined', () => {
    expect(configuredDragnetMatch({ webhooks: [] })).toBeUndefined();
  });
});
