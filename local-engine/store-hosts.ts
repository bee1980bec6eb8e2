// EDGEPLANE_ENGINE_PROCESSES=N (N > 1): the store shard Durable Objects (class StoreShard) spread
// over N "store host" workerd processes besides the front one, with the Worker and every Durable
// Object's code unchanged (docs/local-engine.md; way (d) of the notes on several workerd processes).
//
// - The front process runs the Worker and the objects that stay whole per cluster (the
//   controller manager, the scheduler, node tunnels, metrics: one each per cluster, and the
//   ones holding nodes' WebSockets), as with one process. Its STORE binding is a namespace of
//   our own (a wrapped binding, below): ids come from a real namespace of the same unique key,
//   and `get(id)` is a stub of the object of that id in its owner, one store host picked by the
//   id (ids are hashes of names: the id's first 32 bits mod N), reached over workerd's debug
//   port (`connect(address).getActor(service, class, id)`). Calls go straight from the caller
//   to the owner: no stand-in object in between (streams through a stand-in lost their start).
// - Each store host runs the same bundle with the same bindings; its StoreShard objects keep
//   their SQLite under the host's own directory. Its own bindings of every class are such
//   namespaces too: STORE to the owning host (a shard calling a shard), the others back to the
//   front. So every object of a class lives in exactly one process.
// - A virtual cluster's shards stay in the front process (docs/clusters.md): each object reads
//   its cluster off its own name (ctx.id.name), and an id sent over the debug port carries no
//   name, so they are made there by name. The root cluster's shards are the ones spread.
// - Ids are the same everywhere: every namespace of a class has the same unique key
//   (`edgeplane-StoreShard`, the one-process key), so an id made anywhere names the same
//   object in its owner, and one-process state keeps its names.
import type { WorkerOptions } from "miniflare";

/** the Worker holding the id namespaces (kept in memory, never instantiated) */
export const ROUTER = "edgeplane-router";

/** the class every store host keeps; every other class stays in the front process */
export const SPREAD_CLASS = "StoreShard";

/** workerd's service name of a Worker Miniflare runs */
const serviceOf = (workerName: string) => `core:user:${workerName}`;

/** the wrapped binding's Worker of one routed class */
const routeOf = (className: string) => `edgeplane-route-${className}`;

/** The router Worker's module: the classes whose namespaces make ids (no object is ever made). */
function routerModule(classNames: string[]): string {
  return `import { DurableObject } from "cloudflare:workers";
${classNames.map((c) => `export class ${c} extends DurableObject {}`).join("\n")}
`;
}

/**
 * A routed namespace (a wrapped binding's module): ids from IDS, a real namespace of the class's
 * unique key; get(id) the object of that id in its owner among HOSTS, over the debug port.
 */
const ROUTE_MODULE = `// the owner of an id among several processes: ids are hashes, so their first 32 bits spread evenly
const owner = (hosts, id) => (hosts.length === 1 ? hosts[0] : hosts[parseInt(id.slice(0, 8), 16) % hosts.length]);
export default function (env) {
  const { IDS, DEBUG, HOSTS, SERVICE, CLASS, LOCAL, CHILD_PREFIX } = env;
  const get = (id) => {
    // a virtual cluster's object stays here, made by name: it reads its cluster off its name,
    // which an id sent over the debug port does not carry
    if (LOCAL && id.name?.startsWith(CHILD_PREFIX)) return LOCAL.get(LOCAL.idFromName(id.name));
    const hex = id.toString();
    return DEBUG.connect(owner(HOSTS, hex)).getActor(SERVICE, CLASS, hex);
  };
  return {
    idFromName: (name) => IDS.idFromName(name),
    idFromString: (hex) => IDS.idFromString(hex),
    newUniqueId: (options) => IDS.newUniqueId(options),
    get,
    getByName: (name) => get(IDS.idFromName(name)),
  };
}
`;

type DurableObjectDesignator =
  | { className: string; scriptName?: string; useSQLite?: boolean; unsafeUniqueKey?: string }
  | string;

const designatorsOf = (worker: WorkerOptions) =>
  Object.entries((worker.durableObjects ?? {}) as Record<string, DurableObjectDesignator>).map(
    ([binding, d]) => [binding, typeof d === "string" ? { className: d } : d] as const,
  );

const debugPortBinding = {
  name: "DEBUG",
  type: "workerdDebugPort",
  plugin: {
    package: new URL("debug-port-plugin.ts", import.meta.url).pathname,
    name: "edgeplane-debug-port",
  },
  options: {},
};

/**
 * The Worker with each class that `owners` names bound to a routed namespace instead, and the
 * Workers that takes: the router (the id namespaces) and one wrapped binding per routed class.
 * `keepChildren`: the classes whose objects of virtual clusters stay in this process.
 */
function routed(
  worker: WorkerOptions & { name: string },
  owners: Record<string, string[]>,
  keepChildren: string[] = [],
): WorkerOptions[] {
  const root = String(
    (worker.bindings as Record<string, unknown> | undefined)?.EDGEPLANE_CLUSTER ?? "default",
  );
  const durableObjects: Record<string, DurableObjectDesignator> = {};
  const wrappedBindings: Record<string, { scriptName: string }> = {};
  for (const [binding, d] of designatorsOf(worker)) {
    if (owners[d.className]) wrappedBindings[binding] = { scriptName: routeOf(d.className) };
    else durableObjects[binding] = d;
  }
  const classes = Object.keys(owners);
  const routes = classes.map(
    (c) =>
      ({
        name: routeOf(c),
        modules: [{ type: "ESModule", path: "route.mjs", contents: ROUTE_MODULE }],
        bindings: { HOSTS: owners[c], SERVICE: serviceOf(worker.name), CLASS: c, CHILD_PREFIX: `${root}@` },
        durableObjects: {
          IDS: { className: c, scriptName: ROUTER, unsafeUniqueKey: `${worker.name}-${c}`, useSQLite: true },
          // this process's own class (the one-process unique key), for virtual clusters' objects
          ...(keepChildren.includes(c)
            ? { LOCAL: { className: c, scriptName: worker.name, useSQLite: true } }
            : {}),
        },
        unsafeBindings: [debugPortBinding],
      }) as WorkerOptions,
  );
  return [
    {
      ...worker,
      durableObjects,
      wrappedBindings: { ...worker.wrappedBindings, ...wrappedBindings },
    } as WorkerOptions,
    {
      name: ROUTER,
      compatibilityDate: worker.compatibilityDate,
      modules: [{ type: "ESModule", path: "router.mjs", contents: routerModule(classes) }],
      // its namespaces make ids only: no storage of theirs anywhere
      unsafeEphemeralDurableObjects: true,
    } as WorkerOptions,
    ...routes,
  ];
}

/** The front process's Workers: the Worker with STORE routed to the hosts, and what that takes. */
export function frontWorkers(worker: WorkerOptions & { name: string }, hosts: string[]): WorkerOptions[] {
  return routed(worker, { [SPREAD_CLASS]: hosts }, [SPREAD_CLASS]);
}

/**
 * A store host's Workers: the Worker keeping StoreShard objects (unbound: its STORE goes to the
 * owner like every other binding) with StoreShard routed to the hosts and every other class
 * to the front, and what that takes.
 */
export function hostWorkers(
  worker: WorkerOptions & { name: string },
  front: string,
  hosts: string[],
): WorkerOptions[] {
  const owners: Record<string, string[]> = {};
  for (const [, d] of designatorsOf(worker))
    owners[d.className] = d.className === SPREAD_CLASS ? hosts : [front];
  const { unsafeDirectSockets: _sockets, ...rest } = worker as WorkerOptions & {
    unsafeDirectSockets?: unknown;
  };
  const [main, ...others] = routed(rest as WorkerOptions & { name: string }, owners);
  return [
    { ...main, additionalUnboundDurableObjects: [{ className: SPREAD_CLASS, useSQLite: true }] },
    ...others,
  ];
}
