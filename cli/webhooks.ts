import { isJsonObject, JsonObject } from '../util/json';
import { metadataOf } from '../util/meta';
import { stringifyManifests } from '../util/yaml';
import { parseCommand } from './args';
import { warnDuplicateKeys } from './duplicates';
import { EXIT, exitHelp } from './exit';
import { Command, displayName, fileOrStdin, UsageError } from './io';
import { loadPaths } from './load';

const USAGE = `usage: modrule webhooks --url https://HOST:PORT [-f|--file PATH|-]

Prints the webhook configurations of PATH (bundle.yaml, the chart's output, or kubectl get ... -o yaml) with
every webhook calling the operator at URL instead of the Service: the operator run out of the cluster
(docs/install.md). Each webhook keeps the path its Service reference names (a webhook already called by URL
keeps its path and takes URL's host and port), so the wiring follows the configuration, whatever its order.

  bin/modrule webhooks --url "https://$HOST:$PORT" -f bundle.yaml | kubectl apply -f -

  --url URL             https://HOST:PORT where the API server reaches the operator
  -f, --file PATH|-     the webhook configurations (other objects are left out); - or no --file reads
                        standard input
  -h, --help            show this help

${exitHelp(undefined, 'no webhook configuration in the input, a URL that is not https://HOST[:PORT]')}`;

const KINDS = new Set(['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']);

// What the API server and kubectl set: left out, so the output applies (or replaces) as a user's own file would.
const SERVER_FIELDS = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
];
const DROPPED_ANNOTATIONS = [
  'kubectl.kubernetes.io/last-applied-configuration',
  // cert-manager would put its CA back over the one the operator makes for itself out of the cluster.
  'cert-manager.io/inject-ca-from',
];

/** `https://HOST[:PORT]` with no path, query or user; throws UsageError otherwise. */
export function webhookBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be https://HOST:PORT, got "${url}"`);
  }
  if (parsed.protocol !== 'https:')
    throw new UsageError(`--url must be https:// (the API server calls webhooks over TLS), got "${url}"`);
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password)
    throw new UsageError(
      `--url must be https://HOST:PORT alone (each webhook keeps its own path), got "${url}"`,
    );
  return parsed.origin;
}

/** One webhook's clientConfig calling `base`: the path of its Service reference, or of the URL it has. */
function clientConfigAt(clientConfig: JsonObject, base: string): JsonObject {
  const { service, url, ...rest } = clientConfig;
  const path = isJsonObject(service)
    ? typeof service.path === 'string'
      ? service.path
      : '/'
    : typeof url === 'string'
      ? new URL(url).pathname
      : '/';
  return { ...rest, url: `${base}${path}` };
}

/** A webhook configuration whose every webhook calls `base` (caBundle and everything else kept). */
export function callingUrl(configuration: JsonObject, base: string): JsonObject {
  const meta = { ...metadataOf(configuration) };
  for (const field of SERVER_FIELDS) delete meta[field];
  if (isJsonObject(meta.annotations)) {
    const annotations = { ...meta.annotations };
    for (const a of DROPPED_ANNOTATIONS) delete annotations[a];
    if (Object.keys(annotations).length > 0) meta.annotations = annotations;
    else delete meta.annotations;
  }
  const hooks = Array.isArray(configuration.webhooks) ? configuration.webhooks : [];
  const webhooks = hooks.map((h) =>
    isJsonObject(h)
      ? { ...h, clientConfig: clientConfigAt(isJsonObject(h.clientConfig) ? h.clientConfig : {}, base) }
      : h,
  );
  const { status: _status, ...rest } = configuration;
  return { ...rest, metadata: meta, webhooks };
}

/** `modrule webhooks`: the webhook configurations wired to an operator out of the cluster. */
export const run: Command = async (args, io) => {
  const parsed = parseCommand(args, {
    options: { url: { type: 'string' }, file: { type: 'string', short: 'f' } },
    usage: USAGE,
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  if (parsed.values.url === undefined) throw new UsageError(`--url is required\n\n${USAGE}`);
  const base = webhookBase(parsed.values.url);
  const file = fileOrStdin(parsed.values.file, io);
  const loaded = await loadPaths([file], io);
  warnDuplicateKeys(loaded, io);
  const configurations = loaded.map((l) => l.object).filter((o) => KINDS.has(String(o.kind)));
  if (configurations.length === 0)
    throw new UsageError(
      `${displayName(file)}: no MutatingWebhookConfiguration or ValidatingWebhookConfiguration`,
    );
  io.stdout(stringifyManifests(configurations.map((c) => callingUrl(c, base))));
  return EXIT.ok;
};
