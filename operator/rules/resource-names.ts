import { ListableResource, resourceName } from '../../audit/types';

// Resources named as kubectl names them on its command line: `deployments`, `deployment`, `Deployment`, `deploy`,
// `deployments.apps`, `deployments.v1.apps`.

/** The resource `type` names among those discovery found; throws an Error saying what it cannot resolve and why. */
export function resolveResource(resources: readonly ListableResource[], type: string): ListableResource {
  const [name, ...rest] = type.split('.');
  const qualifier = rest.join('.');
  const lower = name.toLowerCase();
  const named = resources.filter(
    (r) =>
      !r.resource.includes('/') &&
      (r.resource === lower ||
        r.singularName === lower ||
        r.kind.toLowerCase() === lower ||
        (r.shortNames ?? []).includes(lower)),
  );
  // `deployments.apps` or `deployments.v1.apps`
  const found =
    qualifier === ''
      ? named
      : named.filter((r) => r.group === qualifier || `${r.version}.${r.group}` === qualifier);
  if (found.length === 0) throw new Error(`the server doesn't have a resource type "${type}"`);
  if (found.length === 1) return found[0];
  // As kubectl: the core group's resource when it has one (events, not events.events.k8s.io).
  const core = found.filter((r) => r.group === '');
  if (core.length === 1) return core[0];
  const names = [...new Set(found.map(resourceName))].sort();
  throw new Error(`"${type}" names several resources (${names.join(', ')}): give RESOURCE.GROUP`);
}
