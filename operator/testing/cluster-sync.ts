import { silentLogger } from '../../util/logger';
import { RuleStore } from '../../store/rules';
import { createKubeClient } from '../../kube/kube';
import { StatusReporter } from '../status/reporter';
import { ClusterSync } from '../rules/sync';
import { FakeApiServer } from './fake-apiserver';

/** A fake API server and a ClusterSync (with its StatusReporter) feeding a fresh RuleStore. */
export interface ClusterSyncHarness {
  api: FakeApiServer;
  store: RuleStore;
  sync: ClusterSync;
  status: StatusReporter;
}

/** Registers beforeEach/afterEach that start a fresh harness per test and stop it; its fields are set per test. */
export function useClusterSync(): ClusterSyncHarness {
  const harness = {} as ClusterSyncHarness;
  beforeEach(async () => {
    harness.api = await FakeApiServer.start();
    harness.store = new RuleStore();
    const client = createKubeClient(harness.api.access());
    harness.status = new StatusReporter({ client, logger: silentLogger(), backoffMs: 10 });
    harness.sync = new ClusterSync({
      client,
      store: harness.store,
      logger: silentLogger(),
      status: harness.status,
      backoff: { initialMs: 10, maxMs: 50 },
    });
  });
  afterEach(async () => {
    await harness.sync.stop();
    await harness.status.stop();
    await harness.api.close();
  });
  return harness;
}
