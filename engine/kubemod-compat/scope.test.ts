// KubeMod-compatibility suite, rule scope: own namespace, cluster namespace, targetNamespaceRegex: each case mirrors a
// behaviour pinned down by KubeMod's own tests or source (kubemod/kubemod core/modrulestore.go
// getMatchingModRuleStoreItems). The rules and objects here are our own; the comment on each case names what it
// mirrors.
import { JsonObject } from '../../util/json';
import { AdmissionOutcome } from '../admit';
import { deployment, isDeployment, modrule, namespaceObj, run, withChanges } from './testing';

describe('KubeMod rule scope', () => {
  const addLabel = (name: string, ns: string, extra = ''): string =>
    modrule(
      name,
      `type: Patch\n${extra}${isDeployment}\npatch:\n  - op: add\n    path: /metadata/labels/by-${name}\n    value: x`,
      ns,
    );
  const nsPatch = (name: string, extra = ''): string =>
    modrule(
      name,
      `type: Patch\n${extra}match:\n  - select: '$.kind'\n    matchValue: Namespace\npatch:\n  - op: add\n    path: /metadata/labels/by-${name}\n    value: x`,
      'kubemod-system',
    );
  const inTeam = (ns: string): JsonObject =>
    withChanges(deployment, (d) => {
      (d.metadata as JsonObject).namespace = ns;
    });
  const applied = (out: AdmissionOutcome): string[] => out.patched.map((r) => r.name).sort();

  const cases: Array<{
    name: string;
    rules: string[];
    object: JsonObject;
    ns: string | null;
    want: string[];
  }> = [
    // A rule applies in its own namespace only.
    {
      name: 'own namespace',
      rules: [addLabel('own', 'default'), addLabel('other', 'team-a')],
      object: deployment,
      ns: 'default',
      want: ['own'],
    },
    // patch-13: cluster-namespace rule with a matching targetNamespaceRegex.
    {
      name: 'targetNamespaceRegex matches',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: "team-.*"\n')],
      object: inTeam('team-a'),
      ns: 'team-a',
      want: ['wide'],
    },
    // regexp.Match is unanchored.
    {
      name: 'targetNamespaceRegex is unanchored',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: "team"\n')],
      object: inTeam('my-team-a'),
      ns: 'my-team-a',
      want: ['wide'],
    },
    {
      name: 'targetNamespaceRegex does not match',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: "^team-"\n')],
      object: inTeam('my-team-a'),
      ns: 'my-team-a',
      want: [],
    },
    // patch-14: missing targetNamespaceRegex => not applied to namespaced objects elsewhere.
    {
      name: 'no targetNamespaceRegex',
      rules: [addLabel('wide', 'kubemod-system')],
      object: deployment,
      ns: 'default',
      want: [],
    },
    // patch-15: empty targetNamespaceRegex counts as absent.
    {
      name: 'empty targetNamespaceRegex',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: ""\n')],
      object: deployment,
      ns: 'default',
      want: [],
    },
    // Only cluster-namespace rules are consulted for targetNamespaceRegex; elsewhere it has no effect.
    {
      name: 'targetNamespaceRegex outside the cluster namespace',
      rules: [addLabel('local', 'default', 'targetNamespaceRegex: ".*"\n')],
      object: inTeam('team-a'),
      ns: 'team-a',
      want: [],
    },
    // Own-namespace rules also apply in the cluster namespace itself (modRuleListMap[namespace]).
    {
      name: 'rules of the cluster namespace for objects in it',
      rules: [addLabel('sys', 'kubemod-system')],
      object: inTeam('kubemod-system'),
      ns: 'kubemod-system',
      want: ['sys'],
    },
    // Cluster-namespace rules without a regex apply to cluster-scoped objects.
    {
      name: 'cluster-scoped object, no regex',
      rules: [nsPatch('ns-rule')],
      object: namespaceObj,
      ns: null,
      want: ['ns-rule'],
    },
    // ... and those whose regex matches "" (".*").
    {
      name: 'cluster-scoped object, regex .*',
      rules: [nsPatch('ns-rule', 'targetNamespaceRegex: ".*"\n')],
      object: namespaceObj,
      ns: null,
      want: ['ns-rule'],
    },
    {
      name: 'cluster-scoped object, regex not matching ""',
      rules: [nsPatch('ns-rule', 'targetNamespaceRegex: "^team-"\n')],
      object: namespaceObj,
      ns: null,
      want: [],
    },
    // dragnetwebhook.go: a Namespace's UPDATE names itself as namespace; it is still cluster-scoped.
    {
      name: 'Namespace object with its own name as namespace',
      rules: [nsPatch('ns-rule'), addLabel('own', 'default')],
      object: namespaceObj,
      ns: 'default',
      want: ['ns-rule'],
    },
    // Rules in other namespaces never apply to cluster-scoped objects.
    {
      name: 'cluster-scoped object ignores namespaced rules',
      rules: [
        modrule(
          'n',
          `type: Patch\nmatch:\n  - select: '$.kind'\npatch:\n  - op: add\n    path: /metadata/labels/n\n    value: x`,
          'default',
        ),
      ],
      object: namespaceObj,
      ns: null,
      want: [],
    },
  ];

  test.each(cases)('$name', ({ rules, object, ns, want }) => {
    expect(applied(run(rules, object, { namespace: ns, operation: 'UPDATE', oldObject: object }))).toEqual(
      want,
    );
  });
});
