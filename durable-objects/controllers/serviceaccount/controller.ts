// The service account controller (upstream pkg/controller/serviceaccount): every active
// namespace has a "default" ServiceAccount, recreated when deleted.
import { lookupGVR } from "../../../api/registry";
import { isAlreadyExists, isNamespaceTerminating, isNotFound } from "../lib/api-errors";
import { isNamespaceActive } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const SA = lookupGVR("", "v1", "serviceaccounts")!;
export const DEFAULT_SERVICE_ACCOUNTS = ["default"];

export async function syncServiceAccounts(ns: string, ctx: ControllerContext): Promise<void> {
  const nsObj = ctx.informers.get("/namespaces", ns);
  if (!isNamespaceActive(nsObj)) return;
  for (const name of DEFAULT_SERVICE_ACCOUNTS) {
    if (ctx.informers.get("/serviceaccounts", `${ns}/${name}`)) continue;
    try {
      await ctx.api.create(SA, {
        apiVersion: "v1",
        kind: "ServiceAccount",
        metadata: { name, namespace: ns },
      });
    } catch (e) {
      // exists already, namespace gone or terminating meanwhile: nothing to do
      if (isAlreadyExists(e) || isNotFound(e)) continue;
      if (isNamespaceTerminating(e)) continue;
      throw e;
    }
  }
}

export const serviceAccountController: Controller = {
  name: "serviceaccount-controller",
  workers: 2,
  watches: {
    "/namespaces": (ns) => [ns.metadata.name!],
    "/serviceaccounts": (sa, _old, ctx) =>
      DEFAULT_SERVICE_ACCOUNTS.includes(sa.metadata.name!) &&
      !ctx.informers.get("/serviceaccounts", `${sa.metadata.namespace}/${sa.metadata.name}`)
        ? [sa.metadata.namespace!]
        : [],
  },
  resync: (ctx) => ctx.informers.keys("/namespaces"),
  sync: syncServiceAccounts,
};
