// `EDGEPLANE_HOSTS=N npm start`: N real nodes host-1..host-N instead of the one local node
// (local-engine/start.ts calls this once the control plane is up). Prints what it made and how to
// reach it; the returned stop removes it all (as does the launcher's death).
import { type Hosts, hostsUnavailable, startHosts } from "./hosts";

export async function launchHosts(server: { url: string; token: string }, count: number): Promise<Hosts> {
  const why = hostsUnavailable();
  if (why) throw new Error(`EDGEPLANE_HOSTS=${count} needs containerd set up as root: ${why}`);
  const backend = process.env.EDGEPLANE_HOSTS_BACKEND as Parameters<typeof startHosts>[0]["backend"];
  const subnets = Number(process.env.EDGEPLANE_HOSTS_SUBNETS ?? 1);
  const began = Date.now();
  const hosts = await startHosts({ count, server, backend, subnets, log: (m) => console.log(`hosts: ${m}`) });
  console.log(
    `*** ${count} real node(s) joined in ${((Date.now() - began) / 1000).toFixed(1)} s, each in its own network namespace with its own containerd (LAN ${hosts.lan.cidr}, the machine at ${hosts.lan.machineIP}) ***`,
  );
  for (const h of hosts.hosts)
    console.log(
      `  ${h.name}  InternalIP ${h.ip}  shell: nsenter --net=/run/netns/${h.netns} sh   logs: ${h.dir}/edgelet.log`,
    );
  return hosts;
}
