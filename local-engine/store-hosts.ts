// EDGEPLANE_ENGINE_PROCESSES=N (N > 1): the store shard Durable Objects (class StoreShard) spread
// over N "store host" workerd processes besides the front one, with the Worker and every Durable
// Object's code unchanged (docs/local-engine.md; way (d) of the notes on several workerd processes).
//
// - The front process runs the Worker and the objects that stay whole per cluster (the
//   controller manager, the scheduler, node tunnels, metrics: one each per cluster, and the
//   ones holding nodes' WebSockets), as with one process. Its STORE binding names a class of a
//   second, tiny Worker in the same process (the router, below) whose objects keep nothing:
//   each forwards every call to the object of the same id in one store host, picked by the
//   id (ids are hashes of names: the id's first 32 bits mod N), over workerd's debug port.
// - Each store host runs the same bundle with the same bindings; its StoreShard objects keep
//   their SQLite under the host's own directory. Its own bindings of every class go through
//   a router too: STORE to the owning host (a shard calling a shard), the others back to the
//   front. So every object of a class lives in exactly one process.
// - Ids are the same everywhere: every namespace of a class has the same unique key
//   (`edgeplane-StoreShard`, the one-process key), so an id made in the front names the same
//   object in its host, and one-process state keeps its names.
import type { WorkerOptions } from "miniflare";

/** the router Worker's name (its service is core:user:edgeplane-router) */
export const ROUTER = "edgeplane-router";

/** the class every store host keeps; every other class stays in the front process */
export const SPREAD_CLASS = "StoreShard";

/** workerd's service name of a Worker Miniflare runs */
const serviceOf = (workerName: string) => `core:user:${workerName}`;

/** where each class's objects live: debug port addresses, the owner by id among several */
export type Routes = Record<string, string[]>;

/**
 * The router Worker's module: one class per routed class, each a stand-in whose calls (RPC
 * methods, fetch, streams, WebSockets) go to the object of the same id in its owner process.
 */
export function routerModule(classNames: string[]): string {
  return `import { DurableObject } from "cloudflare:workers";
// the owner of an id among several processes: ids are hashes, so their first 32 bits spread evenly
const owner = (hosts, id) => hosts.length === 1 ? hosts[0] : hosts[parseInt(id.slice(0, 8), 16) % hosts.length];
function routed(className) {
  return class extends DurableObject {
    constructor(ctx, env) {
      super(ctx, env);
      const id = ctx.id.toString();
      const remote = env.DEBUG.connect(owner(env.ROUTES[className], id)).getActor(env.SERVICE, className, id);
      this.remote = remote;
      return new Proxy(this, {
        get(target, prop) {
          if (prop === "fetch") return (request) => remote.fetch(request);
          return Reflect.has(target, prop) ? Reflect.get(target, prop) : Reflect.get(remote, prop);
        },
      });
    }
    fetch(request) {
      return this.remote.fetch(request);
    }
  };
}
${classNames.map((c) => `export const ${c} = routed(${JSON.stringify(c)});`).join("\n")}
`;
}

type DurableObjectDesignator =
  | { className: string; scriptName?: string; useSQLite?: boolean; unsafeUniqueKey?: string }
  | string;

/** The Worker's durableObjects with `routed` classes bound to the router (same unique keys). */
function routeBindings(
  worker: WorkerOptions & { name: string },
  routed: (className: string) => boolean,
): Record<string, DurableObjectDesignator> {
  const out: Record<string, DurableObjectDesignator> = {};
  for (const [binding, d] of Object.entries(worker.durableObjects ?? {})) {
    const designator = (typeof d === "string" ? { className: d } : d) as Exclude<
      DurableObjectDesignator,
      string
    >;
    out[binding] = routed(designator.className)
      ? { ...designator, scriptName: ROUTER, unsafeUniqueKey: `${worker.name}-${designator.className}` }
      : designator;
  }
  return out;
}

function classesOf(worker: WorkerOptions): string[] {
  return Object.values((worker.durableObjects ?? {}) as Record<string, DurableObjectDesignator>).map((d) =>
    typeof d === "string" ? d : d.className,
  );
}

/** The router Worker, forwarding to `routes` over the debug port binding (debug-port-plugin.ts). */
function routerWorker(worker: WorkerOptions & { name: string }, routes: Routes): WorkerOptions {
  const classes = Object.keys(routes);
  return {
    name: ROUTER,
    compatibilityDate: worker.compatibilityDate,
    modules: [{ type: "ESModule", path: "router.mjs", contents: routerModule(classes) }],
    bindings: { ROUTES: routes, SERVICE: serviceOf(worker.name) },
    unsafeBindings: [
      {
        name: "DEBUG",
        type: "workerdDebugPort",
        plugin: {
          package: new URL("debug-port-plugin.ts", import.meta.url).pathname,
          name: "edgeplane-debug-port",
        },
        options: {},
      },
    ],
    // the stand-ins keep nothing: no storage of theirs anywhere
    unsafeEphemeralDurableObjects: true,
  } as WorkerOptions;
}

/** The front process's Workers: the Worker with STORE routed to the hosts, and the router. */
export function frontWorkers(worker: WorkerOptions & { name: string }, hosts: string[]): WorkerOptions[] {
  return [
    { ...worker, durableObjects: routeBindings(worker, (c) => c === SPREAD_CLASS) } as WorkerOptions,
    routerWorker(worker, { [SPREAD_CLASS]: hosts }),
  ];
}

/**
 * A store host's Workers: the Worker keeping StoreShard objects (unbound: its STORE goes to the
 * owner like every other binding), and a router to the hosts for StoreShard and to the front
 * for every other class.
 */
export function hostWorkers(
  worker: WorkerOptions & { name: string },
  front: string,
  hosts: string[],
): WorkerOptions[] {
  const routes: Routes = {};
  for (const c of classesOf(worker)) routes[c] = c === SPREAD_CLASS ? hosts : [front];
  const { unsafeDirectSockets: _sockets, ...rest } = worker as WorkerOptions & {
    unsafeDirectSockets?: unknown;
  };
  return [
    {
      ...rest,
      durableObjects: routeBindings(worker, () => true),
      additionalUnboundDurableObjects: [{ className: SPREAD_CLASS, useSQLite: true }],
    } as WorkerOptions,
    routerWorker(worker, routes),
  ];
}
