// A Miniflare plugin with one kind of binding: workerd's debug port client (`workerdDebugPort`),
// through which a Worker reaches a Durable Object in another workerd process by address
// (`env.X.connect("127.0.0.1:port").getActor(service, className, id)`). Miniflare gives that
// binding only to its own dev-registry proxy; a Worker asks for it with
//   unsafeBindings: [{ name, type: "workerdDebugPort", plugin: { package: <this file>, name }, options: {} }]
// and store-hosts.ts's router Worker does. Loaded by Miniflare itself (require.resolve of this
// path, then import: the engine host runs under tsx).
import { kVoid } from "miniflare";

export const DEBUG_PORT_PLUGIN = "edgeplane-debug-port";

interface UnsafeBinding {
  name: string;
}

export const plugins = {
  [DEBUG_PORT_PLUGIN]: {
    // Miniflare parses only its own plugins' options; these arrive as the unsafeBindings given
    options: undefined,
    getBindings(bindings: UnsafeBinding[] | undefined) {
      return (bindings ?? []).map((b) => ({ name: b.name, workerdDebugPort: kVoid }));
    },
    getNodeBindings() {
      return {};
    },
    getServices() {
      return [];
    },
  },
};
