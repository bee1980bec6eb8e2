// Used by scripts/setup-containerd.sh: waits until the private containerd's
// CRI service says RuntimeReady and NetworkReady, then makes sure the given
// images (the sandbox/pause image first) are present, pulling them if not.
//
//   node --import tsx scripts/containerd/cri-ready.ts <endpoint> <timeout-ms> [image[#digest]...]
//
// With `#sha256:...` (the manifest digest in the registry) an image that is
// present under its tag but with other content is pulled again.
// Exit code 0 when ready and all images present; prints one line per step.

import { CriClient, notReadyConditions } from "../../agent/cri/client";

async function main(): Promise<number> {
  const [endpoint, timeoutArg, ...images] = process.argv.slice(2);
  if (!endpoint || !timeoutArg) {
    console.error("usage: cri-ready.ts <endpoint> <timeout-ms> [image...]");
    return 2;
  }
  const client = new CriClient({ endpoint, timeoutMs: 30_000, pullTimeoutMs: 120_000 });
  try {
    const started = Date.now();
    const status = await client.waitReady(Number(timeoutArg));
    if (notReadyConditions(status).length > 0) return 1;
    const version = await client.version();
    console.log(
      `cri: ${version.runtime_name} ${version.runtime_version} (${version.runtime_api_version}) ready in ${Date.now() - started} ms`,
    );
    for (const arg of images) {
      const [image = arg, digest] = arg.split("#");
      const present = await client.imageStatus(image);
      const repo = image.replace(/:[^:/]+$/, "");
      const current = !digest || present.image?.repo_digests.includes(`${repo}@${digest}`);
      if (present.image && current) {
        console.log(`cri: image ${image} present (${present.image.id})`);
        continue;
      }
      const t0 = Date.now();
      const ref = await client.pullImage(image);
      console.log(`cri: pulled ${image} -> ${ref} in ${Date.now() - t0} ms`);
    }
    return 0;
  } catch (err) {
    console.error(`cri: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    client.close();
  }
}

process.exitCode = await main();
