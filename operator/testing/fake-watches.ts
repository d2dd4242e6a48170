import { ServerResponse } from 'node:http';
import { JsonObject } from '../../util/json';
import { matches, parseSelector, Route, Selector } from './fake-resources';
import { FakeStore, HistoryEntry } from './fake-store';
import { sendJson } from './fake-http';

interface OpenWatch {
  route: Route;
  selector: Selector;
  res: ServerResponse;
}

function write(res: ServerResponse, type: string, object: JsonObject): void {
  if (!res.writableEnded) res.write(JSON.stringify({ type, object }) + '\n');
}

/** The fake API server's open watch streams: started from a list or from history, fed with every change. */
export class FakeWatches {
  private readonly open = new Set<OpenWatch>();

  /** Number of open watch streams. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Answers a watch request: replays what the client missed since its resourceVersion (or the whole list) and keeps
   * the stream open; an expired version is reported as an ERROR event or a 410 status.
   */
  start(
    store: FakeStore,
    route: Route,
    query: Record<string, string>,
    res: ServerResponse,
    expiredAs: 'event' | 'status',
  ): void {
    const from = query.resourceVersion ? Number(query.resourceVersion) : NaN;
    const selector = parseSelector(query);
    if (!Number.isNaN(from) && from !== 0 && from < store.compactedBefore - 1) {
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'Expired',
        code: 410,
        message: `too old resource version: ${from}`,
      };
      if (expiredAs === 'status') {
        sendJson(res, 410, status);
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ type: 'ERROR', object: status }) + '\n');
      }
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    const watch: OpenWatch = { route, selector, res };
    if (Number.isNaN(from) || from === 0) {
      for (const o of store.list(route.resource)) if (matches(o, route, selector)) write(res, 'ADDED', o);
    } else {
      for (const h of store.history) {
        if (h.rv > from && h.resource === route.resource && matches(h.object, route, selector))
          write(res, h.type, h.object);
      }
    }
    this.open.add(watch);
    const timeout = Number(query.timeoutSeconds ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : null;
    res.on('close', () => {
      if (timer) clearTimeout(timer);
      this.open.delete(watch);
    });
  }

  /** Sends a change to every open watch it concerns. */
  notify({ resource, type, object }: HistoryEntry): void {
    for (const w of this.open) {
      if (w.route.resource === resource && matches(object, w.route, w.selector)) write(w.res, type, object);
    }
  }

  /** Ends every open watch stream. */
  drop(): void {
    for (const w of this.open) w.res.destroy();
    this.open.clear();
  }
}
