import { JsonObject } from '../../util/json';
import { World } from './world';

/** One ModRule write a user made: what it asked for, and how it ended. */
export interface RuleWrite {
  user: number;
  op: 'create' | 'update' | 'delete';
  name: string;
  namespace: string;
  kind: string;
  edition: number;
  start: number;
  end?: number;
  ok?: boolean;
  uid?: string;
  generation?: number;
  /** What the writer was told about the rule's being in force (unverified, peers not told, the wide net). */
  caveat?: string;
}

/** A broken invariant: which, and what happened. */
export interface Violation {
  invariant: 'object-unpatched' | 'narrowed-away' | 'write-storm' | 'hang' | 'simulation-error';
  message: string;
}

/** The ModRule a user writes: it labels objects of one kind with its name and edition. */
export function ruleSpec(name: string, kind: string, edition: number): JsonObject {
  return {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: kind }],
    patch: [{ op: 'add', path: `/metadata/labels/sim-${name}`, value: `"e${edition}"` }],
  };
}

/** The warnings that tell a rule's writer it may not be in force everywhere yet (and why). */
const CAVEAT = /could not be shown to use it|could not be told|fell back to the configured/;

const KINDS = ['ConfigMap', 'Secret', 'Service'];
const NAMESPACES = ['team-a', 'team-b'];

/**
 * The users: each in turn creates, edits, moves (to another kind) or deletes one of a few shared rules through a
 * random API server, and right after a create or edit returned writes an object the rule must patch, through a
 * random API server. Every write is recorded: the invariants are judged on that record.
 */
export class Users {
  readonly writes: RuleWrite[] = [];
  private readonly editions = new Map<string, number>();
  violation: Violation | null = null;
  objectsChecked = 0;
  /** Objects not patched where the rule's writer had been told it might not be (not a silent miss). */
  saidMisses = 0;
  private objects = 0;

  constructor(private readonly world: World) {}

  /** Runs user `u` until `until` (simulated ms since the epoch). */
  async run(u: number, until: number): Promise<void> {
    const { random } = this.world;
    while (Date.now() < until && !this.violation) {
      await sleep(random.between(0, 400));
      await this.act(u);
    }
  }

  /** The writes of `name` that have not ended. */
  inFlight(name: string): RuleWrite[] {
    return this.writes.filter((w) => w.name === name && w.end === undefined);
  }

  /** Rules in force: the last write of each name ended well and was not a delete, and nothing is on its way. */
  inForce(): RuleWrite[] {
    const out: RuleWrite[] = [];
    for (const name of this.world.scenario.ruleNames) {
      if (this.inFlight(name).length) continue;
      const done = this.writes.filter((w) => w.name === name && w.ok);
      const last = done.sort((a, b) => (a.end ?? 0) - (b.end ?? 0))[done.length - 1];
      if (last && last.op !== 'delete') out.push(last);
    }
    return out;
  }

  /** What user `u` does next: a write of one of the shared rules, and the kind the rule has now. */
  private plan(u: number): { write: RuleWrite; currentKind: string } {
    const { random, etcd, scenario } = this.world;
    const name = random.pick(scenario.ruleNames);
    const existing = NAMESPACES.map((ns) => etcd.get('modrules', ns, name)).find((o) => o);
    const meta = existing?.metadata as JsonObject | undefined;
    const spec = existing?.spec as JsonObject | undefined;
    const currentKind = String(
      ((spec?.match as JsonObject[] | undefined)?.[0] as JsonObject | undefined)?.matchValue ?? '',
    );
    // An edit (same kind), a move (another kind, maybe the same), or a delete; a create when it does not exist.
    const roll = random.next();
    const op = !existing ? 'create' : roll < 0.8 ? 'update' : 'delete';
    const namespace = meta ? String(meta.namespace) : random.pick(NAMESPACES);
    const kind = !existing || (roll >= 0.5 && roll < 0.8) ? random.pick(KINDS) : currentKind;
    const edition = (this.editions.get(name) ?? 0) + 1;
    this.editions.set(name, edition);
    return { write: { user: u, op, name, namespace, kind, edition, start: Date.now() }, currentKind };
  }

  private async act(u: number): Promise<void> {
    const { random } = this.world;
    const { write, currentKind } = this.plan(u);
    const { op, name, namespace, kind, edition } = write;
    const server = random.pick(this.world.servers);
    this.writes.push(write);
    const verb =
      op === 'delete'
        ? 'delete'
        : op === 'create'
          ? 'create'
          : kind === currentKind
            ? 'edit'
            : `move ${currentKind}->`;
    this.world.log(
      `user${u} ${verb} ${namespace}/${name}${op === 'delete' ? '' : ` kind=${kind} e${edition}`} via ${server.name} ...`,
    );
    const result = await this.world.writeRule(
      server,
      op,
      namespace,
      name,
      op === 'delete' ? undefined : ruleSpec(name, kind, edition),
    );
    write.end = Date.now();
    write.ok = result.ok;
    if (result.ok) {
      const m = result.object.metadata as JsonObject;
      write.uid = String(m.uid);
      write.generation = Number(m.generation);
      write.caveat = result.warnings?.find((w) => CAVEAT.test(w));
    }
    const how = result.ok
      ? `ok${op === 'delete' ? '' : ` gen ${write.generation}`}`
      : `failed ${result.status}: ${result.message.slice(0, 160)}`;
    this.world.log(
      `user${u} ... ${namespace}/${name} e${edition} ${how}${result.replica ? ` (admitted by ${result.replica})` : ''}`,
    );
    if (result.ok && op !== 'delete') {
      await sleep(random.between(0, 20));
      await this.writeObjectFor(u, write);
    }
  }

  /** Writes an object `write`'s rule must patch, and judges the answer. */
  private async writeObjectFor(u: number, write: RuleWrite): Promise<void> {
    const { random } = this.world;
    const server = random.pick(this.world.servers);
    const objectName = `o${++this.objects}`;
    const result = await this.world.writeObject(server, write.kind, write.namespace, objectName);
    if (!result) {
      this.world.log(
        `user${u} object ${write.namespace}/${objectName} via ${server.name}: API server down, not written`,
      );
      return;
    }
    const label = result.labels[`sim-${write.name}`];
    const applied = label
      ? this.writes.find((w) => w.name === write.name && w.ok && `e${w.edition}` === label)
      : undefined;
    const ok = !!applied && applied.uid === write.uid && (applied.generation ?? 0) >= (write.generation ?? 0);
    const where = result.sent
      ? `dragnet on ${result.replica ?? 'none'}${result.ignored ? ` (${result.ignored})` : ''}`
      : `NOT SENT by ${server.name}'s loaded configuration`;
    this.world.log(
      `user${u} object ${write.kind} ${write.namespace}/${objectName} via ${server.name}: ${where}, label ${label ?? 'none'}${ok ? '' : ' (rule not applied)'}`,
    );
    if (ok) {
      this.objectsChecked++;
      return;
    }
    // A delete or move of the same rule begun meanwhile may rightly win.
    const changed = this.writes.some(
      (w) =>
        w !== write &&
        w.name === write.name &&
        w.start >= write.start &&
        (w.op === 'delete' || w.kind !== write.kind),
    );
    if (changed) return;
    // Not silent: the rule's writer was told its rule might not be in force everywhere, and why.
    if (write.caveat) {
      this.saidMisses++;
      this.world.log(`  a miss the writer was told of: ${write.caveat.slice(0, 160)}`);
      return;
    }
    this.violation = {
      invariant: 'object-unpatched',
      message: `${write.kind} ${write.namespace}/${objectName} written through ${server.name} after ModRule ${write.namespace}/${write.name} e${write.edition} (gen ${write.generation}) returned was answered without it: ${where}, label ${label ?? 'none'}`,
    };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
