// `edgelet join ...`: parses flags, starts the agent with the chosen runtime,
// and stops cleanly on SIGINT/SIGTERM.
import { onClusterGone } from "../lib/cluster-gone";
import { parseConfig, USAGE } from "./config";
import { startEdgelet } from "./edgelet";

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== "join") {
    console.error(
      command === "-h" || command === "--help" || !command ? USAGE : `unknown command ${command}\n${USAGE}`,
    );
    return command === "-h" || command === "--help" ? 0 : 2;
  }
  let cfg: ReturnType<typeof parseConfig>;
  try {
    cfg = parseConfig(rest);
  } catch (e) {
    console.error(`edgelet: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const log = (m: string) => console.error(`${new Date().toISOString()} edgelet[${cfg.nodeName}]: ${m}`);
  let stop: () => Promise<void>;
  if (cfg.runtime === "simulated") {
    // agent/simulated joins nodes named <prefix><index>: one node, "<name>-0"; a bootstrap
    // token is exchanged for that node's credential, renewed as a real node's is
    const { startSimulatedNodes } = await import("../simulated/simnodes");
    const { joinSimulatedNode } = await import("./simulated-join");
    const joined = await joinSimulatedNode(cfg, `${cfg.nodeName}-0`, log);
    const sim = await startSimulatedNodes({
      server: cfg.server,
      token: joined.token,
      count: 1,
      namePrefix: `${cfg.nodeName}-`,
      log,
    });
    joined.renew(sim);
    log(
      `RUNTIME: simulated (no containers run); node ${sim.nodes.join(", ")}, credentials from ${joined.source}`,
    );
    stop = async () => {
      await joined.stop();
      await sim.stop();
    };
  } else {
    const e = await startEdgelet(cfg, log);
    log(`RUNTIME: containerd at ${cfg.containerdSocket}; watching pods of node ${e.nodeName}`);
    stop = () => e.stop();
  }
  let code = 0;
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
    // its cluster was deleted (docs/clusters.md): stop its pods and exit, saying why
    onClusterGone((message) => {
      log(`leaving: ${message}`);
      code = 3;
      resolve();
    });
  });
  log(
    cfg.runtime === "containerd"
      ? "stopping (pods keep running; a restarted edgelet adopts them)"
      : "stopping",
  );
  await stop();
  return code;
}
