// A CustomResourceDefinition manifest for the CRD suites: the wrapper every one of them writes
// the same way, named <plural>.<group>; the versions are the suite's own.

export function crdManifest(
  group: string,
  names: { plural: string; kind: string; singular?: string; shortNames?: string[] },
  versions: Record<string, unknown>[],
  scope: "Namespaced" | "Cluster" = "Namespaced",
) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${names.plural}.${group}` },
    spec: { group, scope, names, versions },
  };
}
