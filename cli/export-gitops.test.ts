import { join } from 'node:path';
import { parse } from 'yaml';
import { JsonObject } from '../util/json';
import { FakeCluster } from '../operator/testing/fake-cluster';
import { EXIT } from './exit';
import { main } from './main';
import { runGitOpsExport } from './export-gitops';
import { runCommand } from './testing';

const ROOT = join(__dirname, '..');
const modrule = (args: string[]) => runCommand((a, io) => main(['export', ...a], io), args);

describe('modrule export argocd|flux', () => {
  it("argocd: an Application patch with spec.ignoreDifferences for the folder's rules; the sync option said", async () => {
    const r = await modrule(['argocd', '--rules', join(ROOT, 'examples', 'kubemod', 'first-modrule')]);
    expect(r.code).toBe(EXIT.ok);
    expect(parse(r.stdout)).toEqual({
      spec: {
        ignoreDifferences: [
          {
            group: 'apps',
            kind: 'Deployment',
            jsonPointers: ['/metadata/annotations/my-annotation', '/spec/template/spec/securityContext'],
          },
        ],
      },
    });
    expect(r.stderr).toContain('RespectIgnoreDifferences=true');
  });

  it('flux: a Kustomization (default) or HelmRelease patch; json names the rules per kind', async () => {
    const rules = join(ROOT, 'examples', 'kubemod', 'select-placeholders');
    const k = parse((await modrule(['flux', '--rules', rules])).stdout) as JsonObject;
    expect(k).toEqual({
      spec: {
        ignore: [
          { paths: ['/spec/template/spec/containers'], target: { group: 'apps', kind: 'Deployment' } },
        ],
      },
    });
    const h = parse(
      (await modrule(['flux', '--rules', rules, '--flux-target', 'helmrelease'])).stdout,
    ) as JsonObject;
    expect(h).toEqual({
      spec: { driftDetection: { mode: 'enabled', ignore: (k.spec as JsonObject).ignore } },
    });
    const json = JSON.parse((await modrule(['flux', '--rules', rules, '-o', 'json'])).stdout) as JsonObject;
    expect(json.writers).toEqual([
      { group: 'apps', kind: 'Deployment', rules: ['default/select-placeholders'] },
    ]);
  });

  it('without --rules: the ModRules in force in the cluster, kinds mapped by its discovery', async () => {
    const c = new FakeCluster();
    c.put({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'team', namespace: 'shop' },
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
        patch: [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
      },
    });
    const r = await runCommand((a, io) => runGitOpsExport('argocd', a, io, { client: c }), []);
    expect(parse(r.stdout)).toEqual({
      spec: { ignoreDifferences: [{ kind: 'ConfigMap', jsonPointers: ['/metadata/labels/team'] }] },
    });
  });

  it('bad usage names the flag', async () => {
    await expect(modrule(['flux', '--rules', ROOT, '--flux-target', 'gitrepository'])).resolves.toMatchObject(
      {
        code: EXIT.error,
        stderr: expect.stringContaining('--flux-target must be kustomization or helmrelease'),
      },
    );
  });
});
